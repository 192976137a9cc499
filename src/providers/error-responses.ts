/**
 * Error responses of model APIs: OpenAI's `{ error: { message, type, code } }`, Anthropic's
 * `{ type: "error", error: { type, message } }`, and the looser shapes of compatible servers
 * (`{ error: "…" }`, `{ message }`, `{ detail }`).
 */
import { ProviderError } from "../errors.js";
import { isRetryableStatus, retryAfterMs, withRetryAfter } from "./retry.js";

/**
 * A `ProviderError` for a non-2xx response: status, the provider's error type and message,
 * retryable for 408/409/429/5xx unless the server's `x-should-retry` header says otherwise,
 * and the `Retry-After` wait remembered for the retry.
 */
export function errorFromResponse(
  provider: string,
  status: number,
  headers: Headers,
  body: string,
): ProviderError {
  const { message, type, code } = describeErrorBody(body);
  const shouldRetry = headers.get("x-should-retry");
  const retryable =
    shouldRetry === "true" ? true : shouldRetry === "false" ? false : isRetryableStatus(status);
  const text = `${provider}: HTTP ${status}${type ? ` ${type}` : ""}: ${message || "(no error message)"}`;
  const error = new ProviderError(text, {
    provider,
    status,
    retryable,
    ...(type ? { type } : {}),
    ...(code ? { code } : {}),
  });
  return withRetryAfter(error, retryAfterMs(headers));
}

/** What an error payload says: its message, its type, and its code when it has one. */
export type DescribedError = { message: string; type?: string; code?: string };

/** The message, type and code of an error payload, whichever common shape it has. */
export function describeErrorBody(body: string): DescribedError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { message: body.trim().slice(0, 500) };
  }
  return describeErrorValue(parsed) ?? { message: body.trim().slice(0, 500) };
}

export function describeErrorValue(value: unknown): DescribedError | undefined {
  if (typeof value === "string") return { message: value };
  // Google's OpenAI-compatible endpoint wraps its error in a one-element array.
  if (Array.isArray(value)) return value.length > 0 ? describeErrorValue(value[0]) : undefined;
  if (value === null || typeof value !== "object") return undefined;
  const record = value as Record<string, unknown>;
  if ("error" in record) {
    const inner = describeErrorValue(record.error);
    if (inner) return inner;
  }
  const message = [record.message, record.detail, record.error].find((v) => typeof v === "string") as
    | string
    | undefined;
  if (message === undefined) return undefined;
  const type = [record.type, record.code].find((v) => typeof v === "string" && v !== "") as
    | string
    | undefined;
  const described: DescribedError = { message };
  if (type !== undefined) described.type = type;
  // OpenAI's body has both: `type: "invalid_request_error", code: "model_not_found"`.
  if (typeof record.code === "string" && record.code !== "") described.code = record.code;
  return described;
}
