/**
 * Errors of the Anthropic Messages API. HTTP error responses are read by
 * `../error-responses.ts`; this file handles an `error` event inside a 200 stream.
 */
import { ProviderError } from "../../errors.js";
import { describeErrorValue } from "../error-responses.js";

/** Error types that say the service, not the request, failed: worth another attempt. */
const RETRYABLE_TYPES = new Set(["overloaded_error", "api_error", "rate_limit_error", "timeout_error"]);

/**
 * `event: error` mid-stream (`{ type: "error", error: { type: "overloaded_error", … } }`).
 */
export function anthropicStreamError(value: unknown): ProviderError {
  const described = describeErrorValue(value) ?? { message: JSON.stringify(value) };
  const type = described.type;
  return new ProviderError(`anthropic: ${type ? `${type}: ` : ""}${described.message}`, {
    provider: "anthropic",
    retryable: type === undefined || RETRYABLE_TYPES.has(type),
    ...(type ? { type } : {}),
  });
}
