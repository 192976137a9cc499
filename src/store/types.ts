import type { RunEvent } from "../run/events.js";

/** The version of the stored event format. Rows of another version are refused, never skipped. */
export const EVENT_SCHEMA_VERSION = 1;

/** The right to write one run's log, held by one process at a time until it expires. */
export type Lease = { runId: string; owner: string; expiresAt: number };

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
  /** "running" until a `run_completed` or `run_failed` event is stored. */
  status: "running" | "completed" | "failed";
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
 *   expired lease (its process crashed) can be taken over.
 */
export interface RunStore {
  append(lease: Lease, events: readonly RunEvent[]): Promise<void>;
  read(runId: string, afterSeq?: number): Promise<RunEvent[]>;
  acquireLease(runId: string, owner: string, ttlMs: number): Promise<Lease>;
  renewLease(lease: Lease, ttlMs: number): Promise<Lease>;
  releaseLease(lease: Lease): Promise<void>;
  getRun(runId: string): Promise<RunSummary | undefined>;
  /** Runs, oldest first; only those of one session when `sessionId` is given. */
  listRuns(filter?: { sessionId?: string }): Promise<RunSummary[]>;
  listSessions(): Promise<SessionSummary[]>;
  /** Deletes every run of a session, with its events, leases and artifacts. */
  clearSession(sessionId: string): Promise<void>;
  putArtifact(runId: string, key: string, text: string): Promise<void>;
  getArtifact(runId: string, key: string): Promise<string | undefined>;
  close(): Promise<void>;
}

/** A store refused or could not carry out an operation (damaged row, gap in seq, closed store…). */
export class StoreError extends Error {
  override name = "StoreError";
  readonly runId?: string;
  constructor(message: string, options: { runId?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    if (options.runId !== undefined) this.runId = options.runId;
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
      { runId },
    );
    this.owner = owner;
    this.expiresAt = expiresAt;
  }
}
