/**
 * What only PostgresStore does: separate pools (as separate processes have) racing on one
 * database, tables created on first use by many stores at once, pools owned by the caller.
 */
import pg from "pg";
import { UserError } from "quiver-agents";
import { LeaseConflict, PostgresStore, StoreError } from "quiver-agents/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { event, started } from "./harnesses.js";
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

  it("creates its tables once when many stores start on a new schema at the same moment", async () => {
    const stores = Array.from(
      { length: 6 },
      () => new PostgresStore({ connectionString: cluster.connectionString, schema: "Fresh Schema" }),
    );
    await Promise.all(stores.map((store, i) => store.putArtifact("r", `k${i}`, `v${i}`)));
    expect(await stores[0]?.getArtifact("r", "k5")).toBe("v5");
    await Promise.all(stores.map((store) => store.close()));
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
});
