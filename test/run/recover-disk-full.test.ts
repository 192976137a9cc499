/**
 * A disk that fills up while a run is stored. Node reports it as an error with code ENOSPC
 * from whichever write hit it; a wrapper around a real SqliteStore throws exactly that at a
 * chosen moment. A store failure must never misreport what a tool did, and the run must be
 * resumable once space returns, without repeating a side effect that happened.
 */
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, type RunEvent, Runner, ScriptedModel, tool } from "quiver-agents";
import { type Lease, type RunFilter, type RunStore, SqliteStore, StoreError } from "quiver-agents/store";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { paymentsAgent } from "../fixtures/durability/payments-agent.js";

const dir = mkdtempSync(join(tmpdir(), "quiver-disk-full-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let count = 0;

function enospc(): Error {
  return Object.assign(new Error("ENOSPC: no space left on device, write"), {
    code: "ENOSPC",
    errno: -28,
    syscall: "write",
  });
}

/** A real SqliteStore whose disk "fills up" for the writes `full` picks. */
class FillingDisk implements RunStore {
  constructor(
    readonly inner: SqliteStore,
    readonly full: { append?: (events: readonly RunEvent[]) => boolean; artifacts?: boolean },
  ) {}
  append(lease: Lease, events: readonly RunEvent[]) {
    if (this.full.append?.(events)) return Promise.reject(enospc());
    return this.inner.append(lease, events);
  }
  putArtifact(runId: string, key: string, text: string) {
    if (this.full.artifacts) return Promise.reject(enospc());
    return this.inner.putArtifact(runId, key, text);
  }
  read = (runId: string, afterSeq?: number) => this.inner.read(runId, afterSeq);
  acquireLease = (runId: string, owner: string, ttlMs: number) =>
    this.inner.acquireLease(runId, owner, ttlMs);
  renewLease = (lease: Lease, ttlMs: number) => this.inner.renewLease(lease, ttlMs);
  releaseLease = (lease: Lease) => this.inner.releaseLease(lease);
  getRun = (runId: string) => this.inner.getRun(runId);
  listRuns = (filter?: RunFilter) => this.inner.listRuns(filter);
  listSessions = () => this.inner.listSessions();
  clearSession = (sessionId: string) => this.inner.clearSession(sessionId);
  getArtifact = (runId: string, key: string) => this.inner.getArtifact(runId, key);
  close = () => this.inner.close();
}

function fresh() {
  const path = join(dir, `runs-${++count}.db`);
  const effects = join(dir, `effects-${count}.log`);
  writeFileSync(effects, "");
  return {
    store: new SqliteStore({ path }),
    effects,
    ran: () => readFileSync(effects, "utf8").split("\n").filter(Boolean),
  };
}

const hasCompletion = (id: string) => (events: readonly RunEvent[]) =>
  events.some((e) => e.type === "tool_call_completed" && e.call.id === id);
const hasStart = (id: string) => (events: readonly RunEvent[]) =>
  events.some((e) => e.type === "tool_call_started" && e.call.id === id);

describe("a disk that fills up mid-run", () => {
  it("spilling a long result: the call that completed is logged completed, and the run resumes once space returns", async () => {
    const { store, effects, ran } = fresh();
    const report = tool({
      name: "export_report",
      description: "Export the quarterly report (sends it to the auditors).",
      parameters: z.object({}),
      maxOutputChars: 1_000,
      execute: async () => {
        appendFileSync(effects, "exported\n");
        return "row\n".repeat(5_000);
      },
    });
    const model = new ScriptedModel(
      Array.from(
        { length: 6 },
        () => (req: { messages: readonly { role: string }[] }) =>
          req.messages.some((m) => m.role === "tool")
            ? { text: "sent" }
            : { toolCalls: [{ id: "x1", name: "export_report", args: {} }] },
      ),
    );
    const agent = new Agent({ name: "reports", model, tools: [report] });
    const disk = new FillingDisk(store, { artifacts: true });

    const failure = await Runner.run(agent, "Export the report", { store: disk }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(StoreError);
    expect((failure as StoreError).retryable).toBe(true);
    expect((failure as Error).message).toMatch(/no space left on device/);

    // The summary says what the log ends with: failed, by the store, so resumable.
    expect(await store.listRuns({ status: "running" })).toEqual([]);
    const [summary] = await store.listRuns({ status: "failed" });
    expect(summary).toMatchObject({ failureKind: "store_unavailable" });
    const log = await store.read(summary!.runId);
    const done = log.filter((e) => e.type === "tool_call_completed");
    expect(done).toHaveLength(1);
    expect(done[0]).toMatchObject({ ok: true, truncated: { originalChars: 20_000 } });
    expect(JSON.stringify(done[0])).not.toMatch(/cancelled|recall_tool_result/);
    expect(log.at(-1)).toMatchObject({ type: "run_failed", kind: "store_unavailable" });

    // Space returns: the run goes on from its log, and the report is not sent twice.
    const recovered = await Runner.recover(store, { reports: agent });
    expect(recovered.map((h) => h.runId)).toEqual([summary!.runId]);
    const result = await recovered[0]!.result();
    expect(result).toMatchObject({ stopReason: "completed", output: "sent" });
    expect(result.toolCalls[0]).toMatchObject({ ok: true });
    expect(ran()).toEqual(["exported"]);
    const finished = await store.getRun(summary!.runId);
    expect(finished).toMatchObject({ status: "completed" });
    expect(finished).not.toHaveProperty("failureKind");
    await store.close();
  });

  it("storing a completed charge: the run fails with a retryable StoreError; resumed, the charge is interrupted, never repeated", async () => {
    const { store, effects, ran } = fresh();
    const disk = new FillingDisk(store, { append: hasCompletion("c1") });
    // The disk stays full: the run gives up after storeWaitMs (default 20 s) of retries.
    const handle = Runner.stream(paymentsAgent({ effects }), "Charge order A1", {
      store: disk,
      storeWaitMs: 300,
    });
    const failure = await handle.result().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(StoreError);
    expect((failure as StoreError).retryable).toBe(true);
    expect(ran()).toEqual(["note:n1", "charge:c1"]);
    // Nothing after the full disk was stored: the log says c1 started, nothing more.
    const log = await store.read(handle.runId);
    expect(log.filter((e) => e.type === "tool_call_started").map((e) => e.call.id)).toEqual(["n1", "c1"]);
    expect(log.filter((e) => e.type === "tool_call_completed").map((e) => e.call.id)).toEqual(["n1"]);
    // The append that failed held run_failed too: the log ends at c1's start, and so does the summary.
    expect(log.at(-1)).toMatchObject({ type: "tool_call_started" });
    expect(await store.getRun(handle.runId)).toMatchObject({ status: "running" });

    const agent = paymentsAgent({ effects });
    const result = await Runner.resume(agent, handle.runId, { store, waitForLeaseMs: 5_000 }).result();
    expect(result.toolCalls.map((r) => r.error?.kind ?? "ok")).toEqual(["ok", "interrupted", "ok"]);
    expect(ran()).toEqual(["note:n1", "charge:c1", "charge:c2"]);
    await store.close();
  });

  it("storing that a charge starts: the charge never runs, and runs once after the resume", async () => {
    const { store, effects, ran } = fresh();
    const disk = new FillingDisk(store, { append: hasStart("c1") });
    const handle = Runner.stream(paymentsAgent({ effects }), "Charge order A1", {
      store: disk,
      storeWaitMs: 300,
    });
    await expect(handle.result()).rejects.toMatchObject({ name: "StoreError", retryable: true });
    expect(ran()).toEqual(["note:n1"]);
    const log = await store.read(handle.runId);
    expect(log.filter((e) => e.type === "tool_call_started").map((e) => e.call.id)).toEqual(["n1"]);
    expect(log.some((e) => e.type === "tool_call_completed")).toBe(false);

    const result = await Runner.resume(paymentsAgent({ effects }), handle.runId, {
      store,
      waitForLeaseMs: 5_000,
    }).result();
    expect(result).toMatchObject({ stopReason: "completed", output: "done" });
    expect(result.toolCalls.map((r) => r.error?.kind ?? "ok")).toEqual(["ok", "ok", "ok"]);
    // The append that failed held n1's end too (a call's end and the next call's start are one
    // append): n1 has no stored result, and being idempotent it runs again on resume. The
    // charge, which never ran, runs once.
    expect(ran()).toEqual(["note:n1", "note:n1", "charge:c1", "charge:c2"]);
    await store.close();
  });

  it("full for a moment: the appends are retried, the run completes, and the reader saw exactly the stored log", async () => {
    const { store, effects, ran } = fresh();
    let refusals = 0;
    // The append holding c1's end fails three times (≈ 0.7 s of backoff), then space returns.
    const disk = new FillingDisk(store, {
      append: (events) => hasCompletion("c1")(events) && refusals++ < 3,
    });
    const handle = Runner.stream(paymentsAgent({ effects }), "Charge order A1", { store: disk });
    const seen: RunEvent[] = [];
    for await (const event of handle) seen.push(event);
    const result = await handle.result();
    expect(result).toMatchObject({ stopReason: "completed", output: "done" });
    expect(refusals).toBeGreaterThanOrEqual(4);
    expect(ran()).toEqual(["note:n1", "charge:c1", "charge:c2"]);
    const log = await store.read(handle.runId);
    expect(seen.map((e) => `${e.seq}:${e.type}`)).toEqual(log.map((e) => `${e.seq}:${e.type}`));
    expect(await store.getRun(handle.runId)).toMatchObject({ status: "completed" });
    await store.close();
  });
});
