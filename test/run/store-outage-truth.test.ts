/**
 * PostgreSQL goes away while a tool runs (`pg_ctl stop -m immediate`, then a restart on the same
 * data): what the caller is told must be what the store holds. Back within `storeWaitMs`, the
 * run's appends are retried and it completes; not back in time, the caller hears
 * `store_unavailable`, has seen no event the store lacks, and the run resumes later.
 */
import { Agent, type RunEvent, Runner, ScriptedModel, tool } from "quiver-agents";
import { PostgresStore, StoreError } from "quiver-agents/store";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type PostgresCluster, startPostgresCluster } from "../store/postgres-cluster.js";

let cluster: PostgresCluster;
let count = 0;
const opened: PostgresStore[] = [];

beforeAll(async () => {
  cluster = await startPostgresCluster({ durable: true });
}, 60_000);
afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close().catch(() => {})));
});
afterAll(async () => {
  await cluster?.stop();
});

function openStore(schema: string): PostgresStore {
  const store = new PostgresStore({ connectionString: cluster.connectionString, schema, timeoutMs: 1_000 });
  opened.push(store);
  return store;
}

/** An agent whose one tool takes the database down, waits, and finishes while it is still down. */
function outageAgent(downForMs: number, calls: string[]) {
  const slow = tool({
    name: "slow_export",
    description: "Export the ledger (slow).",
    parameters: z.object({}),
    execute: async () => {
      calls.push("slow_export");
      await cluster.crash();
      setTimeout(() => void cluster.restart(), downForMs);
      await new Promise((resolve) => setTimeout(resolve, 300));
      return "exported";
    },
  });
  return new Agent({
    name: "ledger",
    model: new ScriptedModel([
      { toolCalls: [{ id: "e1", name: "slow_export", args: {} }] },
      (req) => ({ text: req.messages.some((m) => m.role === "tool") ? "done" : "no result?" }),
      { text: "done" },
    ]),
    tools: [slow],
  });
}

const shape = (events: readonly RunEvent[]) => events.map((e) => `${e.seq}:${e.type}`);

describe("a store that goes away mid-run never hears of events it does not hold", () => {
  it("back within storeWaitMs: the appends are retried, the run completes, and the caller saw the stored log", async () => {
    const schema = `truth_${++count}`;
    const calls: string[] = [];
    const handle = Runner.stream(outageAgent(1_500, calls), "Export the ledger", {
      store: openStore(schema),
      storeWaitMs: 15_000,
    });
    const seen: RunEvent[] = [];
    for await (const event of handle) seen.push(event);
    const result = await handle.result();
    expect(result).toMatchObject({ stopReason: "completed", output: "done" });
    expect(calls).toEqual(["slow_export"]);
    const log = await openStore(schema).read(handle.runId);
    expect(shape(seen)).toEqual(shape(log));
    expect(await openStore(schema).getRun(handle.runId)).toMatchObject({ status: "completed" });
  }, 30_000);

  it("not back in time: store_unavailable, nothing seen that was not stored, and the run resumes once it is back", async () => {
    const schema = `truth_${++count}`;
    const calls: string[] = [];
    const agent = outageAgent(2_500, calls);
    const handle = Runner.stream(agent, "Export the ledger", {
      store: openStore(schema),
      storeWaitMs: 600,
      leaseTtlMs: 3_000,
    });
    const seen: RunEvent[] = [];
    const failure = await (async () => {
      for await (const event of handle) seen.push(event);
    })().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(StoreError);
    await expect(handle.result()).rejects.toMatchObject({ name: "StoreError", retryable: true });
    expect(seen.some((e) => e.type === "run_completed" || e.type === "tool_call_completed")).toBe(false);

    // Once the database is back, every event the caller saw is in the log, and nothing more ended.
    await waitUntil(async () => (await openStore(schema).getRun(handle.runId)) !== undefined);
    const log = await openStore(schema).read(handle.runId);
    expect(shape(log).slice(0, seen.length)).toEqual(shape(seen));
    expect(log.some((e) => e.type === "run_completed")).toBe(false);

    // Resumed: the export had started and is not idempotent, so it is reported interrupted, never run twice.
    const resumed = await Runner.resume(agent, handle.runId, {
      store: openStore(schema),
      waitForLeaseMs: 10_000,
    }).result();
    expect(resumed.stopReason).toBe("completed");
    expect(resumed.toolCalls.map((r) => r.error?.kind ?? "ok")).toEqual(["interrupted"]);
    expect(calls).toEqual(["slow_export"]);
  }, 40_000);
});

describe("a store that stops answering (frozen, its connections open)", () => {
  it("fails the run storeWaitMs after the unanswered append went out, not storeWaitMs after the store gave up on it", async () => {
    const schema = `truth_${++count}`;
    const store = new PostgresStore({ connectionString: cluster.connectionString, schema, timeoutMs: 4_000 });
    opened.push(store);
    let frozenAt = 0;
    const freeze = tool({
      name: "freeze",
      description: "Freezes the database.",
      parameters: z.object({}),
      execute: async () => {
        cluster.pause();
        frozenAt = Date.now();
        return "frozen";
      },
    });
    const agent = new Agent({
      name: "ledger",
      model: new ScriptedModel([{ toolCalls: [{ id: "f1", name: "freeze", args: {} }] }, { text: "done" }]),
      tools: [freeze],
    });
    const handle = Runner.stream(agent, "go", { store, storeWaitMs: 1_000 });
    const seen: RunEvent[] = [];
    try {
      const failure = await (async () => {
        for await (const event of handle) seen.push(event);
      })().catch((error: unknown) => error);
      const waited = Date.now() - frozenAt;
      expect(failure).toBeInstanceOf(StoreError);
      // The first append is answered only by the store's own timeout (4 s); by then the run has
      // waited its 1 s, so it fails at once, instead of waiting 1 s more of retries that each
      // hang for another 4 s (about 8 s before).
      expect(waited).toBeLessThan(6_500);
      expect(seen.some((e) => e.type === "tool_call_completed")).toBe(false);
    } finally {
      cluster.unpause();
    }
    await expect(handle.result()).rejects.toMatchObject({ name: "StoreError", retryable: true });
    const log = await openStore(schema).read(handle.runId);
    expect(shape(log).slice(0, seen.length)).toEqual(shape(seen));
  }, 40_000);
});

async function waitUntil(check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error("timed out waiting for the database");
}
