/**
 * PostgresStore writes a run's later appends as one message (`BEGIN; <statement>`), its values
 * written into the SQL as quoted literals. Whatever text a run carries must come back exactly as
 * it went in, under either setting of `standard_conforming_strings`.
 */
import pg from "pg";
import type { RunEvent } from "quiver-agents";
import { LeaseConflict, PostgresStore, StoreError } from "quiver-agents/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { event, started } from "./harnesses.js";
import { type PostgresCluster, startPostgresCluster } from "./postgres-cluster.js";

let cluster: PostgresCluster;
beforeAll(async () => {
  cluster = await startPostgresCluster();
}, 60_000);
afterAll(() => cluster?.stop());

const AWKWARD = [
  "it's",
  "''",
  "\\",
  "back\\slash \\' and \\\\ two",
  "E'\\x41'",
  "$1 $2 $$ $tag$ dollar $tag$",
  "'); DROP TABLE quiver_events; --",
  "; COMMIT; SELECT 1; --",
  'line\nbreak\ttab\r"quotes"',
  "unicode: é ü 漢字 🎉 \u2028 \u{1F600}",
  "NULL",
  "",
];

function delta(runId: string, seq: number, text: string): RunEvent {
  return { type: "text_delta", runId, seq, at: 2_000 + seq, agent: "it's \\ an agent", delta: text };
}

describe("PostgresStore appends of awkward text", () => {
  for (const conforming of ["on", "off"]) {
    it(`store and read back every character (standard_conforming_strings ${conforming})`, async () => {
      const pool = new pg.Pool({
        connectionString: cluster.connectionString,
        options: `-c standard_conforming_strings=${conforming}`,
      });
      const store = new PostgresStore({ pool, schema: `awkward_${conforming}` });
      try {
        const runId = "run-awkward";
        const lease = await store.acquireLease(runId, "writer", 60_000);
        const sessionId = "session 'one' \\ two";
        const written: RunEvent[] = [{ ...started(runId, { sessionId, agent: "it's \\ an agent" }) }];
        await store.append(lease, written);
        // Every later append takes the one-message path; one event each, then a batch of all.
        let seq = 1;
        for (const text of AWKWARD) {
          const event = delta(runId, ++seq, text);
          written.push(event);
          await store.append(lease, [event]);
        }
        const batch = AWKWARD.map((text) => delta(runId, ++seq, text));
        written.push(...batch);
        await store.append(lease, batch);

        expect(await store.read(runId)).toEqual(written);
        const run = await store.getRun(runId);
        expect(run).toMatchObject({ sessionId, agent: "it's \\ an agent", lastSeq: seq });
        // The tables are all still there.
        expect(await store.listRuns()).toHaveLength(1);
      } finally {
        await store.close();
        await pool.end();
      }
    });
  }
});

describe("PostgresStore's first append to a run", () => {
  it("of a run another store wrote refuses a repeated seq and leaves the log as it was", async () => {
    const schema = "first_append_exists";
    const a = new PostgresStore({ connectionString: cluster.connectionString, schema });
    const b = new PostgresStore({ connectionString: cluster.connectionString, schema });
    try {
      const runId = "run-written-elsewhere";
      const leaseA = await a.acquireLease(runId, "a", 60_000);
      const written = [started(runId), event(runId, 2), event(runId, 3)];
      await a.append(leaseA, written);
      await a.releaseLease(leaseA);
      const leaseB = await b.acquireLease(runId, "b", 60_000);
      const error = await b.append(leaseB, [started(runId, { agent: "other" })]).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreError);
      expect((error as Error).message).toMatch(/repeats seq 1/);
      expect(await b.read(runId)).toEqual(written);
      await b.append(leaseB, [event(runId, 4)]);
      expect((await a.read(runId)).map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("without the lease writes nothing and says whose it is", async () => {
    const store = new PostgresStore({
      connectionString: cluster.connectionString,
      schema: "first_append_lease",
    });
    try {
      const runId = "run-not-ours";
      await store.acquireLease(runId, "holder", 60_000);
      const error = await store
        .append({ runId, owner: "intruder", expiresAt: Date.now() + 60_000 }, [started(runId)])
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LeaseConflict);
      expect(await store.getRun(runId)).toBeUndefined();
      expect(await store.read(runId)).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
