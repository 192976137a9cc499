/**
 * What only PostgresStore does: separate pools (as separate processes have) racing on one
 * database, tables created on first use by many stores at once, pools owned by the caller.
 */
import pg from "pg";
import type { RunEvent } from "quiver-agents";
import { UserError } from "quiver-agents";
import { LeaseConflict, PostgresStore, StoreError } from "quiver-agents/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completed, event, failed, started } from "./harnesses.js";
import { type PostgresCluster, startPostgresCluster } from "./postgres-cluster.js";

let cluster: PostgresCluster;
beforeAll(async () => {
  cluster = await startPostgresCluster();
}, 60_000);
afterAll(() => cluster?.stop());

/** Two stores with their own pools on one schema: two processes, as far as Postgres can tell. */
async function twoProcesses<T>(
  schema: string,
  body: (a: PostgresStore, b: PostgresStore) => Promise<T>,
): Promise<T> {
  const a = new PostgresStore({ connectionString: cluster.connectionString, schema });
  const b = new PostgresStore({ connectionString: cluster.connectionString, schema });
  try {
    return await body(a, b);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
}

describe("PostgresStore", () => {
  it("notifies its events channel of each append with the run's last seq and status", async () => {
    const store = new PostgresStore({ connectionString: cluster.connectionString, schema: "notices" });
    const listener = new pg.Client({ connectionString: cluster.connectionString });
    await listener.connect();
    const notices: unknown[] = [];
    listener.on("notification", (n) => notices.push(JSON.parse(n.payload!)));
    try {
      await listener.query(`LISTEN "${store.eventsChannel}"`);
      const lease = await store.acquireLease("r", "w", 60_000);
      await store.append(lease, [started("r")]);
      await store.append(lease, [event("r", 2)]);
      // A large payload takes the general path: its notice says the same.
      await store.append(lease, [{ ...completed("r", 3), output: "x".repeat(100_000) } as RunEvent]);
      // Notices go out after their commits, batched: closing sends the ones still queued.
      await store.close();
      for (let i = 0; i < 100 && notices.length < 3; i++) await new Promise((r) => setTimeout(r, 10));
      expect(notices).toEqual([
        { runId: "r", lastSeq: 1, status: "running" },
        { runId: "r", lastSeq: 2, status: "running" },
        { runId: "r", lastSeq: 3, status: "completed" },
      ]);
    } finally {
      await listener.end();
      await store.close();
    }
  });

  it("appends while another transaction's notify holds Postgres's notify lock, and notifies once it is free", async () => {
    // PostgreSQL holds one cluster-wide lock from a notifying transaction's commit until it is
    // flushed and confirmed: here a transaction whose commit waits for a synchronous replica
    // nobody runs. An append that notified in its own transaction queued behind it until its
    // timeout; the store's connections do not wait for replicas (synchronous_commit off).
    const store = new PostgresStore({
      connectionString: cluster.connectionString,
      schema: "notify_lock",
      timeoutMs: 3_000,
    });
    const admin = new pg.Client({ connectionString: cluster.connectionString });
    const blocker = new pg.Client({ connectionString: cluster.connectionString });
    const listener = new pg.Client({ connectionString: cluster.connectionString });
    await Promise.all([admin.connect(), blocker.connect(), listener.connect()]);
    const notices: Array<{ lastSeq: number }> = [];
    listener.on("notification", (n) => notices.push(JSON.parse(n.payload!)));
    const requireReplica = async (on: boolean) => {
      await admin.query(
        on
          ? "ALTER SYSTEM SET synchronous_standby_names = 'gone_replica'"
          : "ALTER SYSTEM RESET synchronous_standby_names",
      );
      await admin.query("SELECT pg_reload_conf()");
    };
    let stuck: Promise<unknown> | undefined;
    try {
      await listener.query(`LISTEN "${store.eventsChannel}"`);
      const lease = await store.acquireLease("r", "me", 60_000);
      await store.append(lease, [started("r")]);
      await blocker.query("CREATE TABLE IF NOT EXISTS notify_lock_blocker (x integer)");
      await requireReplica(true);
      await blocker.query("SET synchronous_commit = on");
      await blocker.query("BEGIN");
      await blocker.query("INSERT INTO notify_lock_blocker VALUES (1)");
      await blocker.query("NOTIFY somewhere_else");
      stuck = blocker.query("COMMIT");
      for (let i = 0; i < 200; i++) {
        const { rows } = await admin.query("SELECT 1 FROM pg_stat_activity WHERE wait_event = 'SyncRep'");
        if (rows.length) break;
        await new Promise((r) => setTimeout(r, 10));
      }

      const began = Date.now();
      await store.append(lease, [event("r", 2)]);
      // A large payload takes the general path.
      await store.append(lease, [{ ...completed("r", 3), output: "x".repeat(100_000) } as RunEvent]);
      expect(Date.now() - began).toBeLessThan(2_000);
      expect((await store.read("r")).map((e) => e.seq)).toEqual([1, 2, 3]);

      await requireReplica(false);
      await stuck;
      for (let i = 0; i < 300 && notices.at(-1)?.lastSeq !== 3; i++)
        await new Promise((r) => setTimeout(r, 10));
      expect(notices.map((n) => n.lastSeq)).toEqual([1, 2, 3]);
    } finally {
      await requireReplica(false).catch(() => {});
      await stuck?.catch(() => {});
      await Promise.all([admin.end(), blocker.end(), listener.end()]);
      await store.close();
    }
  });

  it("gives each run's lease to exactly one of two stores racing for it", async () => {
    await twoProcesses("race_leases", async (a, b) => {
      const runs = Array.from({ length: 30 }, (_, i) => `run-${i}`);
      const outcomes = await Promise.allSettled(
        runs.flatMap((runId) => [a.acquireLease(runId, "a", 60_000), b.acquireLease(runId, "b", 60_000)]),
      );
      for (let i = 0; i < runs.length; i++) {
        const pair = [outcomes[2 * i], outcomes[2 * i + 1]];
        expect(pair.filter((o) => o?.status === "fulfilled")).toHaveLength(1);
        const lost = pair.find((o) => o?.status === "rejected");
        expect(lost?.status === "rejected" && lost.reason).toBeInstanceOf(LeaseConflict);
      }
    });
  });

  it("lets only one of two stores take over an expired lease", async () => {
    await twoProcesses("race_takeover", async (a, b) => {
      const runs = Array.from({ length: 10 }, (_, i) => `run-${i}`);
      for (const runId of runs) await a.acquireLease(runId, "crashed", 20);
      await new Promise((resolve) => setTimeout(resolve, 60));
      const outcomes = await Promise.allSettled(
        runs.flatMap((runId) => [a.acquireLease(runId, "a", 60_000), b.acquireLease(runId, "b", 60_000)]),
      );
      expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(runs.length);
    });
  });

  it("never lets two stores write the same seq", async () => {
    await twoProcesses("race_seq", async (a, b) => {
      // Both hold the (shared-owner) lease, so only the seq check and the primary key stand between them.
      const lease = await a.acquireLease("r", "shared", 60_000);
      await a.append(lease, [started("r")]);
      for (let seq = 2; seq < 22; seq++) {
        const outcomes = await Promise.allSettled([
          a.append(lease, [event("r", seq)]),
          b.append(lease, [event("r", seq)]),
        ]);
        expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
        const lost = outcomes.find((o) => o.status === "rejected");
        expect(lost?.status === "rejected" && lost.reason).toBeInstanceOf(StoreError);
      }
      expect((await b.read("r")).map((e) => e.seq)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
    });
  });

  it("never lets two stores append overlapping batches of events", async () => {
    await twoProcesses("race_batches", async (a, b) => {
      // An append of several plain events is one row under its last seq (batch-rows.ts), so two
      // batches starting at the same seq have different keys: the seq check alone keeps them apart.
      const lease = await a.acquireLease("r", "shared", 60_000);
      await a.append(lease, [started("r")]);
      let next = 2;
      for (let round = 0; round < 15; round++) {
        const batch = (size: number) => Array.from({ length: size }, (_, i) => event("r", next + i));
        const outcomes = await Promise.allSettled([a.append(lease, batch(2)), b.append(lease, batch(3))]);
        const won = outcomes.findIndex((o) => o.status === "fulfilled");
        expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
        next += won === 0 ? 2 : 3;
      }
      expect((await a.read("r")).map((e) => e.seq)).toEqual(
        Array.from({ length: next - 1 }, (_, i) => i + 1),
      );
      expect((await b.getRun("r"))?.lastSeq).toBe(next - 1);
    });
  });

  it("keeps an append's plain events in one row, and reads a log of such rows and rows of one event from any seq", async () => {
    const schema = "batch_rows";
    const store = new PostgresStore({ connectionString: cluster.connectionString, schema });
    const db = new pg.Client({ connectionString: cluster.connectionString });
    await db.connect();
    try {
      const lease = await store.acquireLease("r", "me", 60_000);
      const events: RunEvent[] = [started("r"), event("r", 2), event("r", 3)];
      await store.append(lease, events);
      events.push(event("r", 4));
      await store.append(lease, [event("r", 4)]);
      // A long output is a payload: its append keeps a row per event (versions 1 and 2).
      const general = [event("r", 5), { ...completed("r", 6), output: "y".repeat(5_000) } as RunEvent];
      await store.append(lease, general);
      events.push(...general);
      const rows = await db.query(`SELECT seq, version FROM "${schema}".quiver_events ORDER BY seq`);
      expect(rows.rows).toEqual([
        { seq: 3, version: 4 },
        { seq: 4, version: 1 },
        { seq: 5, version: 1 },
        { seq: 6, version: 2 },
      ]);
      for (let after = 0; after <= 6; after++) {
        expect(await store.read("r", after)).toEqual(events.slice(after));
      }
      // Another process reads the same.
      const other = new PostgresStore({ connectionString: cluster.connectionString, schema });
      expect(await other.read("r", 1)).toEqual(events.slice(1));
      await other.close();
    } finally {
      await db.end();
      await store.close();
    }
  });

  it("appends through its schema's append function, and goes on appending when the function is dropped", async () => {
    const schema = "append_fn";
    const store = new PostgresStore({ connectionString: cluster.connectionString, schema });
    const db = new pg.Client({ connectionString: cluster.connectionString });
    await db.connect();
    try {
      const lease = await store.acquireLease("r", "me", 60_000);
      await store.append(lease, [started("r")]);
      await store.append(lease, [event("r", 2)]);
      const functions = await db.query(
        "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1",
        [schema],
      );
      expect(functions.rows.map((r) => r.proname)).toEqual(["quiver_append_v3"]);

      // Dropped underneath a running store (a careless migration): nothing is lost or doubled.
      await db.query(`DROP FUNCTION "${schema}".quiver_append_v3`);
      await store.append(lease, [event("r", 3)]);
      await store.append(lease, [event("r", 4), completed("r", 5)]);
      expect((await store.read("r")).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
      expect((await store.getRun("r"))?.status).toBe("completed");
      // A store started later makes it again.
      const later = new PostgresStore({ connectionString: cluster.connectionString, schema });
      const other = await later.acquireLease("r2", "me", 60_000);
      await later.append(other, [started("r2")]);
      await later.append(other, [event("r2", 2)]);
      expect((await later.read("r2")).map((e) => e.seq)).toEqual([1, 2]);
      const again = await db.query(
        "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1",
        [schema],
      );
      expect(again.rows.map((r) => r.proname)).toEqual(["quiver_append_v3"]);
      await later.close();
    } finally {
      await db.end();
      await store.close();
    }
  });

  it("creates its tables once when many stores start on a new schema at the same moment", async () => {
    const stores = Array.from(
      { length: 6 },
      () => new PostgresStore({ connectionString: cluster.connectionString, schema: "Fresh Schema" }),
    );
    await Promise.all(stores.map((store, i) => store.putArtifact("r", `k${i}`, `v${i}`)));
    expect(await stores[0]?.getArtifact("r", "k5")).toBe("v5");
    await Promise.all(stores.map((store) => store.close()));
  });

  it("gives tables made before runs kept their failure kind or stored order the columns, and summaries that agree with their logs", async () => {
    // The tables as PostgresStore created them before failure_kind, when a run stopped by its
    // store was kept `running`.
    const pool = new pg.Pool({ connectionString: cluster.connectionString, max: 2 });
    await pool.query(`
      CREATE SCHEMA old_tables;
      CREATE TABLE old_tables.quiver_runs (
        run_id text PRIMARY KEY, session_id text, parent_run_id text, agent text NOT NULL, started_at bigint NOT NULL,
        updated_at bigint NOT NULL, last_seq integer NOT NULL, status text NOT NULL);
      CREATE INDEX quiver_runs_by_session ON old_tables.quiver_runs (session_id, started_at);
      CREATE TABLE old_tables.quiver_events (
        run_id text NOT NULL, seq integer NOT NULL, version integer NOT NULL, body text NOT NULL,
        PRIMARY KEY (run_id, seq));
      CREATE TABLE old_tables.quiver_leases (run_id text PRIMARY KEY, owner text NOT NULL, expires_at bigint NOT NULL);
      CREATE TABLE old_tables.quiver_artifacts (
        run_id text NOT NULL, key text NOT NULL, text bytea NOT NULL, PRIMARY KEY (run_id, key));`);
    const outage = { ...failed("outage", 2), kind: "store_unavailable" } as RunEvent;
    const runs: Array<[string, string, RunEvent[]]> = [
      ["outage", "running", [started("outage", { at: 1 }), outage]],
      ["broken", "failed", [started("broken", { at: 2 }), failed("broken", 2)]],
      ["done", "completed", [started("done", { at: 3 }), completed("done", 2)]],
      ["crashed", "running", [started("crashed", { at: 4 })]],
    ];
    for (const [runId, status, events] of runs) {
      await pool.query(
        `INSERT INTO old_tables.quiver_runs (run_id, agent, started_at, updated_at, last_seq, status)
         VALUES ($1, 'assistant', $2, $2, $3, $4)`,
        [runId, events[0]!.at, events.length, status],
      );
      for (const e of events)
        await pool.query("INSERT INTO old_tables.quiver_events VALUES ($1, $2, 1, $3)", [
          runId,
          e.seq,
          JSON.stringify(e),
        ]);
    }
    // Several processes start on the old tables at once: the column is added once.
    const stores = Array.from(
      { length: 3 },
      () => new PostgresStore({ connectionString: cluster.connectionString, schema: "old_tables" }),
    );
    const answers = await Promise.all(stores.map((store) => store.getRun("outage")));
    for (const summary of answers)
      expect(summary).toMatchObject({ status: "failed", failureKind: "store_unavailable", lastSeq: 2 });
    const [store] = stores;
    expect(await store!.getRun("broken")).toMatchObject({ status: "failed", failureKind: "user_error" });
    expect(await store!.getRun("done")).not.toHaveProperty("failureKind");
    expect((await store!.listRuns({ status: "running" })).map((r) => r.runId)).toEqual(["crashed"]);
    expect(await store!.read("outage")).toEqual([started("outage", { at: 1 }), outage]);
    // An older Quiver's insert names its columns: it still works beside the new one.
    await pool.query(
      `INSERT INTO old_tables.quiver_runs (run_id, agent, started_at, updated_at, last_seq, status)
       VALUES ('older', 'assistant', 9, 9, 0, 'running')`,
    );
    expect(await store!.getRun("older")).toMatchObject({ status: "running" });
    // Runs started in the same millisecond as the older Quiver's list in the order they were stored.
    for (const runId of ["z-newer", "a-newest"]) {
      const lease = await store!.acquireLease(runId, "writer", 60_000);
      await store!.append(lease, [started(runId, { at: 9 })]);
    }
    expect((await store!.listRuns()).map((r) => r.runId)).toEqual([
      "outage",
      "broken",
      "done",
      "crashed",
      "older",
      "z-newer",
      "a-newest",
    ]);
    await Promise.all(stores.map((s) => s.close()));
    await pool.end();
  });

  it("uses a pool it is given and leaves closing it to its owner", async () => {
    const pool = new pg.Pool({ connectionString: cluster.connectionString, max: 2 });
    const store = new PostgresStore({ pool, schema: "given_pool" });
    const lease = await store.acquireLease("r", "w", 60_000);
    await store.append(lease, [started("r")]);
    await store.close();
    await expect(store.read("r")).rejects.toThrow(/closed/);
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM "given_pool".quiver_events');
    expect(rows[0].n).toBe(1);
    await pool.end();
  });

  it("reports an unreachable database as a StoreError saying what it was doing", async () => {
    const store = new PostgresStore({ connectionString: "postgresql://quiver@127.0.0.1:1/postgres" });
    const error = await store.read("r").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toMatch(
      /^reading events for run r failed: could not set up the tables in schema public: connect ECONNREFUSED/,
    );
    await store.close();
  });

  it("needs a connection string or a pool", () => {
    expect(() => new PostgresStore({} as never)).toThrow(UserError);
    expect(() => new PostgresStore({ connectionString: cluster.connectionString, schema: "" })).toThrow(
      StoreError,
    );
  });

  it("keeps a payload a session's runs share once, and deletes it with the session", async () => {
    const schema = "session_payloads";
    const store = new PostgresStore({ connectionString: cluster.connectionString, schema });
    const args = { document: "x".repeat(50_000) };
    const call = { id: "c1", name: "upload", args };
    try {
      for (const runId of ["r1", "r2", "r3"]) {
        const lease = await store.acquireLease(runId, "writer", 60_000);
        const events: RunEvent[] = [
          started(runId, { sessionId: "chat" }),
          { type: "tool_call_requested", runId, seq: 2, at: 2, agent: "assistant", call, index: 0 },
        ];
        await store.append(lease, events);
        expect(await store.read(runId)).toEqual(events);
      }
      const db = new pg.Client({ connectionString: cluster.connectionString });
      await db.connect();
      try {
        const count = async () =>
          Number((await db.query(`SELECT count(*) AS n FROM "${schema}".quiver_artifacts`)).rows[0].n);
        expect(await count()).toBe(1);
        await store.clearSession("chat");
        expect(await count()).toBe(0);
      } finally {
        await db.end();
      }
    } finally {
      await store.close();
    }
  });
});
