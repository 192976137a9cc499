/**
 * Errors from an AI SDK model as `ProviderError`s. The AI SDK's `APICallError` carries the
 * status, response headers and whether a retry may help; it is read by shape, so the AI SDK
 * stays an optional dependency that is never loaded by Quiver itself.
 */
import { ProviderError } from "../../errors.js";
import { retryAfterMs, withRetryAfter } from "../retry.js";

type ApiCallErrorShape = {
  message: string;
  statusCode?: number;
  isRetryable?: boolean;
  responseHeaders?: Record<string, string>;
  data?: unknown;
};

/** The AI SDK's errors for a chunk it could not read (by name: the AI SDK is never imported here). */
const MALFORMED_CHUNK = new Set(["AI_JSONParseError", "AI_TypeValidationError"]);

function looksLikeApiCallError(error: unknown): error is ApiCallErrorShape {
  return error instanceof Error && ("statusCode" in error || "isRetryable" in error);
}

/** The error an AI SDK model threw (or sent as an `error` part), as a `ProviderError`. */
export function providerErrorFrom(provider: string, error: unknown): ProviderError {
  if (error instanceof ProviderError) return error;
  if (looksLikeApiCallError(error)) {
    const data = error.data as { error?: { type?: unknown; code?: unknown } } | undefined;
    const type = [data?.error?.type, data?.error?.code].find((v) => typeof v === "string") as
      | string
      | undefined;
    const code = typeof data?.error?.code === "string" ? data.error.code : undefined;
    const status = error.statusCode;
    const wrapped = new ProviderError(
      `${provider}: ${status !== undefined ? `HTTP ${status}: ` : ""}${error.message}`,
      {
        provider,
        retryable: error.isRetryable ?? false,
        cause: error,
        ...(status !== undefined ? { status } : {}),
        ...(type ? { type } : {}),
        ...(code ? { code } : {}),
      },
    );
    return withRetryAfter(
      wrapped,
      error.responseHeaders ? retryAfterMs(new Headers(error.responseHeaders)) : undefined,
    );
  }
  const message =
    error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error);
  // A stream chunk the AI SDK provider could not parse (its JSON or its shape): retried, as
  // Quiver's own providers retry a malformed chunk.
  if (error instanceof Error && MALFORMED_CHUNK.has(error.name)) {
    return new ProviderError(`${provider}: malformed stream chunk: ${message}`, {
      provider,
      type: "malformed_chunk",
      retryable: true,
      cause: error,
    });
  }
  return new ProviderError(`${provider}: ${message}`, { provider, retryable: false, cause: error });
}
