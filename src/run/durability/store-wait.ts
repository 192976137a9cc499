/**
 * How a run waits for a store that fails for a while (a database restarting, a full disk being
 * cleared): one policy for its appends, its lease and the reads its start needs.
 */
import { UserError } from "../../errors.js";
import { isTransientFailure } from "../../store/transient.js";
import { StoreError } from "../../store/types.js";

/** The first pause before trying a failing store again; each next pause doubles, up to `LONGEST_PAUSE_MS`. */
export const FIRST_PAUSE_MS = 100;
export const LONGEST_PAUSE_MS = 2_000;

/** The pause after `pause`. */
export function nextPause(pause: number): number {
  return Math.min(pause * 2, LONGEST_PAUSE_MS);
}

/**
 * True for a failure of the store's surroundings, which may pass (a lost or refused connection,
 * a timeout, a full disk, a busy lock): never a `LeaseConflict`, a damaged row or a refusal.
 */
export function isRetryable(error: unknown): boolean {
  if (error instanceof StoreError) return error.retryable;
  return !(error instanceof UserError) && isTransientFailure(error);
}

/**
 * Runs `attempt`, and again after a retryable failure, with growing pauses, until it succeeds or
 * `waitMs` has passed since the first failed attempt was sent: then, or when `signal` aborts, the
 * failure is thrown as a retryable `StoreError` that says how long the store was waited for. A
 * failure that is not retryable is thrown at once, as it is.
 *
 * @example
 * const events = await whileStoreFails(() => store.read(runId), { waitMs: 20_000, what: `reading run ${runId}`, runId });
 */
export async function whileStoreFails<T>(
  attempt: () => Promise<T>,
  { waitMs, signal, what, runId }: { waitMs: number; signal?: AbortSignal; what: string; runId?: string },
): Promise<T> {
  let giveUpAt: number | undefined;
  let pause = FIRST_PAUSE_MS;
  for (;;) {
    const sent = Date.now();
    try {
      return await attempt();
    } catch (error) {
      if (!isRetryable(error)) throw error;
      // Counted from when the store was asked, not from when it gave up (a frozen database
      // answers only at its own timeout), as an append's wait is.
      giveUpAt ??= sent + waitMs;
      const left = giveUpAt - Date.now();
      if (left <= 0 || signal?.aborted) throw gaveUp(error, what, runId, waitMs, signal);
      await pauseFor(Math.min(pause, left), signal);
      pause = nextPause(pause);
      if (signal?.aborted) throw gaveUp(error, what, runId, waitMs, signal);
    }
  }
}

function gaveUp(
  error: unknown,
  what: string,
  runId: string | undefined,
  waitMs: number,
  signal: AbortSignal | undefined,
): StoreError {
  // A store's own error already names what it was doing.
  const said = error instanceof StoreError ? error.message : `${what} failed: ${describe(error)}`;
  const why = signal?.aborted
    ? "the run was stopped while it waited for the store"
    : `the store did not answer within the ${waitMs} ms (storeWaitMs) the run waits for it`;
  const id = runId ?? (error instanceof StoreError ? error.runId : undefined);
  return new StoreError(`${said} (${why})`, {
    ...(id !== undefined && { runId: id }),
    cause: error,
    retryable: true,
  });
}

/** A thrown value's message, without trusting it (a getter may throw). */
function describe(error: unknown): string {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return "an error that cannot be described";
  }
}

/** Resolves after `ms`, or early when `signal` aborts. */
export function pauseFor(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
