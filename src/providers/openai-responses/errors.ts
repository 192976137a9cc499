/**
 * Errors of the Responses API. HTTP error responses are read by `../error-responses.ts`;
 * this file handles `error` and `response.failed` events inside a 200 stream.
 */
import { ProviderError } from "../../errors.js";
import { OPENAI_RESPONSES } from "./request.js";

/** Codes that say the service, not the request, failed: worth another attempt. */
const RETRYABLE_CODES = new Set([
  "server_error",
  "rate_limit_exceeded",
  "server_is_overloaded",
  "slow_down",
  "internal_error",
]);

/** `{ code, message }` from an `error` event or a failed response's `error`. */
export function responsesStreamError(error: unknown): ProviderError {
  const record = error !== null && typeof error === "object" ? (error as Record<string, unknown>) : {};
  const code =
    typeof record.code === "string" ? record.code : typeof record.type === "string" ? record.type : undefined;
  const message = typeof record.message === "string" ? record.message : JSON.stringify(error);
  return new ProviderError(`${OPENAI_RESPONSES}: ${code ? `${code}: ` : ""}${message}`, {
    provider: OPENAI_RESPONSES,
    retryable: code === undefined || RETRYABLE_CODES.has(code),
    ...(code ? { type: code } : {}),
    ...(typeof record.code === "string" && record.code !== "" ? { code: record.code } : {}),
  });
}
