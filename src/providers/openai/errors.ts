/**
 * Errors of the Chat Completions API. HTTP error responses are read by
 * `../error-responses.ts`; this file handles an error that arrives inside a 200 stream.
 */
import { ProviderError } from "../../errors.js";
import { describeErrorValue } from "../error-responses.js";

/**
 * An `{ error: … }` chunk in the stream: the server failing mid-answer. Worth another try
 * unless it says the request itself is wrong or the content was filtered.
 */
export function chatStreamError(provider: string, value: unknown): ProviderError {
  const described = describeErrorValue(value) ?? { message: JSON.stringify(value) };
  const record = value !== null && typeof value === "object" ? (value as Record<string, unknown>) : undefined;
  const inner =
    record?.error !== null && typeof record?.error === "object"
      ? (record.error as Record<string, unknown>)
      : undefined;
  const code = record?.code ?? inner?.code;
  const type = described.type;
  const retryable = !(type?.includes("invalid_request") || type?.includes("content_filter") || code === 400);
  return new ProviderError(`${provider}: ${type ? `${type}: ` : ""}${described.message}`, {
    provider,
    retryable,
    ...(type ? { type } : {}),
    ...(described.code ? { code: described.code } : {}),
  });
}
