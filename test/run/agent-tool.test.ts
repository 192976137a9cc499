import { Agent, Budget, type RunEvent, Runner, ScriptedModel, tool } from "quiver-agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function collect(handle: AsyncIterable<RunEvent>, onEvent?: (ev: RunEvent) => void) {
  const events: RunEvent[] = [];
  for await (const ev of handle) {
    events.push(ev);
    onEvent?.(ev);
  }
  return events;
}

const lookup = tool({
  name: "lookup",
  description: "Lookup.",
  parameters: z.object({ q: z.string() }),
  execute: async ({ q }) => `facts about ${q}`,
});

describe("agent.asTool()", () => {
  it("runs a child run whose events reach the root handle with its own runId, parent and path", async () => {
    const childModel = new ScriptedModel([
      { toolCalls: [{ name: "lookup", args: { q: "otters" } }], usage: { inputTokens: 10, outputTokens: 2 } },
      { text: "Otters hold hands.", usage: { inputTokens: 20, outputTokens: 4 } },
    ]);
    const researcher = new Agent({
      name: "researcher",
      model: childModel,
      tools: [lookup],
      instructions: "Research.",
    });
    const parentModel = new ScriptedModel([
      {
        toolCalls: [{ id: "p1", name: "researcher", args: { input: "Tell me about otters" } }],
        usage: { inputTokens: 5, outputTokens: 1 },
      },
      { text: "Here is what I found: Otters hold hands." },
    ]);
    const writer = new Agent({
      name: "writer",
      model: parentModel,
      tools: [researcher.asTool({ description: "Research a topic." })],
    });
    const handle = Runner.stream(writer, "Write about otters", { sessionId: "s1" });
    const events = await collect(handle);
    const result = await handle.result();

    expect(parentModel.requests[0]?.tools[0]).toMatchObject({
      name: "researcher",
      description: "Research a topic.",
    });
    expect(result.toolCalls[0]).toMatchObject({ ok: true, output: "Otters hold hands." });
    expect(childModel.requests[0]?.messages).toEqual([{ role: "user", content: "Tell me about otters" }]);
    const childEvents = events.filter((e) => e.runId !== handle.runId);
    expect(childEvents.length).toBeGreaterThan(0);
    const childRunId = childEvents[0]!.runId;
    expect(childEvents.every((e) => e.runId === childRunId && e.parentRunId === handle.runId)).toBe(true);
    expect(
      childEvents.every((e) => JSON.stringify(e.path) === JSON.stringify(["writer", "researcher"])),
    ).toBe(true);
    expect(childEvents[0]).toMatchObject({ type: "run_started", parentCallId: "p1" });
    // Every event of the child names the call that started it, not only its first.
    expect(childEvents.every((e) => e.parentCallId === "p1")).toBe(true);
    // The child's seq counts from 1 on its own.
    expect(childEvents.map((e) => e.seq)).toEqual(childEvents.map((_, i) => i + 1));
    // Child usage counts toward the parent's.
    expect(result.usage).toMatchObject({ inputTokens: 35, outputTokens: 7 });
  });

  it("gives tools in the child the child's context", async () => {
    const contexts: unknown[] = [];
    const probe = tool({
      name: "probe",
      description: "Probe.",
      parameters: z.object({}),
      execute: async (_a, ctx) => {
        contexts.push({
          runId: ctx.runId,
          parentRunId: ctx.parentRunId,
          parentCallId: ctx.parentCallId,
          path: ctx.path,
          sessionId: ctx.sessionId,
          deps: ctx.deps,
        });
        return "ok";
      },
    });
    const child = new Agent({
      name: "child",
      model: new ScriptedModel([{ toolCalls: [{ name: "probe", args: {} }] }, { text: "done" }]),
      tools: [probe],
    });
    const parent = new Agent({
      name: "parent",
      model: new ScriptedModel([
        { toolCalls: [{ id: "c9", name: "child", args: { input: "go" } }] },
        { text: "ok" },
      ]),
      tools: [child.asTool()],
    });
    const handle = Runner.stream(parent, "go", { sessionId: "s", deps: { db: 1 } });
    await handle.result();
    expect(contexts).toEqual([
      {
        runId: expect.stringMatching(/^run_/),
        parentRunId: handle.runId,
        parentCallId: "c9",
        path: ["parent", "child"],
        sessionId: "s",
        deps: { db: 1 },
      },
    ]);
  });

  it("surfaces child approvals on the root handle and takes answers from it", async () => {
    const ran: string[] = [];
    const deleteAll = tool({
      name: "delete_all",
      description: "Delete everything.",
      parameters: z.object({}),
      destructive: true,
      execute: async () => {
        ran.push("deleted");
        return "deleted";
      },
    });
    const janitor = new Agent({
      name: "janitor",
      model: new ScriptedModel([{ toolCalls: [{ name: "delete_all", args: {} }] }, { text: "cleaned" }]),
      tools: [deleteAll],
    });
    const boss = new Agent({
      name: "boss",
      model: new ScriptedModel([
        { toolCalls: [{ name: "janitor", args: { input: "clean up" } }] },
        { text: "ok" },
      ]),
      tools: [janitor.asTool()],
      // The child has no handler: the parent's "ask" sends its approvals to the root handle.
      approvalHandler: () => "ask",
    });
    const handle = Runner.stream(boss, "go");
    const events = await collect(handle, (ev) => {
      if (ev.type === "approval_required") setTimeout(() => handle.approvals.approve(ev.call.id), 5);
    });
    expect(ran).toEqual(["deleted"]);
    const asked = events.find((e) => e.type === "approval_required")!;
    expect(asked.path).toEqual(["boss", "janitor"]);
    expect(events.find((e) => e.type === "approval_resolved")).toMatchObject({
      decision: "approved",
      by: "channel",
    });
  });

  it("uses the parent's approvalHandler when the child has none", async () => {
    const ran: string[] = [];
    const risky = tool({
      name: "risky",
      description: "Risky.",
      parameters: z.object({}),
      needsApproval: true,
      execute: async () => void ran.push("risky"),
    });
    const child = new Agent({
      name: "child",
      model: new ScriptedModel([{ toolCalls: [{ name: "risky", args: {} }] }, { text: "done" }]),
      tools: [risky],
    });
    const parent = new Agent({
      name: "parent",
      model: new ScriptedModel([{ toolCalls: [{ name: "child", args: { input: "go" } }] }, { text: "ok" }]),
      tools: [child.asTool()],
      approvalHandler: () => true,
    });
    await Runner.run(parent, "go");
    expect(ran).toEqual(["risky"]);
  });

  it("turns the child's own budget or maxTurns running out into a recoverable error result", async () => {
    const looping = () =>
      new ScriptedModel(
        Array.from({ length: 10 }, () => ({ toolCalls: [{ name: "lookup", args: { q: "x" } }] })),
      );
    const child = new Agent({ name: "child", model: looping(), tools: [lookup] });
    const parentModel = new ScriptedModel([
      { toolCalls: [{ name: "small", args: { input: "a" } }] },
      { toolCalls: [{ name: "short", args: { input: "b" } }] },
      { text: "I'll take it from here." },
    ]);
    const parent = new Agent({
      name: "parent",
      model: parentModel,
      tools: [
        child.asTool({ name: "small", budget: new Budget({ maxToolCalls: 2 }) }),
        child.clone({ model: looping() }).asTool({ name: "short", maxTurns: 2 }),
      ],
    });
    const result = await Runner.run(parent, "go");
    expect(result.stopReason).toBe("completed");
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "budget" } });
    expect(result.toolCalls[0]?.output).toMatch(/child ran out of its budget/);
    expect(result.toolCalls[1]).toMatchObject({ ok: false, error: { kind: "tool_error" } });
    expect(result.toolCalls[1]?.output).toMatch(/did not finish within 2 turns/);
  });

  it("counts child tool calls toward the parent's budget, which then stops the parent", async () => {
    const child = new Agent({
      name: "child",
      model: new ScriptedModel(
        Array.from({ length: 10 }, () => ({ toolCalls: [{ name: "lookup", args: { q: "x" } }] })),
      ),
      tools: [lookup],
    });
    const parent = new Agent({
      name: "parent",
      model: new ScriptedModel([
        { toolCalls: [{ name: "child", args: { input: "go" } }] },
        { text: "unreachable" },
      ]),
      tools: [child.asTool()],
    });
    const result = await Runner.run(parent, "go", { budget: new Budget({ maxToolCalls: 3 }) });
    expect(result.stopReason).toBe("budget");
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "budget" } });
  });

  it("is cancelled with its parent", async () => {
    let childSignal: AbortSignal | undefined;
    const hang = tool({
      name: "hang",
      description: "Hang.",
      parameters: z.object({}),
      execute: async (_a, ctx) => {
        childSignal = ctx.signal;
        await wait(5_000);
        return "late";
      },
    });
    const child = new Agent({
      name: "child",
      model: new ScriptedModel([{ toolCalls: [{ name: "hang", args: {} }] }, { text: "x" }]),
      tools: [hang],
    });
    const parent = new Agent({
      name: "parent",
      model: new ScriptedModel([{ toolCalls: [{ name: "child", args: { input: "go" } }] }]),
      tools: [child.asTool()],
    });
    const handle = Runner.stream(parent, "go");
    const events = await collect(
      handle,
      (ev) => ev.type === "tool_call_started" && ev.call.name === "hang" && handle.cancel(),
    );
    expect((await handle.result()).stopReason).toBe("cancelled");
    expect(childSignal?.aborted).toBe(true);
    const childEnd = events.find((e) => e.type === "run_completed" && e.runId !== handle.runId);
    expect(childEnd).toMatchObject({ stopReason: "cancelled" });
  });

  it("passes taint from the child up to the parent", async () => {
    const web = tool({
      name: "web",
      description: "Web.",
      parameters: z.object({}),
      untrustedOutput: true,
      execute: async () => "<html>",
    });
    const child = new Agent({
      name: "browser",
      model: new ScriptedModel([{ toolCalls: [{ name: "web", args: {} }] }, { text: "read it" }]),
      tools: [web],
    });
    const parent = new Agent({
      name: "parent",
      model: new ScriptedModel([
        { toolCalls: [{ name: "browser", args: { input: "read" } }] },
        { text: "ok" },
      ]),
      tools: [child.asTool()],
    });
    const handle = Runner.stream(parent, "go");
    const events = await collect(handle);
    expect(events.filter((e) => e.type === "run_tainted").map((e) => e.runId === handle.runId)).toEqual([
      false,
      true,
    ]);
  });
});
