import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Lease, RunStore } from "../store/types.js";
import { StoreError } from "../store/types.js";
import type { EventQueue } from "./event-queue.js";
import type { RunEvent } from "./events.js";

export const DEFAULT_LEASE_TTL_MS = 30_000;

/** A lease owner id: the host and process (for error messages), and what tells drivers apart. */
export function leaseOwner(): string {
  return `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}

/**
 * Where a run's events go: straight to the reader, or — with a store — to the store first and
 * to the reader only once stored (write-ahead). Events emitted in the same tick are appended as
 * one batch. One writer serves a root run and its child runs, so the reader sees every event in
 * the order it was emitted.
 */
export class EventWriter {
  readonly store: RunStore | undefined;
  readonly #queue: EventQueue;
  readonly #leases = new Map<string, Lease>();
  readonly #leaseTtlMs: number;
  #batch: RunEvent[] = [];
  #chain: Promise<void> = Promise.resolve();
  #scheduled = false;
  #failure: Error | undefined;
  #renewTimer: NodeJS.Timeout | undefined;
  readonly #onFailure: (error: Error) => void;

  constructor(
    queue: EventQueue,
    store: RunStore | undefined,
    onFailure: (error: Error) => void,
    leaseTtlMs = DEFAULT_LEASE_TTL_MS,
  ) {
    this.#queue = queue;
    this.store = store;
    this.#onFailure = onFailure;
    this.#leaseTtlMs = leaseTtlMs;
  }

  /** The error that stopped the store, if one did. */
  get failure(): Error | undefined {
    return this.#failure;
  }

  write(event: RunEvent): void {
    if (!this.store || this.#failure) {
      this.#queue.push(event);
      return;
    }
    this.#batch.push(event);
    if (!this.#scheduled) {
      this.#scheduled = true;
      queueMicrotask(() => this.#flush());
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

  #flush(): void {
    this.#scheduled = false;
    const batch = this.#batch;
    if (!batch.length) return;
    this.#batch = [];
    const store = this.store!;
    this.#chain = this.#chain.then(async () => {
      if (this.#failure) {
        for (const event of batch) this.#queue.push(event);
        return;
      }
      try {
        // Consecutive events of one run go in one append (child runs interleave with their parent).
        for (let start = 0; start < batch.length; ) {
          const runId = batch[start]!.runId;
          let end = start + 1;
          while (end < batch.length && batch[end]!.runId === runId) end++;
          const lease = this.#leases.get(runId);
          if (!lease) throw new StoreError(`run ${runId} has no lease in this process`, { runId });
          await store.append(lease, batch.slice(start, end));
          start = end;
        }
      } catch (error) {
        this.#failure = error instanceof Error ? error : new StoreError(String(error));
        this.#onFailure(this.#failure);
      }
      for (const event of batch) this.#queue.push(event);
    });
  }

  /** This driver's identity: two drivers of one run in the same process conflict too. */
  readonly #owner = leaseOwner();

  /** Takes the run's lease (one writer per run) and keeps it renewed until `release`. */
  async acquire(runId: string): Promise<void> {
    if (!this.store) return;
    const lease = await this.store.acquireLease(runId, this.#owner, this.#leaseTtlMs);
    this.#leases.set(runId, lease);
    if (!this.#renewTimer) {
      this.#renewTimer = setInterval(
        () => void this.#renew(),
        Math.max(50, Math.floor(this.#leaseTtlMs / 3)),
      );
      this.#renewTimer.unref?.();
    }
  }

  async #renew(): Promise<void> {
    for (const [runId, lease] of this.#leases) {
      try {
        this.#leases.set(runId, await this.store!.renewLease(lease, this.#leaseTtlMs));
      } catch (error) {
        this.#failure ??= error instanceof Error ? error : new StoreError(String(error));
        this.#onFailure(this.#failure);
      }
    }
  }

  /** Stores what is pending, then gives the run's lease back. */
  async release(runId: string): Promise<void> {
    await this.flushed()?.catch(() => {});
    const lease = this.#leases.get(runId);
    this.#leases.delete(runId);
    if (this.#leases.size === 0) {
      clearInterval(this.#renewTimer);
      this.#renewTimer = undefined;
    }
    if (lease && this.store) await this.store.releaseLease(lease).catch(() => {});
  }
}
