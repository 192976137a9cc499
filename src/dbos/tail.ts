/**
 * Following a run's log from any process: `LISTEN` on the store's events channel (every
 * committed append notifies it), then read by seq. Notices only wake the reader; the log is
 * read from the store, so a missed notice costs at most one fallback poll.
 */
import { sleep } from "../abort.js";
import type { RunEvent } from "../contract/events.js";
import type { RunStore } from "../store/types.js";
import { listen } from "./listen.js";
import type { DurableRunsPool } from "./pool.js";

/** What `events()` takes. */
export type TailOptions = {
  /** Only events after this seq (default 0: from the start). Pass the last seq you saw to reconnect. */
  afterSeq?: number;
  /** Stops the iteration (it returns; nothing throws). */
  signal?: AbortSignal;
  /** Read the log this often even without a notice. Default 1,000 ms. */
  pollMs?: number;
};

/** Events that stop a run for now: it completed, failed or parked for a decision. */
const STOPS = new Set<RunEvent["type"]>(["run_completed", "run_failed", "run_parked"]);

export async function* tailEvents(
  store: RunStore & { eventsChannel: string },
  pool: DurableRunsPool,
  runId: string,
  options: TailOptions = {},
): AsyncGenerator<RunEvent, void, undefined> {
  let after = options.afterSeq ?? 0;
  const pollMs = options.pollMs ?? 1_000;
  const { signal } = options;
  let wake: (() => void) | undefined;
  const onPayload = (payload: string) => {
    try {
      const { runId: noticed, lastSeq } = JSON.parse(payload) as { runId: string; lastSeq: number };
      if (noticed === runId && lastSeq > after) wake?.();
    } catch {}
  };
  // Listening starts before the first read, so nothing committed in between is missed.
  const listener = await listen(pool, store.eventsChannel, onPayload);
  const onAbort = () => wake?.();
  signal?.addEventListener("abort", onAbort, { once: true });
  let broken = false;
  try {
    while (!signal?.aborted) {
      const woken = new Promise<void>((resolve) => {
        wake = resolve;
      });
      const events = await store.read(runId, after);
      for (const event of events) {
        after = event.seq;
        yield event;
        if (STOPS.has(event.type)) return;
      }
      if (signal?.aborted) return;
      await Promise.race([woken, sleep(pollMs)]);
    }
  } catch (error) {
    broken = true;
    throw error;
  } finally {
    signal?.removeEventListener("abort", onAbort);
    await listener.close(broken);
  }
}
