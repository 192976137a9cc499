import type { AddressPolicyOptions } from "../builtin-tools/address-policy.js";

/**
 * `createServer({ a2a: { push } })`: where A2A webhooks may point, and how long a delivery may
 * take. Apart from the code that delivers, so the server's public types never name the optional
 * A2A SDK's.
 */
export type A2aPushOptions = AddressPolicyOptions & {
  /** One delivery attempt's limit. Default 10,000 ms. */
  timeoutMs?: number;
  /** Attempts per notification (a failed or non-2xx delivery is tried again, 1 s, 2 s… apart). Default 3. */
  attempts?: number;
};
