import type { RunEvent } from "../../contract/events.js";
import type { Lease, RunStore } from "../../store/types.js";

/** How a driver waits for a lease another process holds. */
export type LeaseWait = { waitMs?: number; signal?: AbortSignal };

/**
 * Where a stored run's events go before its reader sees them, under the run's lease: the
 * durability layer's `EventWriter`, given to the run by whoever starts it. One sink serves a
 * root run and its child runs, so the reader sees every event in the order it was emitted.
 */
export interface EventSink {
  readonly store: RunStore | undefined;
  /** True while the run waits for its store: a stopped run that does not end is held by the store. */
  readonly waitingOnStore: boolean;
  /** Why the store stopped taking events, once it did: nothing after that reached the reader. */
  readonly failure: Error | undefined;
  write(event: RunEvent): void;
  /** Resolves once every event written so far is stored (`undefined` when nothing needs waiting for). */
  flushed(): Promise<void> | undefined;
  /**
   * Runs a store operation the run needs before it can store anything (a read of its session,
   * of its log), retrying a store that fails for a while as appends are retried (`storeWaitMs`),
   * until `signal` aborts.
   */
  whileStoreFails<T>(what: string, attempt: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** Takes the run's lease and keeps it renewed until `release`; resolves with the lease taken. */
  acquire(runId: string, wait?: LeaseWait): Promise<Lease | undefined>;
  release(runId: string): Promise<void>;
}
