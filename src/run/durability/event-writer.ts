import { isAborted, raceAbort, timeoutSignal } from "../../abort.js";
import type { RunEvent } from "../../contract/events.js";
import { leaseOwner, ownerReleasedAll, ownerStopped } from "../../store/lease-owner.js";
import type { Lease, RunStore } from "../../store/types.js";
import { APPENDS_IN_CALL_ORDER, LeaseConflict, StoreError } from "../../store/types.js";
import type { EventQueue } from "../state/event-queue.js";
import type { EventSink, LeaseWait } from "../state/event-sink.js";
import { FIRST_PAUSE_MS, isRetryable, nextPause, pauseFor, whileStoreFails } from "./store-wait.js";

export { leaseOwner } from "../../store/lease-owner.js";

export const DEFAULT_LEASE_TTL_MS = 30_000;
/**
 * How long a run waits for a store that fails for a while (a database restarting, a full disk
 * being cleared) before it fails with `store_unavailable`: its appends are retried meanwhile,
 * and nothing it emitted reaches a reader before it is stored.
 */
export const DEFAULT_STORE_WAIT_MS = 20_000;

/**
 * Where a run's events go: straight to the reader, or — with a store — to the store first and
 * to the reader only once stored (write-ahead). One writer serves a root run and its child
 * runs, so the reader sees every event in the order it was emitted.
 *
 * Events are batched per event-loop turn, and sent sooner when the run must wait for them to be
 * stored (`flushed`, before a tool runs): a call's end, the next turn and the next call's start
 * go in one append (one transaction, or one round trip). A store that applies appends in call
 * order (`APPENDS_IN_CALL_ORDER`, a store that commits in groups) gets each batch at once,
 * without waiting for the previous one. Any other store gets one append at a time; what is
 * emitted while one is under way goes in the next.
 */
export class EventWriter implements EventSink {
  readonly store: RunStore | undefined;
  readonly #queue: EventQueue;
  readonly #leases = new Map<string, Lease>();
  readonly #leaseTtlMs: number;
  readonly #inCallOrder: boolean;
  #batch: RunEvent[] = [];
  #chain: Promise<void> = Promise.resolve();
  #scheduled = false;
  #failure: Error | undefined;
  #renewTimer: NodeJS.Timeout | undefined;
  readonly #onFailure: (error: Error) => void;

  readonly #storeWaitMs: number;

  constructor(
    queue: EventQueue,
    store: RunStore | undefined,
    onFailure: (error: Error) => void,
    leaseTtlMs = DEFAULT_LEASE_TTL_MS,
    storeWaitMs = DEFAULT_STORE_WAIT_MS,
  ) {
    this.#queue = queue;
    this.store = store;
    this.#onFailure = onFailure;
    this.#leaseTtlMs = leaseTtlMs;
    this.#storeWaitMs = storeWaitMs;
    this.#inCallOrder =
      (store as { [APPENDS_IN_CALL_ORDER]?: boolean } | undefined)?.[APPENDS_IN_CALL_ORDER] === true;
  }

  /** Store operations the run is waiting for right now (appends, the final release). */
  #storeWaits = 0;

  /** True while the run waits for its store: a stopped run that does not end is held by the store. */
  get waitingOnStore(): boolean {
    return this.#storeWaits > 0;
  }

  /** The error that stopped the store, if one did. */
  get failure(): Error | undefined {
    return this.#failure;
  }

  write(event: RunEvent): void {
    if (!this.store) {
      this.#queue.push(event);
      return;
    }
    // After a failure events are no longer stored, and so never reach the reader: what the
    // reader saw is what the store holds.
    this.#batch.push(event);
    if (!this.#scheduled) {
      this.#scheduled = true;
      // The event-loop turn, not the tick: a call's events are emitted over several ticks, and
      // one append per call instead of three was a fifth of a durable call's time (a round trip
      // fewer per call for a remote store).
      setImmediate(this.#scheduledFlush);
    }
  }

  /**
   * Resolves once every event written so far is stored (at once without a store: `undefined`,
   * so the hot path pays no await).
   */
  flushed(): Promise<void> | undefined {
    if (!this.store) return undefined;
    if (this.#batch.length) this.#flush();
    return this.#chain;
  }

  readonly #scheduledFlush = (): void => {
    this.#scheduled = false;
    this.#flush();
  };

  /** Sends the batch (an earlier `flushed` may have sent it already; a scheduled flush stays scheduled). */
  #flush(): void {
    const batch = this.#batch;
    if (!batch.length) return;
    this.#batch = [];
    if (this.#inCallOrder && this.#failure === undefined && this.#outageSince === undefined) {
      // Sent now; the chain only keeps the reader's order.
      const stored = this.#store(batch);
      this.#chain = this.#chain
        .then(() => stored)
        .then((ok) => {
          if (ok) this.#deliver(batch);
        });
    } else if (this.#waiting !== undefined) {
      // An append is under way: what was emitted since joins the one waiting behind it, so the
      // store sees at most two appends per round trip, however many ticks the run took.
      for (const event of batch) this.#waiting.push(event);
    } else {
      const next = batch;
      this.#waiting = next;
      this.#chain = this.#chain.then(async () => {
        if (this.#waiting === next) this.#waiting = undefined;
        if (this.#failure === undefined && (await this.#store(next))) this.#deliver(next);
      });
    }
  }

  /** The batch chained behind an append under way, still open to later events (one-at-a-time stores). */
  #waiting: RunEvent[] | undefined;

  #deliver(batch: RunEvent[]): void {
    for (const event of batch) {
      if (this.#heldEnd.length || (!this.#handedOver && this.#endsRoot(event))) this.#heldEnd.push(event);
      else this.#queue.push(event);
    }
  }

  /**
   * The root run's end (and anything after it), stored, but kept from the reader until this
   * driver has given back its leases: a chat sends its next message on that end, and found the
   * session still held by the run that had just ended (a round trip of a release later).
   */
  readonly #heldEnd: RunEvent[] = [];
  /** The run this driver drives (its first lease); its child runs share the driver. */
  #root: string | undefined;
  /** True once every lease was given back (tried) and the held end handed on: nothing is held after. */
  #handedOver = false;
  /** The first attempts of the give-backs under way. */
  readonly #givingBack = new Set<Promise<void>>();

  #endsRoot(event: RunEvent): boolean {
    return (
      event.runId === this.#root &&
      (event.type === "run_completed" || event.type === "run_failed" || event.type === "run_parked")
    );
  }

  /**
   * Hands the held end to the reader once no lease is held and every give-back was tried (after
   * the store failed, at once: its give-backs go on in the background, and nobody waits for them).
   */
  async #deliverHeldEnd(): Promise<void> {
    if (this.#leases.size > 0) return;
    while (this.#givingBack.size && this.#failure === undefined) await Promise.all(this.#givingBack);
    if (this.#leases.size > 0) return;
    this.#handedOver = true;
    for (const event of this.#heldEnd.splice(0)) this.#queue.push(event);
  }

  /**
   * Appends `batch` (one append per run); resolves to whether it was stored, never rejects. A
   * failure that says nothing about the data (a lost connection, a full disk) is retried until
   * the store takes the batch or `storeWaitMs` has passed since the outage began; any other
   * failure, or running out of time, stops the run.
   */
  async #store(batch: RunEvent[]): Promise<boolean> {
    this.#storeWaits++;
    const sent = Date.now();
    try {
      await this.#append(batch);
      return true;
    } catch (error) {
      const failure = asStoreError(error, batch[0]!.runId);
      // A batch that failed while an earlier one is being retried is retried behind it (it may
      // have failed only because the one before it is missing).
      if (this.#failure !== undefined || !(failure.retryable || this.#outageSince !== undefined)) {
        this.#fail(failure);
        return false;
      }
      // The store stopped answering when this append went out, not when it gave up on it (a
      // frozen database answers only at its own timeout).
      this.#outageSince ??= sent;
      return await this.#retry(batch, failure);
    } finally {
      this.#storeWaits--;
    }
  }

  /** When the store began failing (retryably); `undefined` while it works. */
  #outageSince: number | undefined;
  /** Retries run one batch at a time, in seq order. */
  #retries: Promise<unknown> = Promise.resolve();

  async #retry(batch: RunEvent[], first: StoreError): Promise<boolean> {
    const previous = this.#retries;
    let done!: () => void;
    this.#retries = new Promise<void>((resolve) => {
      done = resolve;
    });
    try {
      await previous;
      let last: StoreError = first;
      let pause = FIRST_PAUSE_MS;
      while (this.#failure === undefined) {
        const since = this.#outageSince ?? Date.now();
        const left = since + this.#storeWaitMs - Date.now();
        if (left <= 0) {
          this.#fail(
            new StoreError(
              `the store did not take the events of run ${last.runId ?? batch[0]!.runId} for ${Date.now() - since} ms ` +
                `(${last.message}); the run stopped where its log ends, and can be resumed once the store works`,
              { runId: last.runId ?? batch[0]!.runId, cause: last, retryable: true },
            ),
          );
          return false;
        }
        await pauseFor(Math.min(pause, left), undefined);
        pause = nextPause(pause);
        if (this.#failure !== undefined) return false;
        try {
          // Within what is left of the wait: a retry that hangs must not stretch it.
          const deadline = timeoutSignal(Math.max(0, since + this.#storeWaitMs - Date.now()));
          const appended = await raceAbort(this.#appendUnstored(batch), deadline.signal).finally(
            deadline.clear,
          );
          if (isAborted(appended)) {
            last = new StoreError(
              `the store did not answer within the ${this.#storeWaitMs} ms (storeWaitMs) the run waits for it`,
              { runId: batch[0]!.runId, retryable: true },
            );
            continue;
          }
          this.#outageSince = undefined;
          return true;
        } catch (error) {
          last = asStoreError(error, batch[0]!.runId);
          if (!last.retryable) {
            this.#fail(last);
            return false;
          }
        }
      }
      return false;
    } finally {
      done();
    }
  }

  /** The batch's events the store does not hold yet (an append whose answer was lost may have taken effect). */
  async #appendUnstored(batch: RunEvent[]): Promise<void> {
    const store = this.store!;
    for (const [runId, events] of byRun(batch)) {
      const lastSeq = (await store.getRun(runId))?.lastSeq ?? 0;
      const rest = events.filter((event) => event.seq > lastSeq);
      if (rest.length === 0) continue;
      if (rest[0]!.seq !== lastSeq + 1) {
        throw new StoreError(
          `run ${runId}: the store holds events up to seq ${lastSeq}, but the next to store is ${rest[0]!.seq}`,
          { runId, retryable: false },
        );
      }
      await store.append(this.#leaseOf(runId), rest);
    }
  }

  /** Appends `batch`, one append per run; rejects with what the store threw. */
  async #append(batch: RunEvent[]): Promise<void> {
    const store = this.store!;
    // The common batch: one run's events, appended as they are.
    if (oneRun(batch)) {
      await store.append(this.#leaseOf(batch[0]!.runId), batch);
      return;
    }
    const runs = [...byRun(batch)].map(([id, events]) => ({ lease: this.#leaseOf(id), events }));
    // Made together (child runs interleave with their parent): a store that commits in
    // groups stores them in one transaction.
    const outcomes = await Promise.allSettled(
      runs.map(({ lease, events }) => appendTo(store, lease, events)),
    );
    const failed = outcomes.findIndex((outcome) => outcome.status === "rejected");
    if (failed !== -1)
      throw asStoreError((outcomes[failed] as PromiseRejectedResult).reason, runs[failed]!.lease.runId);
  }

  #leaseOf(runId: string): Lease {
    // A released run's batch may still be retried (a store that was away when the run ended).
    const lease = this.#leases.get(runId) ?? this.#released.get(runId);
    if (!lease) throw new StoreError(`run ${runId} has no lease in this process`, { runId });
    return lease;
  }

  /**
   * Leases given back (or being given back), kept for the retries of batches emitted before:
   * a release does not take back what the run wrote under its lease. The store refuses such an
   * append only once the release has been stored.
   */
  readonly #released = new Map<string, Lease>();

  /** This driver's identity: two drivers of one run in the same process conflict too. */
  readonly #owner = leaseOwner();
  /** By when (this machine's clock) each lease must have been renewed: past it, the run stops. */
  readonly #deadlines = new Map<string, number>();
  #renewing = false;

  /**
   * Runs a store operation the run needs before it can store anything (its lease, the reads of
   * its start), waiting for a store that fails retryably as an append does: retried for
   * `storeWaitMs` from the first failure, and no longer once `signal` (the run's) aborts.
   */
  whileStoreFails<T>(what: string, attempt: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return whileStoreFails(attempt, { waitMs: this.#storeWaitMs, what, ...(signal && { signal }) });
  }

  /**
   * Takes the run's lease (one writer per run) and keeps it renewed until `release`. While
   * another live process holds it, waits up to `waitMs` (polling, so a holder that dies or
   * lets go is noticed at once), then throws its `LeaseConflict`.
   */
  async acquire(runId: string, wait: LeaseWait = {}): Promise<Lease | undefined> {
    if (!this.store) return undefined;
    const requestedAt = Date.now();
    const lease = await this.#acquire(runId, wait);
    this.#root ??= runId;
    this.#leases.set(runId, lease);
    this.#deadlines.set(runId, requestedAt + this.#leaseTtlMs);
    if (!this.#renewTimer) {
      this.#renewTimer = setInterval(
        () => void this.#renew(),
        Math.max(50, Math.floor(this.#leaseTtlMs / 3)),
      );
      this.#renewTimer.unref?.();
    }
    return lease;
  }

  async #acquire(runId: string, { waitMs = 0, signal }: LeaseWait): Promise<Lease> {
    const store = this.store!;
    const giveUpAt = Date.now() + Math.max(0, waitMs);
    let pause = 50;
    while (true) {
      try {
        // A store failing for a while (a database restarting) is waited for as an append waits
        // for it: a run started in that moment starts once the store answers.
        return await this.whileStoreFails(
          `acquiring the lease of run ${runId}`,
          () => store.acquireLease(runId, this.#owner, this.#leaseTtlMs),
          signal,
        );
      } catch (error) {
        const left = giveUpAt - Date.now();
        if (!(error instanceof LeaseConflict) || left <= 0 || signal?.aborted) throw error;
        // Wake when the lease expires, or sooner to notice a holder that died or released it.
        const until = Math.max(10, Math.min(pause, left, error.expiresAt - Date.now() + 10));
        pause = Math.min(pause * 2, 1_000);
        await pauseFor(until, signal);
      }
    }
  }

  async #renew(): Promise<void> {
    const store = this.store!;
    // A renewal that hangs must not pile up others behind it; the deadline check still runs.
    if (this.#failure === undefined) this.#checkDeadlines();
    if (this.#renewing || this.#failure !== undefined) return;
    this.#renewing = true;
    try {
      for (const [runId, lease] of this.#leases) {
        const requestedAt = Date.now();
        try {
          const renewed = await store.renewLease(lease, this.#leaseTtlMs);
          if (this.#leases.has(runId)) {
            this.#leases.set(runId, renewed);
            this.#deadlines.set(runId, requestedAt + this.#leaseTtlMs);
          }
        } catch (error) {
          const failure =
            error instanceof StoreError
              ? error
              : new StoreError(`renewing the lease of run ${runId} failed: ${describe(error)}`, {
                  runId,
                  cause: error,
                });
          // A store that is away for a while: the lease still holds until its deadline, which
          // `#checkDeadlines` enforces; the next renewal tries again.
          if (failure.retryable && !(failure instanceof LeaseConflict)) continue;
          this.#fail(failure);
          return;
        }
      }
    } finally {
      this.#renewing = false;
    }
  }

  /** A lease whose renewal did not come back before it expired: another process may take the run now. */
  #checkDeadlines(): void {
    const now = Date.now();
    for (const [runId, deadline] of this.#deadlines) {
      if (now < deadline) continue;
      this.#fail(
        new StoreError(
          `run ${runId}: its lease expired before the store confirmed a renewal (no answer for ${now - deadline + this.#leaseTtlMs} ms); ` +
            "the run stopped so that no two processes drive it; resume it once the store answers",
          { runId, retryable: true },
        ),
      );
      return;
    }
  }

  #fail(error: Error): void {
    if (this.#failure !== undefined) return;
    this.#failure = error;
    this.#onFailure(error);
  }

  /**
   * Stores what is pending, then gives the run's lease back. After the store failed, nothing
   * waits for it: the lease is let go in the background (see `#giveBack`).
   */
  async release(runId: string): Promise<void> {
    const flushed = this.#failure === undefined ? this.flushed()?.catch(() => {}) : undefined;
    const lease = this.#leases.get(runId);
    // A store that applies calls in order gets the release at once, behind the last events:
    // one that commits in groups stores both in one commit.
    // Not while earlier events are being retried: the lease must outlive them.
    let released =
      lease &&
      this.store &&
      this.#inCallOrder &&
      this.#failure === undefined &&
      this.#outageSince === undefined
        ? this.#giveBack(lease)
        : undefined;
    if (released) this.#forget(runId);
    await flushed;
    this.#forget(runId);
    if (!lease || !this.store) return this.#deliverHeldEnd();
    // The last lease let go, after the last events: this driver writes nothing more.
    if (this.#leases.size === 0) {
      this.#done = true;
      this.#stopIfIdle();
    }
    released ??= this.#giveBack(lease);
    if (this.#failure === undefined) {
      this.#storeWaits++;
      await released;
      this.#storeWaits--;
    }
    await this.#deliverHeldEnd();
  }

  /** True once this driver has let go of its last lease after its last events. */
  #done = false;
  /** Leases given back whose release the store did not confirm (it failed): tried again in the background. */
  #unconfirmed = 0;

  /**
   * Gives `lease` back; resolves after the first attempt. One the store failed to take is tried
   * again in the background, with growing pauses, until the store answers or the lease has
   * expired anyway: a driver its store stopped must not keep other processes off its run and
   * session for the whole ttl once the store works again.
   */
  #giveBack(lease: Lease): Promise<void> {
    const store = this.store!;
    const until = Date.now() + this.#leaseTtlMs;
    // "retry" while the store fails retryably; "refused" for good (a store closed meanwhile).
    const attempt = () =>
      Promise.resolve()
        .then(() => store.releaseLease(lease))
        .then(
          () => "released" as const,
          (error: unknown) => (isRetryable(error) ? ("retry" as const) : ("refused" as const)),
        );
    const tried = attempt();
    const firstTry = tried.then(() => {
      this.#givingBack.delete(firstTry);
    });
    this.#givingBack.add(firstTry);
    return tried.then((first) => {
      if (first !== "retry") return;
      this.#unconfirmed++;
      this.#stopIfIdle();
      void (async () => {
        let outcome: "released" | "retry" | "refused" = first;
        for (let pause = FIRST_PAUSE_MS; outcome === "retry" && Date.now() + pause < until; ) {
          await new Promise((wake) => setTimeout(wake, pause).unref?.());
          // Events still being retried go first: given back before them, the lease would refuse
          // them, and the log would end short of what the run did.
          await this.#retries;
          outcome = await attempt();
          pause = nextPause(pause);
        }
        // A lease the store may still hold keeps its owner judged stopped here until it expires.
        if (outcome !== "released") this.#abandoned = true;
        if (--this.#unconfirmed === 0 && !this.#abandoned) ownerReleasedAll(this.#owner);
      })();
    });
  }

  /** True once a lease was left to expire (its release never confirmed). */
  #abandoned = false;

  /**
   * A driver that has stopped for good (its store failed, or it let go of everything) while the
   * store holds a lease of it: this process need not wait for that lease (see `ownerStopped`).
   */
  #stopIfIdle(): void {
    if (this.#unconfirmed === 0 || this.#leases.size > 0) return;
    if (this.#done || this.#failure !== undefined) ownerStopped(this.#owner, 2 * this.#leaseTtlMs);
  }

  /** Stops renewing the run's lease (its release is under way). */
  #forget(runId: string): void {
    const lease = this.#leases.get(runId);
    if (lease) this.#released.set(runId, lease);
    this.#leases.delete(runId);
    this.#deadlines.delete(runId);
    if (this.#leases.size === 0) {
      clearInterval(this.#renewTimer);
      this.#renewTimer = undefined;
    }
  }
}

/** True when every event of the batch is of its first event's run. */
function oneRun(batch: RunEvent[]): boolean {
  const first = batch[0]!.runId;
  for (let i = batch.length - 1; i > 0; i--) if (batch[i]!.runId !== first) return false;
  return true;
}

/** A batch's events grouped by run (a batch of several runs: see `oneRun`), each run's in order. */
function byRun(batch: RunEvent[]): Map<string, RunEvent[]> {
  const runs = new Map<string, RunEvent[]>();
  for (const event of batch) {
    const events = runs.get(event.runId);
    if (events) events.push(event);
    else runs.set(event.runId, [event]);
  }
  return runs;
}

/** `store.append`, with a custom store's synchronous throw turned into a rejection. */
async function appendTo(store: RunStore, lease: Lease, events: RunEvent[]): Promise<void> {
  await store.append(lease, events);
}

/** A thrown value's message, without trusting it (a getter may throw). */
function describe(error: unknown): string {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return "an error that cannot be described";
  }
}

/** What a store threw, as a `StoreError` (a custom store may throw an ENOSPC error as Node reports it). */
function asStoreError(error: unknown, runId: string): StoreError {
  return error instanceof StoreError
    ? error
    : new StoreError(`appending events of run ${runId} failed: ${describe(error)}`, { runId, cause: error });
}
