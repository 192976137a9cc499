/**
 * A PostgreSQL that stops answering mid-run — frozen with SIGSTOP (a partition: sockets stay
 * open, nothing answers) or crashed with `pg_ctl stop -m immediate` — never hangs a run:
 * `result()` settles within a bound with a retryable StoreError, `cancel()` settles the
 * handle even while nothing answers, and once the database is back the run resumes from its
 * log without charging anyone twice.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { type RunHandle, Runner } from "quiver-agents";
import { PostgresStore, StoreError } from "quiver-agents/store";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { paymentsAgent } from "../fixtures/durability/payments-agent.js";
import { type PostgresCluster, startPostgresCluster } from "../store/postgres-cluster.js";

let cluster: PostgresCluster;
let dir: string;
let count = 0;
const opened: PostgresStore[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "quiver-pg-outage-"));
  cluster = await startPostgresCluster({ durable: true });
}, 60_000);
afterEach(async () => {
  cluster.unpause();
  await Promise.all(opened.splice(0).map((store) => store.close().catch(() => {})));
});
afterAll(async () => {
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function setUp(timeoutMs: number) {
  const schema = `outage_${++count}`;
  const open = () => {
    const store = new PostgresStore({ connectionString: cluster.connectionString, schema, timeoutMs });
    opened.push(store);
    return store;
  };
  const effects = join(dir, `${schema}.log`);
  writeFileSync(effects, "");
  return { open, effects, ran: () => readFileSync(effects, "utf8").split("\n").filter(Boolean) };
}

/** How long `handle.result()` takes to settle from now, and with what. */
async function settle(handle: RunHandle<unknown>) {
  const from = Date.now();
  const outcome = await handle.result().then(
    (value) => ({ value, error: undefined }),
    (error: unknown) => ({ value: undefined, error }),
  );
  return { ...outcome, ms: Date.now() - from };
}

/** Resumes once the database is back and checks nothing completed ran twice. */
async function resumeAfterwards(open: () => PostgresStore, runId: string, effects: string) {
  const agent = paymentsAgent({ effects });
  // The stalled driver (this process, alive) could not release its lease: wait for it to expire.
  const result = await Runner.resume(agent, runId, { store: open(), waitForLeaseMs: 15_000 }).result();
  expect(result).toMatchObject({ stopReason: "completed", output: "done" });
  return result;
}

describe("PostgresStore when the database stops answering", () => {
  it("a COMMIT that waits for a synchronous replica that is gone: what the run reports is what the store holds", async () => {
    const { open, effects, ran } = setUp(800);
    const store = open();
    const admin = new pg.Client({ connectionString: cluster.connectionString });
    await admin.connect();
    const requireReplica = async (on: boolean) => {
      await admin.query(
        on
          ? "ALTER SYSTEM SET synchronous_standby_names = 'gone_replica'"
          : "ALTER SYSTEM RESET synchronous_standby_names",
      );
      await admin.query("SELECT pg_reload_conf()");
    };
    try {
      const agent = paymentsAgent({
        effects,
        chargeGate: async (id) => {
          // From the last charge on, every COMMIT waits for a replica nobody runs.
          if (id === "c2") await requireReplica(true);
        },
      });
      const handle = Runner.stream(agent, "Charge order A1", { store, storeWaitMs: 6_000 });
      const back = setTimeout(() => void requireReplica(false), 2_500);
      const outcome = await settle(handle);
      clearTimeout(back);
      await requireReplica(false);
      // Whatever the run reports, the store says the same: no run told "failed, resumable" that
      // had in fact completed (a retry would charge again).
      const stored = await open().getRun(handle.runId);
      if (outcome.error) {
        expect(stored?.status).not.toBe("completed");
      } else {
        expect(outcome.value).toMatchObject({ stopReason: "completed", output: "done" });
        expect(stored?.status).toBe("completed");
      }
      expect(ran()).toEqual(["note:n1", "charge:c1", "charge:c2"]);
    } finally {
      await requireReplica(false).catch(() => {});
      await admin.end().catch(() => {});
    }
  });

  it("a connection terminated while an append waits (pg_terminate_backend): the process lives, the append is retried, the run completes", async () => {
    const { open, effects, ran } = setUp(5_000);
    const store = open();
    const schema = `outage_${count}`;
    const admin = new pg.Client({ connectionString: cluster.connectionString });
    await admin.connect();
    const locker = new pg.Client({ connectionString: cluster.connectionString });
    await locker.connect();
    try {
      let locked: Promise<void> = Promise.resolve();
      const agent = paymentsAgent({
        effects,
        chargeGate: async (id) => {
          // The charge is done; its result's append will wait behind this lock.
          if (id === "c1") {
            await locker.query("BEGIN");
            await locker.query(`LOCK TABLE "${schema}".quiver_events IN ACCESS EXCLUSIVE MODE`);
            locked = (async () => {
              // The store's backend waiting on the lock: that connection dies mid-statement.
              for (let i = 0; i < 200; i++) {
                const { rows } = await admin.query(
                  "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
                );
                if (rows.length) {
                  await admin.query("SELECT pg_terminate_backend($1)", [rows[0].pid]);
                  break;
                }
                await new Promise((r) => setTimeout(r, 10));
              }
              await locker.query("COMMIT");
            })();
          }
        },
      });
      const result = await Runner.run(agent, "Charge order A1", { store });
      await locked;
      expect(result).toMatchObject({ stopReason: "completed", output: "done" });
      expect(ran()).toEqual(["note:n1", "charge:c1", "charge:c2"]);
      expect((await store.getRun(result.runId))?.status).toBe("completed");
    } finally {
      await locker.end().catch(() => {});
      await admin.end().catch(() => {});
    }
  });

  it("SIGSTOP while a charge completes: the run fails within a bound, then resumes after SIGCONT", async () => {
    const { open, effects, ran } = setUp(1_000);
    const agent = paymentsAgent({
      effects,
      chargeGate: async (id) => {
        if (id === "c1") cluster.pause(); // the charge happened; storing its result will hang
      },
    });
    const handle = Runner.stream(agent, "Charge order A1", { store: open(), leaseTtlMs: 1_500 });
    const { error, ms } = await settle(handle);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).retryable).toBe(true);
    expect((error as Error).message).toMatch(/did not answer within 1000 ms|lease/);
    expect(ms).toBeLessThan(5_000);

    cluster.unpause();
    const result = await resumeAfterwards(open, handle.runId, effects);
    // c1's completion never reached the log: it may have happened, so it is not run again.
    expect(result.toolCalls.map((r) => r.error?.kind ?? "ok")).toEqual(["ok", "interrupted", "ok"]);
    expect(ran()).toEqual(["note:n1", "charge:c1", "charge:c2"]);
  });

  it("a lease renewal that gets no answer fails the run with a StoreError while a long call runs", async () => {
    const { open, effects } = setUp(800);
    let release = () => {};
    const agent = paymentsAgent({
      effects,
      chargeGate: (id) => {
        if (id !== "c1") return Promise.resolve();
        cluster.pause(); // nothing is appended while the charge runs; only renewals talk to the database
        return new Promise<void>((r) => {
          release = r;
        });
      },
    });
    const handle = Runner.stream(agent, "Charge order A1", { store: open(), leaseTtlMs: 1_200 });
    const { error, ms } = await settle(handle);
    release();
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toMatch(/renewing the lease|lease .*expired/);
    expect(ms).toBeLessThan(5_000);
  });

  it("cancel() settles the handle within a bound while the database is frozen, saying the log could not record it", async () => {
    // The default timeoutMs (10 s): only the handle's own bound can settle it this soon.
    const { open, effects } = setUp(10_000);
    let release = () => {};
    const agent = paymentsAgent({
      effects,
      chargeGate: (id) =>
        id === "c1"
          ? new Promise<void>((r) => {
              release = r;
            })
          : Promise.resolve(),
    });
    const handle = Runner.stream(agent, "Charge order A1", { store: open() });
    while (!readFileSync(effects, "utf8").includes("charge:c1")) await new Promise((r) => setTimeout(r, 10));
    cluster.pause();
    handle.cancel("the customer hung up");
    const { error, ms } = await settle(handle);
    release();
    expect(ms).toBeLessThan(4_000);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toMatch(/the customer hung up.*did not confirm the last events/);
  });

  it("pg_ctl stop -m immediate mid-run: the run fails at once with a retryable StoreError, and resumes after a restart", async () => {
    const { open, effects, ran } = setUp(2_000);
    const agent = paymentsAgent({
      effects,
      chargeGate: async (id) => {
        if (id === "c1") await cluster.crash();
      },
    });
    const handle = Runner.stream(agent, "Charge order A1", { store: open(), leaseTtlMs: 1_500 });
    const { error, ms } = await settle(handle);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).retryable).toBe(true);
    expect(ms).toBeLessThan(5_000);

    await cluster.restart();
    const result = await resumeAfterwards(open, handle.runId, effects);
    expect(result.toolCalls.map((r) => r.error?.kind ?? "ok")).toEqual(["ok", "interrupted", "ok"]);
    expect(ran()).toEqual(["note:n1", "charge:c1", "charge:c2"]);
  });
});
