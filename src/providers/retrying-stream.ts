/**
 * The retry loop every provider shares: run an attempt, pass its events on, and when it
 * fails retryably, wait (backoff, or what the server asked for) and run another, emitting
 * `reset` first if the failed attempt had already produced output.
 */

import { sleep } from "../abort.js";
import { ProviderError } from "../errors.js";
import type { ModelStreamEvent } from "../model/types.js";
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
 * `retryable` flag. Aborting `signal` ends everything with an `aborted` ProviderError.
 *
 * @example
 * yield* retryingStream(settings, request.signal, () => oneAttempt(request));
 */
export async function* retryingStream(
  settings: RetrySettings,
  signal: AbortSignal | undefined,
  attempt: () => AsyncIterable<ModelStreamEvent>,
): AsyncGenerator<ModelStreamEvent> {
  const { provider } = settings;
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
      const delay = retryDelayMs(error, attemptNumber, settings.retryBackoff, settings.maxRetryAfterMs);
      if (delay === undefined) throw waitRefused(error, settings.maxRetryAfterMs);
      if (producedOutput) yield { type: "reset", reason: `retrying after: ${error.message}` };
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
function waitRefused(error: ProviderError, maxRetryAfterMs: number): ProviderError {
  const seconds = Math.ceil((requestedWaitMs(error) ?? 0) / 1000);
  return new ProviderError(
    `${error.message} (the server asked to retry after ${seconds} s, longer than maxRetryAfterMs ${maxRetryAfterMs} ms: not retried)`,
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
