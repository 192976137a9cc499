/**
 * When and how long to wait before trying a failed model request again.
 */
import type { ProviderError } from "../errors.js";

/** Exponential backoff between attempts. Defaults: 500 ms, ×2, at most 8 s, with jitter. */
export type RetryBackoff = { initialMs?: number; factor?: number; maxMs?: number; jitter?: boolean };

export const DEFAULT_MAX_RETRIES = 2;
/**
 * The longest server-requested wait (`Retry-After`) Quiver honours. A server asking for
 * more than this (an exhausted quota, typically) fails the request at once: sleeping an hour
 * inside an agent run helps nobody, and retrying sooner than asked is certain to fail again.
 */
export const DEFAULT_MAX_RETRY_AFTER_MS = 60_000;

/** HTTP statuses worth retrying: timeout, conflict, rate limit, and every server error. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * The wait a response asks for, in ms: `retry-after-ms` (OpenAI) first, then `Retry-After`
 * as seconds or as an HTTP date. `undefined` when absent or unreadable.
 */
export function retryAfterMs(headers: Headers, now = Date.now()): number | undefined {
  const ms = headers.get("retry-after-ms");
  if (ms !== null && ms.trim() !== "") {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const after = headers.get("retry-after");
  if (after === null || after.trim() === "") return undefined;
  const seconds = Number(after);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const date = Date.parse(after);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** The server-requested wait of a ProviderError built from an HTTP response, if any. */
const requestedWaits = new WeakMap<ProviderError, number>();

/** Remembers the wait the server asked for alongside the error (read by `retryDelayMs`). */
export function withRetryAfter(error: ProviderError, waitMs: number | undefined): ProviderError {
  if (waitMs !== undefined) requestedWaits.set(error, waitMs);
  return error;
}

/** The wait the server asked for with `error`, if it asked. */
export function requestedWaitMs(error: ProviderError): number | undefined {
  return requestedWaits.get(error);
}

/**
 * How long to wait before attempt `attempt + 1` (attempt 0 is the first retry), or
 * `undefined` when the server asked for a wait longer than `maxRetryAfterMs`.
 */
export function retryDelayMs(
  error: ProviderError,
  attempt: number,
  backoff: RetryBackoff = {},
  maxRetryAfterMs = DEFAULT_MAX_RETRY_AFTER_MS,
): number | undefined {
  const requested = requestedWaits.get(error);
  if (requested !== undefined) return requested <= maxRetryAfterMs ? requested : undefined;
  const initial = backoff.initialMs ?? 500;
  const factor = backoff.factor ?? 2;
  const max = backoff.maxMs ?? 8_000;
  const base = Math.min(max, initial * factor ** attempt);
  // Jitter spreads the retries of many clients hit by the same outage over [base/2, base].
  return backoff.jitter === false ? base : base * (0.5 + Math.random() * 0.5);
}
