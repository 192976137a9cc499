/**
 * One harness per store for the shared contract suite: how to open a fresh, empty store and
 * how to damage one stored row behind the store's back (as a bad disk, a bad migration or a
 * newer Quiver would).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import type { RunEvent } from "quiver-agents";
import { MemoryStore, PostgresStore, type RunStore, SqliteStore } from "quiver-agents/store";
import { BATCH_ROW_VERSION } from "../../src/store/batch-rows.js";
import { type PostgresCluster, startPostgresCluster } from "./postgres-cluster.js";

/** What to do to one stored row: replace its body or version, or delete it. */
export type Damage = { body?: string; version?: number; remove?: boolean };

export type StoreHarness = {
  name: string;
  /** Called once before the suite (e.g. to start a database server). */
  setUp(): Promise<void>;
  tearDown(): Promise<void>;
  /** A fresh, empty store; every call opens another one. */
  open(): Promise<RunStore>;
  /** Another store on the same data as `store` (a second process would open this). */
  openSibling(store: RunStore): Promise<RunStore>;
  damage(store: RunStore, runId: string, seq: number, damage: Damage): Promise<void>;
};

/** MemoryStore keeps encoded rows; this subclass reaches them the way a damaged disk would. */
class DamageableMemoryStore extends MemoryStore {
  damage(runId: string, seq: number, damage: Damage): void {
    const log = this.logs.get(runId) ?? [];
    const index = log.findIndex((row) => row.seq === seq);
    const row = log[index];
    if (row === undefined) throw new Error(`no row ${runId}/${seq}`);
    if (damage.remove) log.splice(index, 1);
    if (damage.body !== undefined) row.body = damage.body;
    if (damage.version !== undefined) row.version = damage.version;
  }
}

export const memoryHarness: StoreHarness = {
  name: "MemoryStore",
  setUp: async () => {},
  tearDown: async () => {},
  open: async () => new DamageableMemoryStore(),
  // One MemoryStore is one process's data: a "sibling" is the same object.
  openSibling: async (store) => store,
  damage: async (store, runId, seq, damage) => (store as DamageableMemoryStore).damage(runId, seq, damage),
};

export function sqliteHarness(): StoreHarness {
  let dir = "";
  let count = 0;
  return {
    name: "SqliteStore",
    setUp: async () => {
      dir = mkdtempSync(join(tmpdir(), "quiver-sqlite-"));
    },
    tearDown: async () => rmSync(dir, { recursive: true, force: true }),
    open: async () => new SqliteStore({ path: join(dir, `store-${++count}.db`) }),
    openSibling: async (store) => new SqliteStore({ path: (store as SqliteStore).path }),
    damage: async (store, runId, seq, damage) => {
      const db = new Database((store as SqliteStore).path);
      // A run's events are keyed run_key << 32 + seq (tables version 2).
      const row = `event_key = (SELECT run_key FROM quiver_runs WHERE run_id = ?) * 4294967296 + ?`;
      try {
        if (damage.remove) db.prepare(`DELETE FROM quiver_events WHERE ${row}`).run(runId, seq);
        if (damage.body !== undefined) {
          db.prepare(`UPDATE quiver_events SET body = ? WHERE ${row}`).run(damage.body, runId, seq);
        }
        if (damage.version !== undefined) {
          db.prepare(`UPDATE quiver_events SET version = ? WHERE ${row}`).run(damage.version, runId, seq);
        }
      } finally {
        db.close();
      }
    },
  };
}

export function postgresHarness(): StoreHarness {
  let cluster: PostgresCluster | undefined;
  let admin: pg.Pool | undefined;
  let count = 0;
  const url = () => {
    if (cluster === undefined) throw new Error("the Postgres cluster is not running");
    return cluster.connectionString;
  };
  return {
    name: "PostgresStore",
    setUp: async () => {
      cluster = await startPostgresCluster();
      admin = new pg.Pool({ connectionString: cluster.connectionString, max: 2 });
    },
    tearDown: async () => {
      await admin?.end();
      await cluster?.stop();
    },
    // Each store gets its own schema, so every test starts from empty tables.
    open: async () => new PostgresStore({ connectionString: url(), schema: `contract_${++count}` }),
    openSibling: async (store) =>
      new PostgresStore({ connectionString: url(), schema: (store as PostgresStore).schema }),
    damage: async (store, runId, seq, damage) => {
      const table = `"${(store as PostgresStore).schema}".quiver_events`;
      if (admin === undefined) throw new Error("the Postgres cluster is not running");
      await splitBatchRow(admin, table, runId, seq);
      if (damage.remove)
        await admin.query(`DELETE FROM ${table} WHERE run_id = $1 AND seq = $2`, [runId, seq]);
      if (damage.body !== undefined) {
        await admin.query(`UPDATE ${table} SET body = $3 WHERE run_id = $1 AND seq = $2`, [
          runId,
          seq,
          damage.body,
        ]);
      }
      if (damage.version !== undefined) {
        await admin.query(`UPDATE ${table} SET version = $3 WHERE run_id = $1 AND seq = $2`, [
          runId,
          seq,
          damage.version,
        ]);
      }
    },
  };
}

/** A `run_started` event: the first of every run. */
export function started(
  runId: string,
  options: { sessionId?: string; agent?: string; at?: number } = {},
): RunEvent {
  const { sessionId, agent = "assistant", at = 1_000 } = options;
  return {
    type: "run_started",
    runId,
    seq: 1,
    at,
    agent,
    input: [{ role: "user", content: "hi" }],
    ...(sessionId !== undefined && { sessionId }),
  };
}

/** A plain event at `seq` (a text delta unless another type is given). */
export function event(runId: string, seq: number, at = 1_000 + seq): RunEvent {
  return { type: "text_delta", runId, seq, at, agent: "assistant", delta: `delta ${seq}` };
}

export function completed(runId: string, seq: number, at = 1_000 + seq): RunEvent {
  return {
    type: "run_completed",
    runId,
    seq,
    at,
    agent: "assistant",
    output: "done",
    stopReason: "completed",
    usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3 },
  };
}

export function failed(runId: string, seq: number, at = 1_000 + seq): RunEvent {
  return {
    type: "run_failed",
    runId,
    seq,
    at,
    agent: "assistant",
    name: "UserError",
    message: "bad",
    kind: "user_error",
  };
}

/**
 * The row holding `seq` becomes one row per event when it holds several (PostgresStore puts an
 * append's plain events in one row: batch-rows.ts), so that a test damages that event alone.
 */
async function splitBatchRow(admin: pg.Pool, table: string, runId: string, seq: number): Promise<void> {
  const [batch] = (
    await admin.query(
      `SELECT seq, body FROM ${table} WHERE run_id = $1 AND seq >= $2 AND version = $3 ORDER BY seq LIMIT 1`,
      [runId, seq, BATCH_ROW_VERSION],
    )
  ).rows as Array<{ seq: number; body: string }>;
  if (batch === undefined) return;
  const events = JSON.parse(batch.body) as unknown[];
  const first = batch.seq - events.length + 1;
  if (first > seq) return;
  await admin.query(`DELETE FROM ${table} WHERE run_id = $1 AND seq = $2`, [runId, batch.seq]);
  await admin.query(
    `INSERT INTO ${table} (run_id, seq, version, body) SELECT $1, s, 1, b FROM unnest($2::int[], $3::text[]) AS e(s, b)`,
    [runId, events.map((_, i) => first + i), events.map((e) => JSON.stringify(e))],
  );
}
