/**
 * The retry loop every provider shares: run an attempt, pass its events on, and when it
 * fails retryably, wait (backoff, or what the server asked for) and run another, emitting
 * `reset` first if the failed attempt had already produced output.
 */

import { sleep } from "../abort.js";
import { ProviderError } from "../errors.js";
import { FALLBACK_WAIT_MS } from "../model/fallback.js";
import type { ModelRequest, ModelStreamEvent } from "../model/types.js";
import { abortedError } from "./http-stream.js";
import { type RetryBackoff, requestedWaitMs, retryDelayMs } from "./retry.js";

export type RetrySettings = {
  provider: string;
  maxRetries: number;
  retryBackoff: RetryBackoff;
  maxRetryAfterMs: number;
};

/**
 * Streams `attempt()` until one succeeds or a failure is final. An attempt signals the end
 * of its output with the events it yields; any `ProviderError` it throws decides by its
 * `retryable` flag. Aborting the request's `signal` ends everything with an `aborted`
 * ProviderError. With another model waiting (`fallbackWaiting`), a timed-out attempt is not
 * retried, nor one the server asks to wait more than `FALLBACK_WAIT_MS` for.
 *
 * @example
 * yield* retryingStream(settings, request, () => oneAttempt(request));
 */
export async function* retryingStream(
  settings: RetrySettings,
  request: Pick<ModelRequest, "signal" | "fallbackWaiting">,
  attempt: () => AsyncIterable<ModelStreamEvent>,
): AsyncGenerator<ModelStreamEvent> {
  const { provider } = settings;
  const { signal, fallbackWaiting } = request;
  const maxRetryAfterMs = fallbackWaiting
    ? Math.min(settings.maxRetryAfterMs, FALLBACK_WAIT_MS)
    : settings.maxRetryAfterMs;
  for (let attemptNumber = 0; ; attemptNumber++) {
    let producedOutput = false;
    try {
      for await (const event of attempt()) {
        if (event.type !== "usage" && event.type !== "finish") producedOutput = true;
        yield event;
      }
      return;
    } catch (caught) {
      if (signal?.aborted) throw abortedError(provider, signal);
      const error =
        caught instanceof ProviderError
          ? caught
          : new ProviderError(`${provider}: ${caught instanceof Error ? caught.message : String(caught)}`, {
              provider,
              cause: caught,
            });
      if (!error.retryable || attemptNumber >= settings.maxRetries) throw error;
      // A server that hung once will likely hang again: the model waiting answers instead.
      if (fallbackWaiting && (error.type === "timeout" || error.type === "idle_timeout")) throw error;
      const delay = retryDelayMs(error, attemptNumber, settings.retryBackoff, maxRetryAfterMs);
      if (delay === undefined) throw waitRefused(error, maxRetryAfterMs, fallbackWaiting === true);
      if (producedOutput) yield { type: "reset", reason: `retrying after: ${error.message}` };
      // Said as it happens: a turn that takes a minute because a server asked for patience shows
      // why (an event, a span event), not only in its duration.
      yield {
        type: "warning",
        code: "provider_retry",
        message: `${error.message}: retrying in ${delay} ms (retry ${attemptNumber + 1} of ${settings.maxRetries})`,
      };
      try {
        await sleep(delay, signal);
      } catch {
        throw abortedError(provider, signal);
      }
    }
  }
}

/**
 * The error of an attempt the server said to retry later than `maxRetryAfterMs` allows: it
 * says so, or the retries that did not happen would go unexplained.
 */
function waitRefused(error: ProviderError, maxRetryAfterMs: number, fallbackWaiting: boolean): ProviderError {
  const seconds = Math.ceil((requestedWaitMs(error) ?? 0) / 1000);
  const limit = fallbackWaiting
    ? "and another model is waiting to answer"
    : `longer than maxRetryAfterMs ${maxRetryAfterMs} ms`;
  return new ProviderError(
    `${error.message} (the server asked to retry after ${seconds} s, ${limit}: not retried)`,
    {
      provider: error.provider,
      retryable: error.retryable,
      cause: error,
      ...(error.status !== undefined && { status: error.status }),
      ...(error.type !== undefined && { type: error.type }),
      ...(error.code !== undefined && { code: error.code }),
    },
  );
}
