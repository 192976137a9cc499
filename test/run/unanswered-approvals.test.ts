import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, type RunEvent, Runner, ScriptedModel, tool } from "quiver-agents";
import { MemoryStore, SqliteStore } from "quiver-agents/store";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";

function deleteAgent(log: string[], extra: Partial<ConstructorParameters<typeof Agent>[0]> = {}) {
  const deleteFile = tool({
    name: "delete_file",
    description: "Delete a file.",
    parameters: z.object({ path: z.string() }),
    destructive: true,
    execute: async ({ path }) => {
      log.push(path);
      return `deleted ${path}`;
    },
  });
  return new Agent({
    name: "janitor",
    model: new ScriptedModel([
      { text: "Deleting. ", toolCalls: [{ id: "d1", name: "delete_file", args: { path: "a.txt" } }] },
      { text: "done" },
    ]),
    tools: [deleteFile],
    ...extra,
  });
}

describe("a stream consumer that pulls on without deciding", () => {
  it("gets the call denied at once with a warning saying how to answer (README-style loop)", async () => {
    const log: string[] = [];
    const started = performance.now();
    const handle = Runner.stream(deleteAgent(log), "clean up");
    const events: RunEvent[] = [];
    let text = "";
    for await (const ev of handle) {
      events.push(ev);
      if (ev.type === "text_delta") text += ev.delta;
    }
    const result = await handle.result();
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(log).toEqual([]);
    expect(text).toBe("Deleting. done");
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "denied" } });
    expect(events.find((e) => e.type === "approval_resolved")).toMatchObject({
      decision: "denied",
      by: "no_channel",
    });
    const warning = events.find((e) => e.type === "warning");
    expect(warning).toMatchObject({ code: "approval_unanswered" });
    const message = (warning as { message: string }).message;
    expect(message).toContain("ev.approve()");
    expect(message).toContain("approvalHandler");
    expect(message).toContain("handle.approvals");
    // The warning comes before the decision it explains.
    expect(events.indexOf(warning!)).toBeLessThan(events.findIndex((e) => e.type === "approval_resolved"));
  });

  it("passes the decision to the agent's approvalHandler", async () => {
    const log: string[] = [];
    const handle = Runner.stream(
      deleteAgent(log, { approvalHandler: (call) => call.name === "delete_file" }),
      "go",
    );
    const events: RunEvent[] = [];
    for await (const ev of handle) events.push(ev);
    expect(log).toEqual(["a.txt"]);
    expect(events.find((e) => e.type === "approval_resolved")).toMatchObject({
      decision: "approved",
      by: "handler",
    });
    expect(events.some((e) => e.type === "warning")).toBe(false);
  });

  it("passes it on when the consumer breaks out of its loop at the approval", async () => {
    const log: string[] = [];
    const handle = Runner.stream(deleteAgent(log), "go");
    for await (const ev of handle) if (ev.type === "approval_required") break;
    const result = await handle.result();
    expect(result.toolCalls[0]?.error?.kind).toBe("denied");
    expect(log).toEqual([]);
  });

  it("still lets the consumer decide before it pulls the next event", async () => {
    const log: string[] = [];
    const handle = Runner.stream(deleteAgent(log), "go");
    for await (const ev of handle) if (ev.type === "approval_required") ev.approve();
    expect(log).toEqual(["a.txt"]);
    expect((await handle.result()).stopReason).toBe("completed");
  });
});

describe("with a store, an unanswered approval parks the run", () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  for (const [name, makeStore] of [
    ["MemoryStore", () => new MemoryStore()],
    [
      "SqliteStore",
      () => {
        dir = mkdtempSync(join(tmpdir(), "quiver-unanswered-"));
        return new SqliteStore({ path: join(dir, "runs.db") });
      },
    ],
  ] as const) {
    it(`${name}: the result says awaiting_approval and lists the pending call; a decision lets it finish`, async () => {
      const log: string[] = [];
      const store = makeStore();
      const agent = deleteAgent(log);
      const started = performance.now();
      const handle = Runner.stream(agent, "clean up", { store });
      const types: string[] = [];
      for await (const ev of handle) types.push(ev.type);
      const parked = await handle.result();
      expect(performance.now() - started).toBeLessThan(2_000);
      expect(parked.stopReason).toBe("awaiting_approval");
      expect(parked.pending?.map((c) => [c.id, c.name])).toEqual([["d1", "delete_file"]]);
      expect(types).toContain("run_parked");
      expect(types).not.toContain("warning");
      expect(log).toEqual([]);

      await Runner.decide(store, parked.runId, "d1", { approved: true });
      const resumed = await Runner.resume(agent, parked.runId, { store }).result();
      expect(resumed.stopReason).toBe("completed");
      expect(log).toEqual(["a.txt"]);
      await store.close?.();
    });
  }
});
