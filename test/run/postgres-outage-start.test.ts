/**
 * A PostgreSQL that is down (`pg_ctl stop -m immediate`) around the edges of a run: a run that
 * starts, or is resumed, while it is down waits for it (`storeWaitMs`) as an append does; and a
 * run the outage stopped holds nobody up once the database is back — not `Runner.recover`, not
 * the session's next message, not another process — although its process lives on.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, type RunHandle, Runner, ScriptedModel, UserError } from "quiver-agents";
import { PostgresStore, StoreError } from "quiver-agents/store";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { paymentsAgent } from "../fixtures/durability/payments-agent.js";
import { type PostgresCluster, startPostgresCluster } from "../store/postgres-cluster.js";

let cluster: PostgresCluster;
let dir: string;
let count = 0;
let down = false;
const opened: PostgresStore[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "quiver-pg-start-"));
  cluster = await startPostgresCluster({ durable: true });
}, 60_000);
afterEach(async () => {
  if (down) await cluster.restart();
  down = false;
  await Promise.all(opened.splice(0).map((store) => store.close().catch(() => {})));
});
afterAll(async () => {
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function crash() {
  await cluster.crash();
  down = true;
}
async function restart() {
  await cluster.restart();
  down = false;
}

/** A store on a schema of its own, its tables made while the database is up. */
async function setUp() {
  const schema = `start_${++count}`;
  const open = () => {
    const store = new PostgresStore({ connectionString: cluster.connectionString, schema, timeoutMs: 2_000 });
    opened.push(store);
    return store;
  };
  const effects = join(dir, `${schema}.log`);
  writeFileSync(effects, "");
  const store = open();
  await store.listRuns();
  return { store, open, effects, ran: () => readFileSync(effects, "utf8").split("\n").filter(Boolean) };
}

async function settle(handle: RunHandle<unknown>) {
  const from = Date.now();
  const outcome = await handle.result().then(
    (value) => ({ value, error: undefined }),
    (error: unknown) => ({ value: undefined, error }),
  );
  return { ...outcome, ms: Date.now() - from };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An agent that answers every message with "ok". */
const chatty = () =>
  new Agent({ name: "chatty", model: new ScriptedModel(Array.from({ length: 5 }, () => ({ text: "ok" }))) });

describe("a run that starts while Postgres is down", () => {
  it("waits for the database (storeWaitMs), then runs to its end, its session's history read", async () => {
    const { store, effects, ran } = await setUp();
    await crash();
    const handle = Runner.stream(paymentsAgent({ effects }), "Charge order A1", {
      store,
      sessionId: "s-start",
      storeWaitMs: 15_000,
    });
    const back = sleep(800).then(restart);
    const { value, error, ms } = await settle(handle);
    await back;
    expect(error).toBeUndefined();
    expect(value).toMatchObject({ stopReason: "completed", output: "done" });
    expect(ms).toBeGreaterThanOrEqual(700);
    expect(ran()).toEqual(["note:n1", "charge:c1", "charge:c2"]);
    expect((await store.getRun(handle.runId))?.status).toBe("completed");
  });

  it("Runner.resume while the database is down waits for it too", async () => {
    const { store, effects } = await setUp();
    const first = await Runner.run(paymentsAgent({ effects }), "Charge order A1", { store });
    await crash();
    const handle = Runner.resume(paymentsAgent({ effects }), first.runId, { store, storeWaitMs: 15_000 });
    const back = sleep(800).then(restart);
    const { value, error } = await settle(handle);
    await back;
    expect(error).toBeUndefined();
    expect(value).toMatchObject({ stopReason: "completed", output: "done" });
  });

  it("cancel() ends the wait: the handle settles soon after, with a retryable StoreError, and nothing is stored", async () => {
    const { store, effects } = await setUp();
    await crash();
    const handle = Runner.stream(paymentsAgent({ effects }), "Charge order A1", {
      store,
      storeWaitMs: 20_000,
    });
    setTimeout(() => handle.cancel("the user gave up"), 400);
    const { error, ms } = await settle(handle);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).retryable).toBe(true);
    expect(ms).toBeGreaterThanOrEqual(350);
    expect(ms).toBeLessThan(3_000);
    await restart();
    expect(await store.getRun(handle.runId)).toBeUndefined();
  });

  it("a failure that is not retryable (no such database) fails the run at once", async () => {
    const url = new URL(cluster.connectionString);
    url.pathname = "/no_such_database";
    const store = new PostgresStore({ connectionString: url.href, timeoutMs: 2_000 });
    opened.push(store);
    const handle = Runner.stream(chatty(), "hello", { store, storeWaitMs: 15_000 });
    const { error, ms } = await settle(handle);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).retryable).toBe(false);
    expect(ms).toBeLessThan(3_000);
  });
});

describe("after Postgres stopped a run, its process alive", () => {
  /** A run of session `sessionId` that the database going down stops inside its first charge. */
  async function stoppedRun(sessionId: string, whileDown?: (store: PostgresStore) => Promise<void>) {
    const set = await setUp();
    const agent = paymentsAgent({
      effects: set.effects,
      chargeGate: async (id) => {
        if (id === "c1") await crash();
      },
    });
    const handle = Runner.stream(agent, "Charge order A1", { store: set.store, sessionId, storeWaitMs: 500 });
    const { error } = await settle(handle);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).retryable).toBe(true);
    await whileDown?.(set.store);
    await restart();
    return { ...set, runId: handle.runId };
  }

  it("Runner.recover resumes the run as soon as the database is back, not a lease ttl (30 s) later", async () => {
    // Its store closed while the database is down, the stopped driver never gives its lease back:
    // this process knows that driver stopped, and does not wait for the lease to expire.
    const { open, effects, ran, runId } = await stoppedRun("s-recover", (store) => store.close());
    const store = open();
    const handles = await Runner.recover(store, { payments: paymentsAgent({ effects }) });
    expect(handles.map((h) => h.runId)).toEqual([runId]);
    const result = await handles[0]!.result();
    expect(result).toMatchObject({ stopReason: "completed", output: "done" });
    // c1 started and its completion was never stored: interrupted, not charged again.
    expect(result.toolCalls.map((r) => r.error?.kind ?? "ok")).toEqual(["ok", "interrupted", "ok"]);
    expect(ran()).toEqual(["note:n1", "charge:c1", "charge:c2"]);
  });

  it("the session's next message goes on at once, closing the stopped run", async () => {
    const { store, runId } = await stoppedRun("s-next");
    const next = await Runner.run(chatty(), "are you there?", { store, sessionId: "s-next" });
    expect(next).toMatchObject({ stopReason: "completed", output: "ok" });
    const closed = await Runner.resume(chatty(), runId, { store }).result();
    expect(closed.stopReason).toBe("cancelled");
  });

  it("another process finds the run and its session free once the database answers: the leases are given back", async () => {
    const { open, runId } = await stoppedRun("s-other");
    const other = open();
    const until = Date.now() + 8_000;
    let summary = await other.getRun(runId);
    while (summary?.leaseOwner !== undefined && Date.now() < until) {
      await sleep(100);
      summary = await other.getRun(runId);
    }
    expect(summary?.leaseOwner).toBeUndefined();
    // The session too: a lease another owner can take (a run elsewhere would).
    const session = await other.acquireLease("quiver.session:s-other", "elsewhere:1:0badc0de", 5_000);
    await other.releaseLease(session);
  });
});

describe("a session held by a driver with no run in progress", () => {
  it("the refusal says so, and does not claim a run is in progress", async () => {
    const { store } = await setUp();
    await Runner.run(chatty(), "hello", { store, sessionId: "s-held" });
    // Held by another machine's driver (say, one whose store failed before it let go).
    const held = await store.acquireLease("quiver.session:s-held", "elsewhere:1:0badc0de", 30_000);
    const refused = await Runner.run(chatty(), "again", { store, sessionId: "s-held" }).catch((e) => e);
    expect(refused).toBeInstanceOf(UserError);
    expect(refused.message).toMatch(
      /session s-held is held by another driver \(lease owner elsewhere:1:0badc0de/,
    );
    expect(refused.message).toMatch(/no run in progress/);
    expect(refused.message).not.toMatch(/has a run in progress/);
    await store.releaseLease(held);
  });
});
