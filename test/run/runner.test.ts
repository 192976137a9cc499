import {
  Agent,
  type HostedTool,
  type Model,
  ProviderError,
  RunCancelled,
  type RunEvent,
  Runner,
  ScriptedModel,
  type ToolHost,
  tool,
  UserError,
} from "quiver-agents";
import { MemoryStore } from "quiver-agents/store";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function collect(handle: AsyncIterable<RunEvent>) {
  const events: RunEvent[] = [];
  for await (const ev of handle) events.push(ev);
  return events;
}

const echo = tool({
  name: "echo",
  description: "Echo.",
  parameters: z.object({ text: z.string() }),
  execute: async ({ text }) => text,
});

describe("how a run ends", () => {
  it("completes when the model answers without tool calls", async () => {
    const model = new ScriptedModel([
      { toolCalls: [{ name: "echo", args: { text: "hi" } }], usage: { inputTokens: 10, outputTokens: 5 } },
      { text: "All done.", usage: { inputTokens: 20, outputTokens: 3, cachedInputTokens: 8 } },
    ]);
    const handle = Runner.stream(new Agent({ name: "a", model, tools: [echo] }), "say hi");
    const events = await collect(handle);
    const result = await handle.result();
    expect(result).toMatchObject({ output: "All done.", stopReason: "completed", runId: handle.runId });
    expect(result.usage).toEqual({ inputTokens: 30, outputTokens: 8, totalTokens: 38, cachedInputTokens: 8 });
    expect(events.at(-1)).toMatchObject({
      type: "run_completed",
      output: "All done.",
      stopReason: "completed",
      usage: result.usage,
    });
    expect(result.lastAgent.name).toBe("a");
  });

  it("stops with ends_turn when an endsTurn tool succeeds, with the model's words as output", async () => {
    const escalate = tool({
      name: "escalate",
      description: "Hand over to a human.",
      parameters: z.object({ reason: z.string() }),
      endsTurn: true,
      execute: async () => "escalated",
    });
    const model = new ScriptedModel([
      { text: "Passing you to a colleague.", toolCalls: [{ name: "escalate", args: { reason: "angry" } }] },
    ]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: [escalate] }), "help");
    expect(result).toMatchObject({ stopReason: "ends_turn", output: "Passing you to a colleague." });
    expect(model.requests).toHaveLength(1);
    const silent = new ScriptedModel([{ toolCalls: [{ name: "escalate", args: { reason: "x" } }] }]);
    expect(
      (await Runner.run(new Agent({ name: "a", model: silent, tools: [escalate] }), "help")).output,
    ).toBe("escalated");
  });

  it("stops with max_turns, keeping every result so messages stay valid input", async () => {
    const model = new ScriptedModel(
      Array.from({ length: 5 }, () => ({ toolCalls: [{ name: "echo", args: { text: "again" } }] })),
    );
    const result = await Runner.run(new Agent({ name: "a", model, tools: [echo] }), "loop", { maxTurns: 3 });
    expect(result.stopReason).toBe("max_turns");
    expect(model.requests).toHaveLength(3);
    expect(result.messages.at(-1)).toMatchObject({ role: "tool", content: "again" });
  });

  it("cancels promptly even when a tool ignores its signal, giving unfinished calls results", async () => {
    const stubborn = tool({
      name: "stubborn",
      description: "Ignores signals.",
      parameters: z.object({}),
      execute: () => wait(2_000).then(() => "late"),
    });
    const quick = tool({
      name: "quick",
      description: "Quick.",
      parameters: z.object({}),
      execute: async () => "quick",
    });
    const barrier = tool({
      name: "barrier",
      description: "Barrier.",
      parameters: z.object({}),
      parallel: false,
      execute: async () => "b",
    });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: "quick", args: {} },
          { name: "stubborn", args: {} },
          { name: "barrier", args: {} },
        ],
      },
      { text: "unreachable" },
    ]);
    const handle = Runner.stream(new Agent({ name: "a", model, tools: [stubborn, quick, barrier] }), "go");
    const events: RunEvent[] = [];
    let cancelledAt = 0;
    for await (const ev of handle) {
      events.push(ev);
      if (ev.type === "tool_call_completed" && ev.output === "quick") {
        cancelledAt = performance.now();
        handle.cancel("user pressed stop");
      }
    }
    const result = await handle.result();
    expect(performance.now() - cancelledAt).toBeLessThan(500);
    expect(result.stopReason).toBe("cancelled");
    expect(result.toolCalls.map((r) => [r.call.name, r.ok ? "ok" : r.error?.kind])).toEqual([
      ["quick", "ok"],
      ["stubborn", "cancelled"],
      ["barrier", "skipped"],
    ]);
    const assistant = result.messages.find((m) => m.role === "assistant")!;
    const toolMessages = result.messages.filter((m) => m.role === "tool");
    expect(toolMessages.map((m) => m.toolCallId)).toEqual(
      ("toolCalls" in assistant ? assistant.toolCalls : [])!.map((c) => c.id),
    );
    expect(events.at(-1)).toMatchObject({ type: "run_completed", stopReason: "cancelled" });
    await wait(50);
    expect(model.requests).toHaveLength(1);
  });

  it("cancels through the caller's AbortSignal, also during a model turn", async () => {
    const controller = new AbortController();
    const model = new ScriptedModel([{ text: "slow answer", delayMs: 5_000 }]);
    setTimeout(() => controller.abort(), 20);
    const started = performance.now();
    const result = await Runner.run(new Agent({ name: "a", model }), "go", { signal: controller.signal });
    expect(result.stopReason).toBe("cancelled");
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it("ends the whole run when a tool throws RunCancelled", async () => {
    const abort = tool({
      name: "abort",
      description: "Abort.",
      parameters: z.object({}),
      execute: async () => {
        throw new RunCancelled("the tool decided to stop");
      },
    });
    const model = new ScriptedModel([{ toolCalls: [{ name: "abort", args: {} }] }, { text: "unreachable" }]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: [abort] }), "go");
    expect(result.stopReason).toBe("cancelled");
    expect(result.toolCalls[0]?.error?.kind).toBe("cancelled");
  });

  it("fails with run_failed and rejects on a UserError, and the iterator throws the same error", async () => {
    const handle = Runner.stream(new Agent({ name: "a", tools: [echo] }), "go");
    const events: RunEvent[] = [];
    await expect(
      (async () => {
        for await (const ev of handle) events.push(ev);
      })(),
    ).rejects.toThrow(/agent "a" has no model/);
    await expect(handle.result()).rejects.toBeInstanceOf(UserError);
    expect(events.at(-1)).toMatchObject({ type: "run_failed", name: "UserError", kind: "user_error" });
    await expect(Runner.run(new Agent({ name: "a", tools: [echo] }), "go")).rejects.toThrow(UserError);
  });

  it("refuses an agent's tools that clash or are not tools when the agent is made", () => {
    const clash = tool({
      name: "echo",
      description: "Another echo.",
      parameters: z.object({}),
      execute: async () => "",
    });
    const make = (tools: unknown) => () =>
      new Agent({ name: "a", model: new ScriptedModel([]), tools: tools as never });
    expect(make([echo, clash])).toThrow(/agent "a": two tools are named "echo"/);
    expect(make([echo, echo])).toThrow(/agent "a": the same tool "echo" is listed twice/);
    expect(make([echo, undefined])).toThrow(/got undefined \(an import cycle/);
    expect(make([{ name: "x", execute: () => 1 }])).toThrow(
      /an object with execute, not a tool: pass it to tool/,
    );
    expect(make({ echo })).toThrow(/a record of tools: pass them as an array/);
    expect(make([(a: number) => a])).toThrow(/a function: wrap it with tool\(\)/);
  });

  it("fails with the ProviderError a model throws", async () => {
    const failing: Model = {
      name: "down",
      // biome-ignore lint/correctness/useYield: it fails before producing anything, on purpose.
      async *stream() {
        throw new ProviderError("503 from upstream", { provider: "test", status: 503, retryable: true });
      },
    };
    await expect(Runner.run(new Agent({ name: "a", model: failing }), "go")).rejects.toMatchObject({
      name: "ProviderError",
      status: 503,
    });
  });

  it("treats a stream without a finish event as a provider failure, not a short answer", async () => {
    const cut: Model = {
      name: "cut",
      async *stream() {
        yield { type: "text_delta", delta: "half an ans" };
      },
    };
    await expect(Runner.run(new Agent({ name: "a", model: cut }), "go")).rejects.toThrow(
      /without a finish event/,
    );
  });

  it("does not run calls of a turn cut off by the token limit", async () => {
    let ran = false;
    const write = tool({
      name: "write",
      description: "Write.",
      parameters: z.object({ text: z.string() }),
      execute: async () => {
        ran = true;
        return "written";
      },
    });
    const model = new ScriptedModel([
      { toolCalls: [{ name: "write", args: '{"text": "a very long' }], finish: "length" },
      { text: "ok" },
    ]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: [write] }), "go");
    expect(ran).toBe(false);
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "truncated_arguments" } });
    expect(result.toolCalls[0]?.output).toMatch(/output token limit/);
  });
});

describe("the handle", () => {
  it("is returned before any event and buffers events until read", async () => {
    const model = new ScriptedModel([{ text: "hello" }]);
    const before = Date.now();
    const handle = Runner.stream(new Agent({ name: "a", model }), "hi");
    expect(model.requests).toHaveLength(0);
    await wait(20);
    const events = await collect(handle);
    expect(events.map((e) => e.type)).toEqual([
      "run_started",
      "turn_started",
      "text_delta",
      "message",
      "turn_completed",
      "run_completed",
    ]);
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(events.every((e) => e.runId === handle.runId && e.agent === "a")).toBe(true);
    expect(events.every((e) => e.at >= before && e.at <= Date.now())).toBe(true);
    expect(JSON.parse(JSON.stringify(events))).toEqual(events);
  });

  it("timestamps what run() stores, though run() itself has no event reader", async () => {
    const store = new MemoryStore();
    const before = Date.now();
    const result = await Runner.run(
      new Agent({ name: "a", model: new ScriptedModel([{ text: "hello" }]) }),
      "hi",
      {
        store,
      },
    );
    const events = await store.read(result.runId);
    expect(events.map((e) => e.type)).toContain("run_completed");
    expect(events.every((e) => e.at >= before && e.at <= Date.now())).toBe(true);
  });

  it("allows one iterator; break stops reading, not the run", async () => {
    const model = new ScriptedModel([
      { toolCalls: [{ name: "echo", args: { text: "x" } }] },
      { text: "finished" },
    ]);
    const handle = Runner.stream(new Agent({ name: "a", model, tools: [echo] }), "go");
    for await (const ev of handle) if (ev.type === "turn_started") break;
    expect(() => handle[Symbol.asyncIterator]()).toThrow(UserError);
    expect((await handle.result()).output).toBe("finished");
  });

  it("resolves result() without anyone iterating", async () => {
    const handle = Runner.stream(
      new Agent({ name: "a", model: new ScriptedModel([{ text: "quiet" }]) }),
      "go",
    );
    expect((await handle.result()).output).toBe("quiet");
  });
});

describe("agents", () => {
  it("evaluate instructions as a string, a function, or a list of fragments at each run start", async () => {
    const model = new ScriptedModel([{ text: "1" }, { text: "2" }]);
    let calls = 0;
    const agent = new Agent<{ tenant: string }>({
      name: "a",
      model,
      instructions: [
        "You are helpful.",
        (ctx) => `Tenant: ${ctx.deps.tenant}. Run ${++calls}.`,
        () => undefined,
      ],
    });
    await Runner.run(agent, "x", { deps: { tenant: "acme" } });
    await Runner.run(agent, "y", { deps: { tenant: "globex" } });
    expect(model.requests.map((r) => r.system)).toEqual([
      "You are helpful.\n\nTenant: acme. Run 1.",
      "You are helpful.\n\nTenant: globex. Run 2.",
    ]);
  });

  it("take one tool without a list, and pass modelSettings through", async () => {
    const model = new ScriptedModel([{ text: "ok" }]);
    await Runner.run(
      new Agent({
        name: "a",
        model,
        tools: echo,
        modelSettings: { temperature: 0, parallelToolCalls: false },
      }),
      "go",
    );
    expect(model.requests[0]?.tools.map((t) => t.name)).toEqual(["echo"]);
    expect(model.requests[0]?.settings).toEqual({ temperature: 0, parallelToolCalls: false });
  });

  it("continue a conversation from a previous result's messages", async () => {
    const model = new ScriptedModel([{ text: "Hi Ada." }, { text: "Your name is Ada." }]);
    const agent = new Agent({ name: "a", model });
    const first = await Runner.run(agent, "I am Ada.");
    await Runner.run(agent, [...first.messages, { role: "user", content: "Who am I?" }]);
    expect(model.requests[1]?.messages).toEqual([
      { role: "user", content: "I am Ada." },
      { role: "assistant", content: "Hi Ada." },
      { role: "user", content: "Who am I?" },
    ]);
  });

  it("reject invalid names and a missing model", async () => {
    expect(() => new Agent({ name: "" })).toThrow(UserError);
    await expect(Runner.run(new Agent({ name: "nomodel" }), "go")).rejects.toThrow(/has no model/);
  });

  it("validate the final output against outputType, with one corrective turn", async () => {
    const model = new ScriptedModel([
      { text: '{"city": "Paris"}' },
      { text: '```json\n{"city": "Paris", "celsius": 21}\n```' },
    ]);
    const agent = new Agent({
      name: "a",
      model,
      outputType: z.object({ city: z.string(), celsius: z.number() }),
    });
    const result = await Runner.run(agent, "weather?");
    expect(result.output).toEqual({ city: "Paris", celsius: 21 });
    expect(model.requests[0]?.settings.responseFormat).toMatchObject({ type: "json_schema", name: "output" });
    expect(model.requests[1]?.messages.at(-1)).toMatchObject({
      role: "user",
      content: expect.stringMatching(/celsius/),
    });
    // The ways models wrap JSON, each taken on the first answer (no corrective turn spent).
    for (const text of [
      '```JSON\n{"city": "Oslo", "celsius": 1}\n```',
      'Here it is:\n```json\n{"city": "Oslo", "celsius": 1}\n```',
      '```json {"city": "Oslo", "celsius": 1} ```',
      '{"city": "Oslo", "celsius": 1}\n\nHope this helps!',
      'The weather: {"city": "Oslo", "celsius": 1}',
    ]) {
      const once = new ScriptedModel([{ text }]);
      const wrapped = await Runner.run(agent.clone({ model: once }), "weather?");
      expect(wrapped.output, text).toEqual({ city: "Oslo", celsius: 1 });
    }
    const stubborn = new ScriptedModel([{ text: "no" }, { text: "still no" }]);
    await expect(Runner.run(agent.clone({ model: stubborn }), "weather?")).rejects.toThrow(
      /does not match its outputType/,
    );
  });
});

describe("tools from a ToolHost", () => {
  it("are listed, validated against the listed schema and called like local tools, with hints kept", async () => {
    const calls: Array<[string, unknown]> = [];
    const listed: HostedTool[] = [
      {
        name: "remote_add",
        description: "Add remotely.",
        parameters: { type: "object", properties: { a: { type: "number" } }, required: ["a"] },
        parallel: false,
        timeoutMs: 20,
      },
    ];
    const host: ToolHost = {
      listTools: async () => listed,
      call: async (name, args, ctx) => {
        calls.push([name, args]);
        if ((args as { a: number }).a === 99) await wait(200);
        if ((args as { a: number }).a === 13) throw new Error("connection reset");
        return `${(args as { a: number }).a + 1} via ${ctx.toolCallId}`;
      },
    };
    const model = new ScriptedModel([
      {
        toolCalls: [
          { id: "c1", name: "remote_add", args: { a: "1" } },
          { id: "c2", name: "remote_add", args: { a: "x" } },
          { id: "c3", name: "remote_add", args: { a: 99 } },
          { id: "c4", name: "remote_add", args: { a: 13 } },
        ],
      },
      { text: "ok" },
    ]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: [echo, host] }), "go");
    expect(model.requests[0]?.tools.map((t) => t.name)).toEqual(["echo", "remote_add"]);
    expect(result.toolCalls.map((r) => (r.ok ? r.output : r.error?.kind))).toEqual([
      "2 via c1",
      "invalid_arguments",
      "timeout",
      "host_error",
    ]);
    expect(calls.map(([, args]) => args)).toEqual([{ a: 1 }, { a: 99 }, { a: 13 }]);
  });

  it("are re-listed before each model request when the host cannot watch, and clash-checked", async () => {
    let version = 1;
    const host: ToolHost = {
      listTools: async () => [
        { name: `v${version}`, description: "Versioned.", parameters: { type: "object" } },
      ],
      call: async () => "ok",
    };
    const model = new ScriptedModel([
      (req) => {
        version = 2;
        return { toolCalls: [{ name: req.tools[0]!.name, args: {} }] };
      },
      { text: "done" },
    ]);
    await Runner.run(new Agent({ name: "a", model, tools: host }), "go");
    expect(model.requests.map((r) => r.tools.map((t) => t.name))).toEqual([["v1"], ["v2"]]);
    const clashing: ToolHost = {
      listTools: async () => [{ name: "echo", description: "", parameters: { type: "object" } }],
      call: async () => "",
    };
    await expect(
      Runner.run(new Agent({ name: "a", model: new ScriptedModel([]), tools: [echo, clashing] }), "go"),
    ).rejects.toThrow(/two tools are named "echo"/);
  });
});
