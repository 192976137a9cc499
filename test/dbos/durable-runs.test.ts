import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { DBOSClient } from "@dbos-inc/dbos-sdk";
import { type DurableRuns, durableRuns } from "quiver-agents/dbos";
import { PostgresStore } from "quiver-agents/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PostgresCluster, startPostgresCluster } from "../store/postgres-cluster.js";

const root = resolve(import.meta.dirname, "../..");
const workerScript = join(root, "test/dbos/worker.ts");

let cluster: PostgresCluster;
let dir: string;
let effects: string;
let store: PostgresStore;
let client: DBOSClient;
let runs: DurableRuns;
const workers = new Map<string, ChildProcess>();

/**
 * Starts a worker process with a pinned executor id and waits until it serves the queue. Only
 * worker-a reaps (after 4 s of silence): when worker-a is killed and restarted, nothing but its
 * own restart can recover its runs.
 */
function startWorker(executorId: string): Promise<ChildProcess> {
  const silentMs = executorId === "worker-a" ? "4000" : "600000";
  const child = spawn(process.execPath, ["--import", "tsx", workerScript], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: cluster.connectionString,
      EXECUTOR_ID: executorId,
      EFFECTS: effects,
      SILENT_MS: silentMs,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  workers.set(executorId, child);
  let stderr = "";
  child.stderr!.on("data", (chunk) => {
    stderr += chunk;
    if (process.env.DEBUG_WORKERS) process.stderr.write(`[${executorId}] ${chunk}`);
  });
  return new Promise((done, fail) => {
    const timer = setTimeout(
      () => fail(new Error(`worker ${executorId} not ready in 30 s: ${stderr}`)),
      30_000,
    );
    child.stdout!.on("data", (chunk) => {
      if (String(chunk).includes("ready")) {
        clearTimeout(timer);
        done(child);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      fail(new Error(`worker ${executorId} exited (${code}): ${stderr}`));
    });
  });
}

function kill(executorId: string): Promise<void> {
  const child = workers.get(executorId)!;
  workers.delete(executorId);
  return new Promise((done) => {
    child.once("exit", () => done());
    child.kill("SIGKILL");
  });
}

const lines = () => readFileSync(effects, "utf8").split("\n").filter(Boolean);

async function until<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  ms = 20_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value as T;
    if (Date.now() > deadline) {
      const states = await client.listWorkflows({ limit: 5 });
      throw new Error(
        `timed out waiting for ${what}; effects: ${lines().slice(-6).join(" | ")}; workflows: ${JSON.stringify(states.map((w) => [w.workflowID, w.status, w.executorId, w.error]))}`,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "quiver-dbos-"));
  effects = join(dir, "effects.log");
  writeFileSync(effects, "");
  cluster = await startPostgresCluster({ durable: true });
  // One launch at a time: the first creates DBOS's tables.
  await startWorker("worker-a");
  await startWorker("worker-b");
  store = new PostgresStore({ connectionString: cluster.connectionString });
  // The test process plays the web tier: it never launches DBOS.
  client = await DBOSClient.create({ systemDatabaseUrl: cluster.connectionString });
  runs = durableRuns({ store, client, databaseUrl: cluster.connectionString });
}, 60_000);

afterAll(async () => {
  for (const id of [...workers.keys()]) await kill(id);
  await runs?.close();
  await client?.destroy();
  await store?.close();
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 30_000);

/** Per run: how often its non-idempotent call started and completed, by the effects file. */
function callsOf(runId: string) {
  const mine = lines().filter((line) => line.split(" ")[1] === runId);
  return {
    started: mine.filter((l) => l.startsWith("start ")).length,
    done: mine.filter((l) => l.startsWith("done ")).length,
  };
}

/**
 * A run's non-idempotent call started at most once. It may never have started: a worker killed
 * after the write-ahead `tool_call_started` committed and before the tool's first line leaves a
 * call that recovery must not run again, and the log then says it was interrupted.
 */
async function expectStartedAtMostOnce(runId: string): Promise<void> {
  const { started } = callsOf(runId);
  expect(started, runId).toBeLessThanOrEqual(1);
  if (started === 0) {
    const events = await store.read(runId);
    expect(
      events.some((e) => e.type === "tool_call_completed" && e.error?.kind === "interrupted"),
      runId,
    ).toBe(true);
  }
}

/** For `until`: true once the store lists the run as parked. */
function parkedRun(runId: string): () => Promise<true | undefined> {
  return async () => ((await store.getRun(runId))?.status === "parked" ? true : undefined);
}

async function toolOutput(runId: string): Promise<string | undefined> {
  const events = await store.read(runId);
  const completed = events.find((e) => e.type === "tool_call_completed");
  return completed?.type === "tool_call_completed" ? completed.output : undefined;
}

describe("quiver-agents/dbos with two worker processes", () => {
  it("finishes 20 runs when a worker is SIGKILLed mid-call and restarted: no call runs twice", async () => {
    const ids = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        runs.start("biller", `bill customer ${i}`, { sessionId: `s-${i}` }),
      ),
    );
    // Starting an id again starts nothing.
    expect(await runs.start("biller", "bill again", { runId: ids[0] })).toBe(ids[0]);
    // Kill worker-a once one of its calls completed and another has started but not finished.
    await until("worker-a mid-call after a completed call", () => {
      const a = lines().filter((l) => l.endsWith(" worker-a"));
      const done = new Set(a.filter((l) => l.startsWith("done ")).map((l) => l.split(" ")[1]));
      return done.size > 0 && a.some((l) => l.startsWith("start ") && !done.has(l.split(" ")[1]));
    });
    await kill("worker-a");
    // Cut off: worker-b does not hold the run, and its log has the call started and not completed.
    // That includes a call whose tool finished (its "done" is in the effects file) just before
    // the kill stored its completion.
    const workerB = String(workers.get("worker-b")!.pid);
    const cutOff: string[] = [];
    for (const id of ids) {
      // The holder first: a run of worker-b's that completes in between shows completed below.
      if ((await store.getRun(id))?.leaseOwner?.split(":")[1] === workerB) continue;
      const types = (await store.read(id)).map((e) => e.type);
      if (types.includes("tool_call_started") && !types.includes("tool_call_completed")) cutOff.push(id);
    }
    expect(cutOff.length).toBeGreaterThan(0);
    await startWorker("worker-a"); // same executor id: DBOS recovers its runs at launch

    const results = await Promise.all(ids.map((id) => runs.result(id, { timeoutMs: 45_000 })));
    for (const [i, result] of results.entries()) {
      expect(result.stopReason, ids[i]).toBe("completed");
      // No call started twice: none completed re-ran, none cut off re-ran.
      await expectStartedAtMostOnce(ids[i]!);
      const summary = await store.getRun(ids[i]!);
      expect(summary?.status).toBe("completed");
    }
    // The restarted worker's launch recovers them (same executor id) by putting them back on
    // their queue, so either live worker may finish them; none is left to the dead process.
    for (const state of await client.listWorkflows({ workflowIDs: cutOff })) {
      expect(["worker-a", "worker-b"]).toContain(state.executorId);
      expect(state.status).toBe("SUCCESS");
    }
    // A run that was not cut off mid-call has the log of an uninterrupted run: a resume adds
    // only its marker, and a model turn cut off before its answer was stored is asked again
    // (its turn_started shows twice).
    const shape = async (id: string) =>
      (await store.read(id))
        .filter((e) => e.type !== "run_resumed")
        .map((e) => (e.type === "tool_call_completed" ? `${e.type}:${e.output}` : e.type))
        .filter((type, i, all) => !(type === "turn_started" && all[i + 1] === "turn_started"));
    const uninterrupted = await shape(ids.find((id) => !cutOff.includes(id))!);
    expect(uninterrupted).toContain("tool_call_completed:charged 500");
    for (const id of ids) {
      if (!cutOff.includes(id)) expect(await shape(id), id).toEqual(uninterrupted);
      if (cutOff.includes(id)) {
        // The model was told the call was interrupted, as an uninterrupted log never says.
        expect(
          (await store.read(id)).some(
            (e) => e.type === "tool_call_completed" && e.error?.kind === "interrupted",
          ),
        ).toBe(true);
      } else {
        expect(await toolOutput(id)).toBe("charged 500");
        expect(results[ids.indexOf(id)]!.output as string).toBe("finished: charged 500");
      }
    }
  }, 60_000);

  it("moves a dead worker's runs to the other worker through the reaper", async () => {
    const ids = await Promise.all(
      Array.from({ length: 6 }, (_, i) => runs.start("biller", `bill reaped ${i}`, { sessionId: `r-${i}` })),
    );
    await until("a call started on worker-b", () =>
      lines().some(
        (l) => l.startsWith("start ") && l.endsWith(" worker-b") && ids.includes(l.split(" ")[1]!),
      ),
    );
    await kill("worker-b"); // never restarted: worker-a's reaper takes its runs after 4 s of silence
    const results = await Promise.all(ids.map((id) => runs.result(id, { timeoutMs: 30_000 })));
    for (const [i, result] of results.entries()) {
      expect(result.stopReason).toBe("completed");
      await expectStartedAtMostOnce(ids[i]!);
    }
    const finishedOnB = lines().filter((l) => l.endsWith(" worker-b") && ids.includes(l.split(" ")[1]!));
    const cutOffOnB = ids.filter(
      (id) => finishedOnB.includes(`start ${id} worker-b`) && callsOf(id).done === 0,
    );
    expect(cutOffOnB.length).toBeGreaterThan(0);
    const states = await client.listWorkflows({ workflowIDs: cutOffOnB });
    for (const state of states) expect(state.executorId).toBe("worker-a");
    await startWorker("worker-b");
  }, 45_000);

  it("an approval parked on a worker is decided from a third process and the run finishes", async () => {
    const runId = await runs.start("refunder", "refund the customer");
    const parked = await until("the run to park", parkedRun(runId));
    expect(parked).toBe(true);
    await expect(runs.decide(runId, "no-such-call", true)).rejects.toThrow(/no call no-such-call waiting/);
    await runs.decide(runId, "c1", { approved: true, reason: "fine" });
    const result = await runs.result(runId, { timeoutMs: 20_000 });
    expect(result.stopReason).toBe("completed");
    expect(result.output).toBe("finished: refunded 700");
    expect(lines().filter((l) => l.startsWith(`refund ${runId} `))).toHaveLength(1);
    // The drive that parked is checkpointed, so that a replay goes on from where it parked.
    const steps = (await client.listWorkflowSteps(runId))?.map((step) => step.name);
    expect(steps?.[0]).toBe("drive");
    expect(steps).toContain("decide");
  }, 30_000);

  it("drives a run that never parks outside a DBOS step: DBOS checkpoints nothing but the workflow", async () => {
    // A step costs DBOS two transactions around it; the run's own log already holds what it did.
    const runId = await runs.start("biller", "bill one customer");
    const result = await runs.result(runId, { timeoutMs: 20_000 });
    expect(result).toMatchObject({ stopReason: "completed" });
    expect(lines().filter((l) => l.startsWith(`done ${runId} `))).toHaveLength(1);
    expect(await client.listWorkflowSteps(runId)).toEqual([]);
    expect((await client.getWorkflow(runId))?.status).toBe("SUCCESS");
  }, 30_000);

  it("a question asked on a worker is answered from a third process and the run goes on with the answer", async () => {
    const runId = await runs.start("planner", "plan a trip");
    await until("the run to park on its question", parkedRun(runId));
    // The question is in the log, for any process to show.
    const asked = (await store.read(runId)).find((e) => e.type === "approval_required");
    expect(asked?.type === "approval_required" && asked.details).toEqual({
      kind: "ask_human",
      question: "Which city?",
      options: [{ label: "Kyoto" }, { label: "Osaka" }],
      multiSelect: false,
    });
    await expect(runs.answer(runId, "no-such-call", "Kyoto")).rejects.toThrow(/no question no-such-call/);
    await expect(runs.decide(runId, "q1", true)).rejects.toThrow(/asks a question.*answer\(/);
    await runs.answer(runId, "q1", "Kyoto");
    const result = await runs.result(runId, { timeoutMs: 20_000 });
    expect(result.stopReason).toBe("completed");
    expect(result.output).toBe("planning Kyoto");
    const events = await store.read(runId);
    const completed = events.find((e) => e.type === "tool_call_completed");
    expect(completed?.type === "tool_call_completed" && [completed.ok, completed.output]).toEqual([
      true,
      "Kyoto",
    ]);
    // The model read the answer as the call's result.
    const toolMessage = events.find((e) => e.type === "message" && e.message.role === "tool");
    expect(toolMessage?.type === "message" && toolMessage.message.content).toBe("Kyoto");
    await expect(runs.answer(runId, "q1", "Osaka")).rejects.toThrow(/no question q1/);
    expect((await store.getRun(runId))?.status).toBe("completed");
  }, 30_000);

  it("a turn with an approval and then a question parks twice and goes on after both", async () => {
    const runId = await runs.start("mixer", "refund and explain");
    const parkedOn = (callId: string) => async () => {
      if ((await store.getRun(runId))?.status !== "parked") return undefined;
      return (await store.read(runId)).some((e) => e.type === "approval_required" && e.call.id === callId)
        ? true
        : undefined;
    };
    // ask_human is a barrier: it is asked only once the approval before it is decided.
    await until("the run to park on the approval", parkedOn("c1"));
    await expect(runs.answer(runId, "c1", "yes")).rejects.toThrow(/no question c1/);
    await expect(runs.answer(runId, "q1", "too early")).rejects.toThrow(/no question q1/);
    const decidedAt = Date.now();
    await runs.decide(runId, "c1", true);
    await until("the run to park on the question", parkedOn("q1"));
    // The workflow did not sit out its 60 s wait for a decision on the question it had not asked.
    expect(Date.now() - decidedAt).toBeLessThan(10_000);
    await runs.answer(runId, "q1", "the parcel was lost");
    const result = await runs.result(runId, { timeoutMs: 20_000 });
    expect(result.stopReason).toBe("completed");
    expect(result.output).toBe("refunded 300 / the parcel was lost");
    expect(lines().filter((l) => l.startsWith(`refund ${runId} `))).toHaveLength(1);
  }, 30_000);

  it("cancelling a parked run ends it in the log too: the store lists it as DBOS does", async () => {
    const runId = await runs.start("refunder", "refund the customer again");
    await until("the run to park", parkedRun(runId));
    await runs.cancel(runId);
    expect((await client.getWorkflow(runId))?.status).toBe("CANCELLED");
    const summary = await store.getRun(runId);
    expect(summary?.status).toBe("completed");
    expect((await store.listRuns({ status: "parked" })).map((r) => r.runId)).not.toContain(runId);
    const events = await store.read(runId);
    const end = events.at(-1);
    expect(end?.type === "run_completed" && end.stopReason).toBe("cancelled");
    // The waiting call never ran, and says so, as a cancelled resume records it.
    const skipped = events.find((e) => e.type === "tool_call_completed");
    expect(skipped?.type === "tool_call_completed" && skipped.error?.kind).toBe("skipped");
    expect((await runs.result(runId, { timeoutMs: 5_000 })).stopReason).toBe("cancelled");
    // A decision sent now reaches nothing: the call no longer waits.
    await expect(runs.decide(runId, "c1", true)).rejects.toThrow(/no call c1 waiting/);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(lines().filter((l) => l.startsWith(`refund ${runId} `))).toHaveLength(0);
    expect((await store.read(runId)).length).toBe(events.length);
  }, 30_000);

  it("result() answers as soon as a run's workflow ends, not at its next poll", async () => {
    // With the store's database, the store's notice of a run's last append sends result() to
    // look the workflow up within milliseconds; by polling alone (every 100 ms) the answer comes
    // 0–100 ms after the end, so ten of twelve under 40 ms would be luck (0.3 %). Two may be
    // slow: a loaded machine delays a notice now and then.
    const lags: number[] = [];
    for (let i = 0; i < 12; i++) {
      const runId = await runs.start("biller", "charge me");
      const result = await runs.result(runId, { timeoutMs: 15_000 });
      const answeredAt = Date.now();
      expect(result.stopReason).toBe("completed");
      const ended = await client.getWorkflow(runId);
      lags.push(answeredAt - Number(ended!.updatedAt));
    }
    const prompt = lags.filter((ms) => ms < 40).length;
    expect(prompt, `ms from each workflow's end to its result(): ${lags.join(", ")}`).toBeGreaterThanOrEqual(
      10,
    );
  }, 40_000);

  it("close() does not wait for result() calls still waiting: they go on by polling", async () => {
    const other = durableRuns({ store, client, databaseUrl: cluster.connectionString });
    // No such workflow: the wait lasts its whole timeout, listening meanwhile.
    const waiting = other.result("no-such-run", { timeoutMs: 3_000 }).catch((error: Error) => error);
    await new Promise((r) => setTimeout(r, 300));
    const closing = Date.now();
    await other.close();
    expect(Date.now() - closing).toBeLessThan(1_500);
    expect(String(await waiting)).toMatch(/did not finish within 3000 ms/);
  }, 15_000);

  it("follows a run's events from a third process and cancels it there", async () => {
    const runId = await runs.start("waiter", "wait for me");
    const seen: string[] = [];
    const following = (async () => {
      for await (const event of runs.events(runId)) seen.push(event.type);
    })();
    await until("the long call to start", () => lines().some((l) => l.startsWith(`wait ${runId} `)));
    const cancelledAt = Date.now();
    await runs.cancel(runId);
    const result = await runs.result(runId, { timeoutMs: 15_000 });
    expect(result.stopReason).toBe("cancelled");
    // result() answers once the log holds the end (the workflow is cancelled before the run ends).
    const end = (await store.read(runId)).at(-1);
    expect(end?.type === "run_completed" && end.stopReason).toBe("cancelled");
    expect(Date.now() - cancelledAt).toBeLessThan(10_000);
    await following;
    expect(seen[0]).toBe("run_started");
    expect(seen).toContain("tool_call_started");
    expect(seen.at(-1)).toBe("run_completed");
  }, 30_000);
});
