/**
 * The tables both SQL stores keep, and how their rows map to the store's types. Postgres hands
 * `bigint` columns back as strings, so every number goes through `Number()`.
 */
import type { Lease, RunSummary, SessionSummary } from "./types.js";

/** A row of the runs table: one run's summary, updated in the same transaction as its events. */
export type RunRow = {
  run_id: string;
  session_id: string | null;
  agent: string;
  started_at: number | string;
  updated_at: number | string;
  last_seq: number | string;
  status: string;
};

export type SessionRow = {
  session_id: string;
  runs: number | string;
  started_at: number | string;
  updated_at: number | string;
};

export type LeaseRow = { owner: string; expires_at: number | string };

export type EventRow = { seq: number | string; version: number | string; body: string };

export function toRunSummary(row: RunRow): RunSummary {
  const summary: RunSummary = {
    runId: row.run_id,
    agent: row.agent,
    startedAt: Number(row.started_at),
    updatedAt: Number(row.updated_at),
    lastSeq: Number(row.last_seq),
    status: row.status as RunSummary["status"],
  };
  if (row.session_id !== null) summary.sessionId = row.session_id;
  return summary;
}

/** The values of a runs row in column order: run_id, session_id, agent, started_at, updated_at, last_seq, status. */
export function runRowValues(
  summary: RunSummary,
): [string, string | null, string, number, number, number, string] {
  return [
    summary.runId,
    summary.sessionId ?? null,
    summary.agent,
    summary.startedAt,
    summary.updatedAt,
    summary.lastSeq,
    summary.status,
  ];
}

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
