import dns from "node:dns";
import net from "node:net";
import { Agent, buildConnector } from "undici";
import type { AddressPolicy } from "./address-policy.js";

/** The shape of `dns.lookup` as `net.connect` calls it. Inject one to test or to use split-horizon DNS. */
export type LookupFunction = (
  hostname: string,
  options: dns.LookupOptions,
  callback: (
    error: NodeJS.ErrnoException | null,
    address: string | dns.LookupAddress[],
    family?: number,
  ) => void,
) => void;

export interface GuardedDispatcherOptions {
  policy: AddressPolicy;
  /** DNS resolution; `dns.lookup` by default. */
  lookup?: LookupFunction | undefined;
  connectTimeoutMs: number;
}

/**
 * An undici dispatcher that checks every connection it opens, at connect time: an IP
 * literal before the socket is created, a host name through the DNS answer the socket will
 * actually use. Checking the answer that is used (rather than resolving once to validate and
 * again to connect) is what closes DNS rebinding, and checking literals closes the hole a
 * lookup hook alone leaves (`http://2130706433/` never calls it).
 */
export function createGuardedDispatcher(options: GuardedDispatcherOptions): Agent {
  const { policy } = options;
  const resolve: LookupFunction = options.lookup ?? (dns.lookup as unknown as LookupFunction);

  const guardedLookup: LookupFunction = (hostname, lookupOptions, callback) => {
    resolve(hostname, { ...lookupOptions, all: true }, (error, result) => {
      if (error) return callback(error, "");
      const addresses: dns.LookupAddress[] = Array.isArray(result)
        ? result
        : [{ address: result, family: net.isIP(result) }];
      if (addresses.length === 0) return callback(notFound(hostname), "");
      try {
        // Every answer is checked, not only the first: the socket may try them all.
        for (const { address } of addresses) policy.check(hostname, address);
      } catch (blocked) {
        return callback(blocked as NodeJS.ErrnoException, "");
      }
      if (lookupOptions.all) return callback(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };

  const connect = buildConnector({ timeout: options.connectTimeoutMs, lookup: guardedLookup } as any);
  return new Agent({
    connect(connectOptions, callback) {
      if (net.isIP(connectOptions.hostname)) {
        try {
          policy.check(connectOptions.hostname, connectOptions.hostname);
        } catch (blocked) {
          return callback(blocked as Error, null);
        }
      }
      return connect(connectOptions, callback);
    },
  });
}

function notFound(hostname: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
  error.code = "ENOTFOUND";
  return error;
}
