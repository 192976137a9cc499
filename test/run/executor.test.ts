import {
  Agent,
  getRunContext,
  type RunContext,
  type RunEvent,
  Runner,
  ScriptedModel,
  ToolError,
  tool,
  UserError,
} from "quiver-agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Span = { name: string; start: number; end: number };

/** A tool that records when it ran, sleeping `ms` (from its arguments). */
function timedTool(name: string, spans: Span[], options: Record<string, unknown> = {}) {
  return tool({
    name,
    description: `${name} sleeps`,
    parameters: z.object({ ms: z.number(), label: z.string() }),
    execute: async ({ ms, label }) => {
      const start = performance.now();
      await wait(ms);
      spans.push({ name: label, start, end: performance.now() });
      return label;
    },
    ...options,
  });
}

async function collect(handle: AsyncIterable<RunEvent>) {
  const events: RunEvent[] = [];
  for await (const ev of handle) events.push(ev);
  return events;
}

describe("one turn's calls", () => {
  it("run concurrently; events come in completion order, results in request order", async () => {
    const spans: Span[] = [];
    const t = timedTool("sleep", spans);
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: "sleep", args: { ms: 120, label: "slow" } },
          { name: "sleep", args: { ms: 10, label: "fast" } },
          { name: "sleep", args: { ms: 60, label: "mid" } },
        ],
      },
      { text: "done" },
    ]);
    const handle = Runner.stream(new Agent({ name: "a", model, tools: [t] }), "go");
    const events = await collect(handle);
    const result = await handle.result();
    // All three were running at once: each started before any finished.
    const firstEnd = Math.min(...spans.map((s) => s.end));
    expect(spans.every((s) => s.start < firstEnd)).toBe(true);
    const completed = events.filter((e) => e.type === "tool_call_completed").map((e) => e.output);
    expect(completed).toEqual(["fast", "mid", "slow"]);
    expect(result.toolCalls.map((r) => r.output)).toEqual(["slow", "fast", "mid"]);
    const toolMessages = model.requests[1]!.messages.filter((m) => m.role === "tool").map((m) => m.content);
    expect(toolMessages).toEqual(["slow", "fast", "mid"]);
  });

  it("treat parallel: false as a barrier: in-flight calls finish first, it runs alone, then the rest", async () => {
    const spans: Span[] = [];
    const parallel = timedTool("work", spans);
    const barrier = timedTool("migrate", spans, { parallel: false });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: "work", args: { ms: 50, label: "a" } },
          { name: "work", args: { ms: 20, label: "b" } },
          { name: "migrate", args: { ms: 30, label: "barrier" } },
          { name: "work", args: { ms: 10, label: "c" } },
          { name: "work", args: { ms: 10, label: "d" } },
        ],
      },
      { text: "done" },
    ]);
    await Runner.run(new Agent({ name: "a", model, tools: [parallel, barrier] }), "go");
    const span = (label: string) => spans.find((s) => s.name === label)!;
    expect(span("barrier").start).toBeGreaterThanOrEqual(Math.max(span("a").end, span("b").end));
    expect(span("c").start).toBeGreaterThanOrEqual(span("barrier").end);
    expect(span("d").start).toBeGreaterThanOrEqual(span("barrier").end);
    // c and d still overlap each other.
    expect(span("d").start).toBeLessThan(span("c").end);
  });

  it("respects maxConcurrentToolCalls", async () => {
    const spans: Span[] = [];
    const t = timedTool("sleep", spans);
    const model = new ScriptedModel([
      { toolCalls: ["a", "b", "c", "d"].map((label) => ({ name: "sleep", args: { ms: 30, label } })) },
      { text: "done" },
    ]);
    await Runner.run(new Agent({ name: "a", model, tools: [t], maxConcurrentToolCalls: 2 }), "go");
    // At each moment a call starts, at most two are running.
    const running = (t: number) => spans.filter((o) => o.start <= t && t < o.end).length;
    expect(Math.max(...spans.map((s) => running(s.start)))).toBe(2);
  });

  it("give every call a run-unique id, keeping the provider's duplicate as providerCallId", async () => {
    const t = tool({
      name: "echo",
      description: "Echo.",
      parameters: z.object({}),
      execute: async (_a, ctx) => ctx.toolCallId,
    });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { id: "dup", name: "echo", args: {} },
          { id: "dup", name: "echo", args: {} },
        ],
      },
      { toolCalls: [{ id: "dup", name: "echo", args: {} }] },
      { text: "done" },
    ]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: [t] }), "go");
    const ids = result.toolCalls.map((r) => r.call.id);
    expect(new Set(ids).size).toBe(3);
    expect(ids[0]).toBe("dup");
    expect(result.toolCalls.slice(1).map((r) => r.call.providerCallId)).toEqual(["dup", "dup"]);
    expect(result.toolCalls.map((r) => r.output)).toEqual(ids);
  });
});

describe("retries and timeouts", () => {
  it("retry with backoff, one tool_call_started per attempt", async () => {
    let calls = 0;
    const flaky = tool({
      name: "flaky",
      description: "Fails twice.",
      parameters: z.object({}),
      retries: 2,
      retryBackoff: { initialMs: 5, jitter: false },
      execute: async () => {
        calls++;
        if (calls < 3) throw new Error(`blip ${calls}`);
        return "finally";
      },
    });
    const model = new ScriptedModel([{ toolCalls: [{ name: "flaky", args: {} }] }, { text: "done" }]);
    const handle = Runner.stream(new Agent({ name: "a", model, tools: [flaky] }), "go");
    const events = await collect(handle);
    expect(events.filter((e) => e.type === "tool_call_started").map((e) => e.attempt)).toEqual([1, 2, 3]);
    const retries = events.filter((e) => e.type === "tool_call_retry");
    expect(retries.map((e) => [e.attempt, e.delayMs, e.error.message])).toEqual([
      [2, 5, "blip 1"],
      [3, 10, "blip 2"],
    ]);
    expect((await handle.result()).toolCalls[0]).toMatchObject({ ok: true, output: "finally" });
  });

  it("use the agent's defaultToolRetries and give up with the last error", async () => {
    let calls = 0;
    const broken = tool({
      name: "broken",
      description: "Always fails.",
      parameters: z.object({}),
      retryBackoff: { initialMs: 1 },
      execute: async () => {
        calls++;
        throw new ToolError(`down (${calls})`, { hint: "try later" });
      },
    });
    const model = new ScriptedModel([{ toolCalls: [{ name: "broken", args: {} }] }, { text: "done" }]);
    const result = await Runner.run(
      new Agent({ name: "a", model, tools: [broken], defaultToolRetries: 1 }),
      "go",
    );
    expect(calls).toBe(2);
    expect(result.toolCalls[0]).toMatchObject({
      ok: false,
      output: "Tool error: down (2)\nHint: try later",
      error: { kind: "tool_error", message: "down (2)" },
    });
  });

  it("warn when a tool blocks the event loop past its timeout, which no timer can stop", async () => {
    const busy = tool({
      name: "busy",
      description: "Computes without awaiting.",
      parameters: z.object({}),
      timeoutMs: 30,
      execute: () => {
        const until = Date.now() + 120;
        while (Date.now() < until);
        return "computed";
      },
    });
    const model = new ScriptedModel([{ toolCalls: [{ name: "busy", args: {} }] }, { text: "done" }]);
    const handle = Runner.stream(new Agent({ name: "a", model, tools: [busy] }), "go");
    const warnings: string[] = [];
    for await (const ev of handle) if (ev.type === "warning") warnings.push(`${ev.code}: ${ev.message}`);
    expect((await handle.result()).toolCalls[0]).toMatchObject({ ok: true, output: "computed" });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /^timeout_blocked: busy ran \d+ ms, past its 30 ms timeout, without letting the timer fire .*isolate: "worker"/,
    );
  });

  it("do not retry a ToolError that says trying again cannot help", async () => {
    let calls = 0;
    const lookup = tool({
      name: "lookup",
      description: "Looks an order up.",
      parameters: z.object({}),
      retries: 3,
      retryBackoff: { initialMs: 1 },
      execute: async () => {
        calls++;
        throw new ToolError("no order A9", { hint: "Order ids look like A123.", retry: false });
      },
    });
    const model = new ScriptedModel([{ toolCalls: [{ name: "lookup", args: {} }] }, { text: "done" }]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: [lookup] }), "go");
    expect(calls).toBe(1);
    expect(result.toolCalls[0]).toMatchObject({
      ok: false,
      output: "Tool error: no order A9\nHint: Order ids look like A123.",
    });
  });

  it("do not retry a bug in the tool's code, and say where it was thrown", async () => {
    let calls = 0;
    let flaky = 0;
    const lookup = tool({
      name: "lookup",
      description: "Looks an order up.",
      parameters: z.object({}),
      retries: 2,
      retryBackoff: { initialMs: 1 },
      execute: async (_args, ctx: RunContext<{ db?: { find(): string } }>) => {
        calls++;
        return ctx.deps.db!.find();
      },
    });
    // A library's TypeError with a cause (undici's "fetch failed") is not a bug: retried.
    const fetchy = tool({
      name: "fetchy",
      description: "Fetches.",
      parameters: z.object({}),
      retries: 2,
      retryBackoff: { initialMs: 1 },
      execute: async () => {
        if (++flaky < 2) throw new TypeError("fetch failed", { cause: new Error("ECONNRESET") });
        return "ok";
      },
    });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: "lookup", args: {} },
          { name: "fetchy", args: {} },
        ],
      },
      { text: "done" },
    ]);
    const handle = Runner.stream(new Agent({ name: "a", model, tools: [lookup, fetchy] }), "go", {
      deps: {},
    });
    const warnings: string[] = [];
    for await (const ev of handle) if (ev.type === "warning") warnings.push(`${ev.code}: ${ev.message}`);
    const result = await handle.result();
    expect(calls).toBe(1);
    expect(flaky).toBe(2);
    expect(result.toolCalls[0]).toMatchObject({
      ok: false,
      output: expect.stringMatching(/^Tool error: Cannot read properties of undefined \(reading 'find'\)/),
    });
    expect(result.toolCalls[1]).toMatchObject({ ok: true, output: "ok" });
    expect(warnings).toEqual([
      expect.stringMatching(
        /^tool_bug: lookup threw TypeError: Cannot read properties of undefined \(reading 'find'\) at .*executor\.test\.ts:\d+:\d+.* not retried/,
      ),
    ]);
  });

  it("time out each attempt, abort its signal, and never leave an unhandled rejection", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    const signals: AbortSignal[] = [];
    const slow = tool({
      name: "slow",
      description: "Hangs.",
      parameters: z.object({}),
      timeoutMs: 30,
      retries: 1,
      retryBackoff: { initialMs: 1 },
      execute: async (_args, ctx) => {
        signals.push(ctx.signal);
        await wait(200);
        throw new Error("late failure after the timeout");
      },
    });
    const model = new ScriptedModel([{ toolCalls: [{ name: "slow", args: {} }] }, { text: "done" }]);
    const startedAt = performance.now();
    const result = await Runner.run(new Agent({ name: "a", model, tools: [slow] }), "go");
    expect(performance.now() - startedAt).toBeLessThan(190);
    expect(result.toolCalls[0]).toMatchObject({
      ok: false,
      error: { kind: "timeout", message: "slow timed out after 30 ms" },
    });
    expect(signals).toHaveLength(2);
    expect(signals.every((s) => s.aborted)).toBe(true);
    await wait(300);
    process.off("unhandledRejection", onUnhandled);
    expect(unhandled).toEqual([]);
  });

  it("use the agent's defaultToolTimeoutMs", async () => {
    const hang = tool({
      name: "hang",
      description: "Hangs.",
      parameters: z.object({}),
      execute: () => wait(1_000),
    });
    const model = new ScriptedModel([{ toolCalls: [{ name: "hang", args: {} }] }, { text: "done" }]);
    const result = await Runner.run(
      new Agent({ name: "a", model, tools: [hang], defaultToolTimeoutMs: 20 }),
      "go",
    );
    expect(result.toolCalls[0]?.error?.kind).toBe("timeout");
  });
});

describe("policies", () => {
  it("compose first = outermost inside retries, see validated arguments, and changed arguments are validated again", async () => {
    const order: string[] = [];
    const seen: unknown[] = [];
    const t = tool({
      name: "greet",
      description: "Greet.",
      parameters: z.object({ name: z.string(), times: z.number() }),
      policies: [
        async (invoke, args, ctx) => {
          order.push(`outer:${typeof args.times}`);
          const out = await invoke(args, ctx);
          return `${out}!`;
        },
        async (invoke, args, ctx) => {
          order.push("inner");
          return invoke(
            { ...args, name: args.name.toUpperCase(), times: String(args.times) as unknown as number },
            ctx,
          );
        },
      ],
      execute: async (args) => {
        seen.push(args);
        return `hi ${args.name}`;
      },
    });
    const model = new ScriptedModel([
      { toolCalls: [{ name: "greet", args: { name: "ada", times: "2" } }] },
      { text: "ok" },
    ]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: [t] }), "go");
    expect(order).toEqual(["outer:number", "inner"]);
    // The inner policy's string "2" was coerced and validated again before execute.
    expect(seen).toEqual([{ name: "ADA", times: 2 }]);
    expect(result.toolCalls[0]?.output).toBe("hi ADA!");
  });

  it("can short-circuit (a cache) and their invalid changes become invalid_arguments", async () => {
    let executed = 0;
    const cached = tool({
      name: "cached",
      description: "Cached.",
      parameters: z.object({ q: z.string() }),
      policies: [async (_invoke, args) => `cached ${args.q}`],
      execute: async () => {
        executed++;
        return "fresh";
      },
    });
    const broken = tool({
      name: "broken",
      description: "Broken policy.",
      parameters: z.object({ q: z.string() }),
      policies: [async (invoke, _args, ctx) => invoke({ q: 42 } as never, ctx)],
      execute: async () => "never",
    });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: "cached", args: { q: "x" } },
          { name: "broken", args: { q: "y" } },
        ],
      },
      { text: "ok" },
    ]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: [cached, broken] }), "go");
    expect(executed).toBe(0);
    expect(result.toolCalls[0]?.output).toBe("cached x");
    expect(result.toolCalls[1]?.error?.kind).toBe("invalid_arguments");
  });
});

describe("the run context", () => {
  it("is execute's second argument and getRunContext() anywhere inside the call", async () => {
    const contexts: RunContext<{ db: string }>[] = [];
    const deep = async () => {
      await wait(1);
      return getRunContext<{ db: string }>();
    };
    const t = tool({
      name: "inspect",
      description: "Inspect.",
      parameters: z.object({}),
      execute: async (_args, ctx: RunContext<{ db: string }>) => {
        contexts.push(ctx);
        expect(await deep()).toBe(ctx);
        ctx.update({ progress: 0.5 });
        return "ok";
      },
    });
    const model = new ScriptedModel([
      { toolCalls: [{ id: "c1", name: "inspect", args: {} }] },
      { text: "done" },
    ]);
    const handle = Runner.stream(new Agent<{ db: string }>({ name: "inspector", model, tools: [t] }), "go", {
      deps: { db: "postgres://" },
      sessionId: "s1",
      userId: "u1",
    });
    const events = await collect(handle);
    const ctx = contexts[0]!;
    expect(ctx).toMatchObject({
      runId: handle.runId,
      sessionId: "s1",
      userId: "u1",
      deps: { db: "postgres://" },
      agent: "inspector",
      turn: 1,
      toolCallId: "c1",
      attempt: 1,
      idempotencyKey: `${handle.runId}:c1`,
      path: ["inspector"],
    });
    expect(ctx.transcript[0]).toEqual({ role: "user", content: "go" });
    expect(ctx.signal).toBeInstanceOf(AbortSignal);
    expect(events.find((e) => e.type === "tool_call_update")).toMatchObject({
      partial: { progress: 0.5 },
      call: { id: "c1" },
    });
    expect(() => getRunContext()).toThrow(UserError);
    expect(() => getRunContext()).toThrow(/outside a tool call: call it while a tool's execute runs/);
  });

  it("stays each call's own across concurrent runs, timers, and siblings that finish first", async () => {
    // The context is switched on only while calls run: a call that ends must not take it
    // away from one still running, in this run or another.
    const seen: Array<[string, string | undefined]> = [];
    const slow = tool({
      name: "slow",
      description: "Slow.",
      parameters: z.object({ ms: z.number() }),
      execute: async ({ ms }) => {
        await wait(ms);
        const afterAwait = getRunContext().toolCallId;
        const inTimer = await new Promise<string>((resolve) =>
          setTimeout(() => resolve(getRunContext().toolCallId), 1),
        );
        seen.push([afterAwait, getRunContext().userId]);
        return `${afterAwait}/${inTimer}`;
      },
    });
    const quick = tool({
      name: "quick",
      description: "Quick.",
      parameters: z.object({}),
      execute: () => getRunContext().toolCallId,
    });
    const runFor = (userId: string, ms: number) => {
      const model = new ScriptedModel([
        {
          toolCalls: [
            { id: `${userId}-quick`, name: "quick", args: {} },
            { id: `${userId}-slow`, name: "slow", args: { ms } },
          ],
        },
        { text: "done" },
      ]);
      return Runner.run(new Agent({ name: "a", model, tools: [slow, quick] }), "go", { userId });
    };
    const [a, b] = await Promise.all([runFor("ann", 15), runFor("bob", 5)]);
    expect(a.toolCalls.map((c) => c.output)).toEqual(["ann-quick", "ann-slow/ann-slow"]);
    expect(b.toolCalls.map((c) => c.output)).toEqual(["bob-quick", "bob-slow/bob-slow"]);
    expect(seen).toEqual([
      ["bob-slow", "bob"],
      ["ann-slow", "ann"],
    ]);
    expect(() => getRunContext()).toThrow(/outside a tool call/);
  });
});

describe("sync tools", () => {
  it("run inline and their thrown errors become results", async () => {
    const add = tool({
      name: "add",
      description: "Add.",
      parameters: z.object({ a: z.number(), b: z.number() }),
      execute: ({ a, b }) => a + b,
    });
    const fail = tool({
      name: "fail",
      description: "Fail.",
      parameters: z.object({}),
      execute: () => {
        throw new Error("sync failure");
      },
    });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: "add", args: { a: 1, b: 2 } },
          { name: "fail", args: {} },
        ],
      },
      { text: "3" },
    ]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: [add, fail] }), "go");
    expect(result.toolCalls.map((r) => r.output)).toEqual(["3", "Tool error: sync failure"]);
  });
});
