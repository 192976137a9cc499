/**
 * PostgresStore's append commits on its own, in one round trip, holding itself to a deadline on
 * the database's clock: a database that thaws after the store gave up on an append must not
 * store it, since the store has already reported it lost.
 */
import pg from "pg";
import { PostgresStore, StoreError } from "quiver-agents/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { event, started } from "./harnesses.js";
import { type PostgresCluster, startPostgresCluster } from "./postgres-cluster.js";

let cluster: PostgresCluster;
beforeAll(async () => {
  cluster = await startPostgresCluster();
}, 60_000);
afterAll(() => cluster?.stop());

/** A pool that records the statements its connections are sent (each is one round trip). */
function recordingPool() {
  const pool = new pg.Pool({ connectionString: cluster.connectionString });
  // As pg asks of every pool: an idle connection the server drops is reported here.
  pool.on("error", () => {});
  const sent: string[] = [];
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = (text: unknown, ...rest: unknown[]) => {
      sent.push(typeof text === "string" ? text : String((text as { text?: string }).text));
      return query(text, ...rest);
    };
  });
  return { pool, sent };
}

/** Resolves once `pool` has no connection in use or asked for (pg-pool hands one out on the next tick). */
async function settled(pool: pg.Pool): Promise<void> {
  for (let i = 0; i < 500 && (pool.waitingCount > 0 || pool.idleCount < pool.totalCount); i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("PostgresStore's append", () => {
  it("is one statement, with no BEGIN or COMMIT, once the store has read the database's clock", async () => {
    const { pool, sent } = recordingPool();
    const store = new PostgresStore({ pool, schema: "one_trip" });
    try {
      const lease = await store.acquireLease("r", "me", 60_000);
      sent.length = 0;
      await store.append(lease, [started("r")]);
      await store.append(lease, [event("r", 2)]);
      await store.append(lease, [event("r", 3), event("r", 4)]);
      const appends = sent.filter((text) => !text.includes("pg_notify"));
      expect(appends).toHaveLength(3);
      for (const text of appends) expect(text).toMatch(/^SELECT "one_trip"\.quiver_append_v3\(/);
      expect((await store.read("r")).map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    } finally {
      await store.close();
      await pool.end();
    }
  });

  it("sent to a frozen database is never stored once the store has given up on it", async () => {
    const { pool, sent } = recordingPool();
    const store = new PostgresStore({ pool, schema: "too_late", timeoutMs: 400 });
    try {
      const lease = await store.acquireLease("r", "me", 60_000);
      await store.append(lease, [started("r")]);
      // The first append's notice is sent on a connection of its own: once every connection is
      // back in the pool, the next append finds one open and sends its statement to the frozen
      // server (a new connection would wait for the frozen server's handshake instead).
      await settled(pool);
      cluster.pause();
      sent.length = 0;
      try {
        const since = Date.now();
        const error = await store.append(lease, [event("r", 2)]).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(StoreError);
        expect((error as StoreError).retryable).toBe(true);
        expect(Date.now() - since).toBeLessThan(2_000);
        expect(sent[0]).toMatch(/^SELECT "too_late"\.quiver_append_v3\(/);
      } finally {
        cluster.unpause();
      }
      // The thawed server now reads the append that was sent to it, past its deadline.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect((await store.read("r")).map((e) => e.seq)).toEqual([1]);
      expect((await store.getRun("r"))?.lastSeq).toBe(1);
      // The store goes on: the retried append is stored once.
      await store.append(lease, [event("r", 2)]);
      await store.append(lease, [event("r", 3)]);
      expect((await store.read("r")).map((e) => e.seq)).toEqual([1, 2, 3]);
    } finally {
      await store.close();
      await pool.end();
    }
  }, 20_000);

  it("reads the database's clock afresh after its connections were lost, before it commits on its own again", async () => {
    const { pool, sent } = recordingPool();
    const store = new PostgresStore({ pool, schema: "new_connection" });
    const admin = new pg.Client({ connectionString: cluster.connectionString });
    await admin.connect();
    try {
      const lease = await store.acquireLease("r", "me", 60_000);
      await store.append(lease, [started("r")]);
      await settled(pool);
      // The server drops every connection of the store's pool, as a failover would: the next
      // connection may reach a server whose clock differs.
      await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE pid <> pg_backend_pid() AND datname = current_database() AND backend_type = 'client backend'`,
      );
      for (let i = 0; i < 500 && pool.totalCount > 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(pool.totalCount).toBe(0);
      sent.length = 0;
      await store.append(lease, [event("r", 2)]);
      await store.append(lease, [event("r", 3)]);
      expect(sent.filter((text) => !text.includes("pg_notify"))).toEqual([
        expect.stringMatching(/^BEGIN; SELECT "new_connection"\.quiver_append_v3\(/),
        "COMMIT",
        expect.stringMatching(/^SELECT "new_connection"\.quiver_append_v3\(/),
      ]);
      expect((await store.read("r")).map((e) => e.seq)).toEqual([1, 2, 3]);
      // Stores made on the pool and never closed (one per request, say) share one listener.
      const listeners = pool.listenerCount("error");
      for (let i = 0; i < 20; i++) new PostgresStore({ pool, schema: "new_connection" });
      expect(pool.listenerCount("error")).toBe(listeners);
    } finally {
      await admin.end();
      await store.close();
      await pool.end();
    }
  });
});
