import type { RunEvent } from "../contract/events.js";
import { isTransientFailure } from "./transient.js";

/**
 * The newest version of the stored event format. Version 1 rows hold whole events; version 2
 * rows may refer to large payloads (arguments, outputs, details) stored once beside the log;
 * version 3 rows may also refer to blocks of messages (a session's run starts with the whole
 * conversation, and shares its blocks with the runs before it); version 4 rows hold several
 * whole events, appended together (PostgresStore writes them). This Quiver reads all four; a
 * row of any other version is refused, never skipped.
 */
export const EVENT_SCHEMA_VERSION = 4;

/** The right to write one run's log, held by one process at a time until it expires. */
export type Lease = {
  runId: string;
  owner: string;
  expiresAt: number;
  /**
   * From `acquireLease`: whether the store held events of the run when the lease was taken.
   * The built-in stores answer it with the lease itself (no extra round trip); a store that
   * leaves it out is asked with `getRun` when it matters.
   */
  stored?: boolean;
};

/** A run as listed by a store. */
export type RunSummary = {
  runId: string;
  sessionId?: string;
  /** The agent that started the run. */
  agent: string;
  /** Set on child runs (agents as tools): their parent's id. */
  parentRunId?: string;
  startedAt: number;
  updatedAt: number;
  /** The highest seq stored. */
  lastSeq: number;
  /**
   * What the run's log ends with:
   * - `running`: not finished — being driven, or stopped without an end (its process died);
   *   resume it.
   * - `parked`: waiting for approval decisions (`Runner.decide`, then `Runner.resume`).
   * - `completed`: finished; resuming returns the stored result.
   * - `failed`: the log ends with `run_failed` (its kind is `failureKind`). Finished, except when
   *   `failureKind` is `"store_unavailable"` (see there).
   */
  status: RunStatus;
  /**
   * The `kind` of the `run_failed` the log ends with; present only while `status` is `failed`.
   * A failed run whose `failureKind` is `"store_unavailable"` is **unfinished and resumable**:
   * the store failed (a full disk, a lost connection, no answer in time), not the run, and
   * `Runner.resume` / `Runner.recover` continue it from its log once the store works. A later
   * `run_resumed` makes it `running` again, without a `failureKind`.
   *
   * @example
   * const resumable = (await store.listRuns({ status: "failed" })).filter(
   *   (run) => run.failureKind === "store_unavailable",
   * );
   */
  failureKind?: string;
  /** Who holds the run's lease, while one is held (an expired lease is not listed). */
  leaseOwner?: string;
  /** When that lease expires (epoch ms, by the store's clock), while one is held. */
  leaseExpiresAt?: number;
};

export type RunStatus = "running" | "parked" | "completed" | "failed";

/**
 * Which runs `listRuns` returns: those of one session, of one status (or any of several), or all.
 *
 * @example
 * // A session's first and latest conversation runs, however long it is: what starting its
 * // next message needs, without listing the runs in between.
 * await store.listRuns({ sessionId, topLevel: true, first: 1, last: 1 });
 */
export type RunFilter = {
  sessionId?: string;
  status?: RunStatus | readonly RunStatus[];
  /** Only runs without a `parentRunId` (not an agent called as a tool, nor a handoff's run). */
  topLevel?: boolean;
  /**
   * Only the first `first` and the last `last` of the runs that match, still oldest first (a
   * run among both is listed once). With neither, all of them. A store written before these
   * two fields lists all of them: a caller that needs only the ends takes them from what it gets.
   */
  first?: number;
  last?: number;
};

export type SessionSummary = { sessionId: string; runs: number; startedAt: number; updatedAt: number };

/**
 * Where runs are kept: an append-only event log per run, plus leases (one writer per run),
 * a session index, and artifacts (full texts of truncated tool results).
 *
 * Contract every implementation keeps (the shared test suite checks it):
 * - `append` stores events in order; their `seq` must continue the run's log without gaps or
 *   repeats (else `StoreError`); it needs the run's current, unexpired lease.
 * - `read` returns events with `seq > afterSeq` in order; a row of an unknown schema version or
 *   that cannot be decoded is a `StoreError` naming the run and seq — never silently skipped.
 * - `acquireLease` fails with `LeaseConflict` while another owner's lease is unexpired; an
 *   expired lease can be taken over, and so can one whose owner is a process on this machine
 *   that no longer exists (see `leaseOwner()`).
 * - An operation that cannot finish (disk full, connection lost, no answer in time) rejects
 *   with a `StoreError` whose `retryable` is true; it never hangs and never half-writes.
 */
export interface RunStore {
  append(lease: Lease, events: readonly RunEvent[]): Promise<void>;
  read(runId: string, afterSeq?: number): Promise<RunEvent[]>;
  acquireLease(runId: string, owner: string, ttlMs: number): Promise<Lease>;
  renewLease(lease: Lease, ttlMs: number): Promise<Lease>;
  releaseLease(lease: Lease): Promise<void>;
  getRun(runId: string): Promise<RunSummary | undefined>;
  /** Runs, oldest first; only those of one session and/or status when given. */
  listRuns(filter?: RunFilter): Promise<RunSummary[]>;
  listSessions(): Promise<SessionSummary[]>;
  /** Deletes every run of a session, with its events, leases and artifacts. */
  clearSession(sessionId: string): Promise<void>;
  putArtifact(runId: string, key: string, text: string): Promise<void>;
  getArtifact(runId: string, key: string): Promise<string | undefined>;
  close(): Promise<void>;
}

/**
 * Marks a store whose appends take effect in the order they were called, even when the
 * caller does not wait for one before making the next (both embedded stores do: each append
 * is queued or applied synchronously). A run's writer then sends each batch at once instead of
 * after the previous one was stored, so a store that commits in groups gets them together.
 * Other stores (a pool of database connections, a custom store) get one append at a time.
 */
export const APPENDS_IN_CALL_ORDER: unique symbol = Symbol.for("quiver.appendsInCallOrder");

/**
 * A store refused or could not carry out an operation (damaged row, gap in seq, closed store,
 * disk full, lost connection, no answer in time).
 *
 * `retryable` is true when the failure is in the store's surroundings, not in the data: the
 * disk was full, the database could not be reached or did not answer. The same operation may
 * succeed later, and a run that stopped for it can be resumed once the store works again.
 */
export class StoreError extends Error {
  override name = "StoreError";
  readonly runId?: string;
  readonly retryable: boolean;
  constructor(message: string, options: { runId?: string; cause?: unknown; retryable?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    if (options.runId !== undefined) this.runId = options.runId;
    this.retryable = options.retryable ?? isTransientFailure(options.cause);
  }
}

/** Another process holds the run's lease: only one may drive a run at a time. */
export class LeaseConflict extends StoreError {
  override name = "LeaseConflict";
  readonly owner: string;
  readonly expiresAt: number;
  constructor(runId: string, owner: string, expiresAt: number) {
    super(
      `run ${runId} is being driven by another process (lease owner ${owner}, expires ${new Date(expiresAt).toISOString()}); ` +
        "wait for it to finish, or for its lease to expire if that process died",
      { runId, retryable: false },
    );
    this.owner = owner;
    this.expiresAt = expiresAt;
  }
}
