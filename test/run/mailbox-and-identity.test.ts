/**
 * Two promises of the run context: `ctx.userId` and `ctx.sessionId` are always set inside a run
 * (typed `string`), and `ctx.mailbox` lets a tool read the messages sent to the run while it
 * works — the same queue `handle.inject()` feeds, so the model still reads them next.
 */
import { Agent, type RunContext, Runner, ScriptedModel, tool } from "quiver-agents";
import { MemoryStore } from "quiver-agents/store";
import { describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";

describe("ctx.userId and ctx.sessionId", () => {
  it("are strings in the type, set inside every run, the same after a resume, and shared with child runs", async () => {
    expectTypeOf<RunContext["userId"]>().toEqualTypeOf<string>();
    expectTypeOf<RunContext["sessionId"]>().toEqualTypeOf<string>();
    const seen: Array<{ agent: string; sessionId: string; userId: string; runId: string }> = [];
    const whoami = tool({
      name: "whoami",
      description: "Who is asking.",
      parameters: z.object({}),
      execute: async (_args, ctx) => {
        seen.push({ agent: ctx.agent, sessionId: ctx.sessionId, userId: ctx.userId, runId: ctx.runId });
        return "ok";
      },
    });
    const helper = new Agent({
      name: "helper",
      model: new ScriptedModel([{ toolCalls: [{ name: "whoami", args: {} }] }, { text: "helped" }]),
      tools: [whoami],
    });
    const agent = new Agent({
      name: "main",
      model: new ScriptedModel([
        { toolCalls: [{ name: "whoami", args: {} }] },
        { toolCalls: [{ name: "helper", args: { input: "go" } }] },
        { text: "done" },
      ]),
      tools: [whoami, helper.asTool()],
    });
    const result = await Runner.run(agent, "hi");
    expect(seen[0]).toEqual({
      agent: "main",
      sessionId: `session_${result.runId}`,
      userId: "anonymous",
      runId: result.runId,
    });
    // The child run has its own id, and its parent's session and user.
    expect(seen[1]).toMatchObject({
      agent: "helper",
      sessionId: `session_${result.runId}`,
      userId: "anonymous",
    });
    expect(seen[1]!.runId).not.toBe(result.runId);

    seen.length = 0;
    await Runner.run(
      agent.clone({
        model: new ScriptedModel([{ toolCalls: [{ name: "whoami", args: {} }] }, { text: "x" }]),
      }),
      "hi",
      {
        sessionId: "chat-7",
        userId: "ada",
      },
    );
    expect(seen[0]).toMatchObject({ sessionId: "chat-7", userId: "ada" });
  });

  it("a resumed run without a session sees the same session id", async () => {
    const seen: string[] = [];
    const deploy = tool({
      name: "deploy",
      description: "Deploy.",
      parameters: z.object({}),
      needsApproval: true,
      execute: async (_args, ctx) => {
        seen.push(ctx.sessionId);
        return "deployed";
      },
    });
    const store = new MemoryStore();
    const agent = new Agent({
      name: "ops",
      model: new ScriptedModel([{ toolCalls: [{ id: "d1", name: "deploy", args: {} }] }, { text: "done" }]),
      tools: [deploy],
    });
    const parked = await Runner.run(agent, "deploy", { store });
    await Runner.decide(store, parked.runId, "d1", true);
    await Runner.resume(agent, parked.runId, { store }).result();
    expect(seen).toEqual([`session_${parked.runId}`]);
    // The session id a run makes for itself is not a stored session.
    expect(await store.listSessions()).toEqual([]);
  });
});

describe("ctx.mailbox", () => {
  it("a tool sees a message sent while it works, and the model still reads it next", async () => {
    let sawWhileWorking: unknown[] = [];
    const crawl = tool({
      name: "crawl",
      description: "Crawl pages.",
      parameters: z.object({}),
      execute: async (_args, ctx) => {
        const message = await ctx.mailbox.next({ timeoutMs: 5_000 });
        sawWhileWorking = ctx.mailbox.messages.map((m) => m.content);
        return message?.content === "stop after this page" ? "stopped early, as asked" : "crawled everything";
      },
    });
    const model = new ScriptedModel([{ toolCalls: [{ name: "crawl", args: {} }] }, { text: "ok" }]);
    const handle = Runner.stream(new Agent({ name: "crawler", model, tools: [crawl] }), "crawl the site");
    for await (const event of handle) {
      if (event.type === "tool_call_started") handle.inject("stop after this page");
    }
    const result = await handle.result();
    expect(result.toolCalls[0]!.output).toBe("stopped early, as asked");
    expect(sawWhileWorking).toEqual(["stop after this page"]);
    // Read by the tool, and still delivered to the model before its next request.
    expect(model.requests[1]!.messages.at(-1)).toEqual({ role: "user", content: "stop after this page" });
  });

  it("a child run's tool reads what was sent to the run above it; next() gives up at its timeout", async () => {
    const got: unknown[] = [];
    const listen = tool({
      name: "listen",
      description: "Listen.",
      parameters: z.object({}),
      execute: async (_args, ctx) => {
        got.push((await ctx.mailbox.next({ timeoutMs: 5_000 }))?.content);
        got.push(await ctx.mailbox.next({ timeoutMs: 20 }));
        return "heard";
      },
    });
    const child = new Agent({
      name: "listener",
      model: new ScriptedModel([{ toolCalls: [{ name: "listen", args: {} }] }, { text: "heard it" }]),
      tools: [listen],
    });
    const parent = new Agent({
      name: "boss",
      model: new ScriptedModel([
        { toolCalls: [{ name: "listener", args: { input: "listen" } }] },
        { text: "done" },
      ]),
      tools: [child.asTool()],
    });
    const handle = Runner.stream(parent, "go");
    for await (const event of handle) {
      if (event.type === "tool_call_started" && event.call.name === "listen")
        handle.inject("hello from above");
    }
    await handle.result();
    expect(got).toEqual(["hello from above", undefined]);
  });
});
