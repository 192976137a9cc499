/**
 * The tables both SQL stores keep, and how their rows map to the store's types. Postgres hands
 * `bigint` columns back as strings, so every number goes through `Number()`.
 */
import type { StoredRunSummary } from "./log-rules.js";
import type { Lease, RunSummary, SessionSummary } from "./types.js";

/** A row of the runs table: one run's summary, updated in the same transaction as its events. */
export type RunRow = {
  run_id: string;
  session_id: string | null;
  parent_run_id: string | null;
  agent: string;
  started_at: number | string;
  updated_at: number | string;
  last_seq: number | string;
  status: string;
  /** The kind of the `run_failed` a failed run ended with (null otherwise, and in rows written before the column existed). */
  failure_kind?: string | null;
  /** The run's lease, when the query joined it (`lease_owner`, `lease_expires_at`) with the clock that judges it (`now_ms`). */
  lease_owner?: string | null;
  lease_expires_at?: number | string | null;
  now_ms?: number | string;
};

export type SessionRow = {
  session_id: string;
  runs: number | string;
  started_at: number | string;
  updated_at: number | string;
};

export type LeaseRow = { owner: string; expires_at: number | string };

export type EventRow = { seq: number | string; version: number | string; body: string };

export function toRunSummary(row: RunRow): StoredRunSummary {
  const summary: StoredRunSummary = {
    runId: row.run_id,
    agent: row.agent,
    startedAt: Number(row.started_at),
    updatedAt: Number(row.updated_at),
    lastSeq: Number(row.last_seq),
    status: row.status as RunSummary["status"],
  };
  if (row.session_id !== null) summary.sessionId = row.session_id;
  if (row.parent_run_id !== null) summary.parentRunId = row.parent_run_id;
  // Only with the failed status it explains: an older Quiver sharing the file updates the
  // status of a resumed run without clearing this column.
  if (summary.status === "failed" && row.failure_kind != null) summary.failureKind = row.failure_kind;
  if (row.lease_owner != null && row.lease_expires_at != null) {
    const expiresAt = Number(row.lease_expires_at);
    const now = row.now_ms === undefined ? Date.now() : Number(row.now_ms);
    if (expiresAt > now) {
      summary.leaseOwner = row.lease_owner;
      summary.leaseExpiresAt = expiresAt;
    }
  }
  return summary;
}

/** A select of runs rows with their lease joined (aliases r and l), as `toRunSummary` reads them. */
export function runsWithLeases(runs: string, leases: string, now = ""): string {
  return `SELECT r.*, l.owner AS lease_owner, l.expires_at AS lease_expires_at${now ? `, ${now} AS now_ms` : ""}
    FROM ${runs} r LEFT JOIN ${leases} l ON l.run_id = r.run_id`;
}

/** The values of a runs row in the order of RUN_COLUMNS. */
export function runRowValues(summary: StoredRunSummary): unknown[] {
  return [
    summary.runId,
    summary.sessionId ?? null,
    summary.parentRunId ?? null,
    summary.agent,
    summary.startedAt,
    summary.updatedAt,
    summary.lastSeq,
    summary.status,
    summary.failureKind ?? null,
  ];
}

/** The runs table's columns, as both SQL stores insert them (`runRowValues` gives the values). */
export const RUN_COLUMNS =
  "run_id, session_id, parent_run_id, agent, started_at, updated_at, last_seq, status, failure_kind";

/** The update half of a runs upsert: every column but the key takes the new value. */
export const RUN_UPDATE = RUN_COLUMNS.split(", ")
  .slice(1)
  .map((column) => `${column} = excluded.${column}`)
  .join(", ");

export function toSessionSummary(row: SessionRow): SessionSummary {
  return {
    sessionId: row.session_id,
    runs: Number(row.runs),
    startedAt: Number(row.started_at),
    updatedAt: Number(row.updated_at),
  };
}

export function toLease(runId: string, row: LeaseRow | undefined): Lease | undefined {
  return row && { runId, owner: row.owner, expiresAt: Number(row.expires_at) };
}

export function toStoredEvent(row: EventRow): { seq: number; version: number; body: string } {
  return { seq: Number(row.seq), version: Number(row.version), body: row.body };
}
