import type { RunEvent } from "../contract/events.js";
import {
  checkAfterSeq,
  checkArtifact,
  checkLeaseFree,
  checkLeaseHeld,
  checkLeaseRequest,
  checkRunId,
  closedStore,
  decodeEvents,
  encodeEvents,
  endsOf,
  filterEnds,
  filterStatuses,
  leaseFields,
  referencedPayloads,
  type StoredEvent,
  type StoredRunSummary,
  summarize,
  withPayloads,
} from "./log-rules.js";
import { payloadOwner, payloadOwners, sessionPayloads } from "./payloads.js";
import {
  APPENDS_IN_CALL_ORDER,
  type Lease,
  type RunFilter,
  type RunStore,
  type RunSummary,
  type SessionSummary,
} from "./types.js";

/**
 * A `RunStore` in this process's memory: for tests, demos and runs that need not outlive the
 * process. It keeps events encoded exactly as the database stores do (JSON text with a schema
 * version), so it enforces the same rules and hands out fresh copies: a caller that mutates a
 * read event cannot change the log.
 *
 * @example
 * const store = new MemoryStore();
 * const lease = await store.acquireLease("run-1", "worker-a", 30_000);
 * await store.append(lease, events);
 * const log = await store.read("run-1");
 */
export class MemoryStore implements RunStore {
  /** Each run's encoded log, in seq order. Protected so tests can damage a row on purpose. */
  protected readonly logs = new Map<string, StoredEvent[]>();
  readonly #runs = new Map<string, StoredRunSummary>();
  readonly #leases = new Map<string, Lease>();
  readonly #artifacts = new Map<string, Map<string, string>>();
  #closed = false;
  /** Every append is applied before it returns its promise, so in call order. */
  readonly [APPENDS_IN_CALL_ORDER] = true;

  // Every method is synchronous inside, so each one is atomic: no other call interleaves.

  async append(lease: Lease, events: readonly RunEvent[]): Promise<void> {
    this.#checkOpen();
    checkRunId(lease.runId);
    checkLeaseHeld(lease, this.#leases.get(lease.runId), Date.now());
    if (events.length === 0) return;
    const previous = this.#runs.get(lease.runId);
    const { rows, payloads } = encodeEvents(lease.runId, previous?.lastSeq ?? 0, events);
    const summary = summarize(lease.runId, previous, events);
    if (payloads.length) {
      const artifacts = this.#artifactsOf(payloadOwner(lease.runId, summary.sessionId));
      for (const payload of payloads) artifacts.set(payload.key, payload.text);
    }
    const log = this.logs.get(lease.runId) ?? [];
    log.push(...rows);
    this.logs.set(lease.runId, log);
    this.#runs.set(lease.runId, summary);
  }

  async read(runId: string, afterSeq?: number): Promise<RunEvent[]> {
    this.#checkOpen();
    const after = checkAfterSeq(runId, afterSeq);
    const log = this.logs.get(runId) ?? [];
    // In an intact log row i holds seq i + 1, so the rows after `after` start at index
    // `after`; a damaged log is searched, and decodeEvents reports what is wrong with it.
    const start = log[after]?.seq === after + 1 ? after : log.findIndex((row) => row.seq > after);
    const rows = start === -1 ? [] : log.slice(start);
    const run = this.#runs.get(runId);
    const events = decodeEvents(runId, after, run?.lastSeq ?? 0, rows);
    const texts = new Map<string, string>();
    const known = new Map<string, unknown>();
    for (const key of referencedPayloads(events, known)) {
      for (const owner of payloadOwners(runId, run?.sessionId)) {
        const text = this.#artifacts.get(owner)?.get(key);
        if (text !== undefined) {
          texts.set(key, text);
          break;
        }
      }
    }
    return withPayloads(runId, events, texts, known);
  }

  async acquireLease(runId: string, owner: string, ttlMs: number): Promise<Lease> {
    this.#checkOpen();
    checkLeaseRequest(runId, owner, ttlMs);
    const now = Date.now();
    checkLeaseFree(runId, owner, this.#leases.get(runId), now);
    const lease = { runId, owner, expiresAt: now + ttlMs };
    this.#leases.set(runId, lease);
    return { ...lease, stored: this.#runs.has(runId) };
  }

  async renewLease(lease: Lease, ttlMs: number): Promise<Lease> {
    this.#checkOpen();
    checkLeaseRequest(lease.runId, lease.owner, ttlMs);
    const now = Date.now();
    checkLeaseHeld(lease, this.#leases.get(lease.runId), now);
    const renewed = { runId: lease.runId, owner: lease.owner, expiresAt: now + ttlMs };
    this.#leases.set(lease.runId, renewed);
    return { ...renewed };
  }

  async releaseLease(lease: Lease): Promise<void> {
    this.#checkOpen();
    // Releasing a lease that another owner has since taken over must not free theirs.
    if (this.#leases.get(lease.runId)?.owner === lease.owner) this.#leases.delete(lease.runId);
  }

  async getRun(runId: string): Promise<RunSummary | undefined> {
    this.#checkOpen();
    const summary = this.#runs.get(runId);
    return summary && this.#withLease(summary, Date.now());
  }

  async listRuns(filter: RunFilter = {}): Promise<RunSummary[]> {
    this.#checkOpen();
    const statuses = filterStatuses(filter);
    const ends = filterEnds(filter);
    const now = Date.now();
    // A stable sort over the map's insertion order: runs started in the same millisecond are
    // listed in the order they were stored (a session continues from its last run).
    const runs = [...this.#runs.values()]
      .filter((run) => filter.sessionId === undefined || run.sessionId === filter.sessionId)
      .filter((run) => statuses === undefined || statuses.has(run.status))
      .filter((run) => !filter.topLevel || run.parentRunId === undefined)
      .sort((a, b) => a.startedAt - b.startedAt);
    return (ends ? endsOf(runs, ends) : runs).map((run) => this.#withLease(run, now));
  }

  #withLease(summary: RunSummary, now: number): RunSummary {
    return { ...summary, ...leaseFields(this.#leases.get(summary.runId), now) };
  }

  async listSessions(): Promise<SessionSummary[]> {
    this.#checkOpen();
    const sessions = new Map<string, SessionSummary>();
    for (const run of this.#runs.values()) {
      if (run.sessionId === undefined) continue;
      const session = sessions.get(run.sessionId);
      if (session === undefined) {
        sessions.set(run.sessionId, {
          sessionId: run.sessionId,
          runs: 1,
          startedAt: run.startedAt,
          updatedAt: run.updatedAt,
        });
      } else {
        session.runs++;
        session.startedAt = Math.min(session.startedAt, run.startedAt);
        session.updatedAt = Math.max(session.updatedAt, run.updatedAt);
      }
    }
    return [...sessions.values()].sort(
      (a, b) => a.startedAt - b.startedAt || compareText(a.sessionId, b.sessionId),
    );
  }

  async clearSession(sessionId: string): Promise<void> {
    this.#checkOpen();
    for (const run of [...this.#runs.values()]) {
      if (run.sessionId !== sessionId) continue;
      this.logs.delete(run.runId);
      this.#leases.delete(run.runId);
      this.#artifacts.delete(run.runId);
      this.#runs.delete(run.runId);
    }
    this.#artifacts.delete(sessionPayloads(sessionId));
  }

  async putArtifact(runId: string, key: string, text: string): Promise<void> {
    this.#checkOpen();
    checkArtifact(runId, key, text);
    this.#artifactsOf(runId).set(key, text);
  }

  #artifactsOf(runId: string): Map<string, string> {
    let artifacts = this.#artifacts.get(runId);
    if (artifacts === undefined) {
      artifacts = new Map();
      this.#artifacts.set(runId, artifacts);
    }
    return artifacts;
  }

  async getArtifact(runId: string, key: string): Promise<string | undefined> {
    this.#checkOpen();
    return this.#artifacts.get(runId)?.get(key);
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  #checkOpen(): void {
    if (this.#closed) throw closedStore("MemoryStore");
  }
}

/** The order SQL's `ORDER BY` gives plain ASCII ids, so every store lists ties the same way. */
function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
