import {
  Agent,
  Budget,
  BudgetExceeded,
  type RunEvent,
  Runner,
  ScriptedModel,
  setModelPrice,
  tool,
  UserError,
} from "quiver-agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ping = tool({
  name: "ping",
  description: "Ping.",
  parameters: z.object({}),
  execute: async () => "pong",
});
const loopingModel = (usage?: object) =>
  new ScriptedModel(
    Array.from({ length: 20 }, () => ({ toolCalls: [{ name: "ping", args: {} }], ...(usage && { usage }) })),
  );

describe("budgets", () => {
  it("maxToolCalls counts every requested call, rejected ones too; calls past it are skipped", async () => {
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: "ping", args: {} },
          { name: "nope", args: {} },
        ],
      },
      {
        toolCalls: [
          { name: "ping", args: {} },
          { name: "ping", args: {} },
        ],
      },
      { text: "unreachable" },
    ]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: [ping] }), "go", {
      budget: new Budget({ maxToolCalls: 3 }),
    });
    expect(result.stopReason).toBe("budget");
    expect(result.toolCalls.map((r) => (r.ok ? "ok" : r.error?.kind))).toEqual([
      "ok",
      "unknown_tool",
      "ok",
      "skipped",
    ]);
    expect(result.toolCalls[3]?.output).toMatch(/budget ran out \(maxToolCalls\)/);
    expect(model.requests).toHaveLength(2);
  });

  it("maxTurns stops with budget (not max_turns)", async () => {
    const model = loopingModel();
    const result = await Runner.run(new Agent({ name: "a", model, tools: [ping] }), "go", {
      budget: new Budget({ maxTurns: 2 }),
    });
    expect(result.stopReason).toBe("budget");
    expect(model.requests).toHaveLength(2);
  });

  it.each([
    ["maxInputTokens", { maxInputTokens: 250 }],
    ["maxOutputTokens", { maxOutputTokens: 25 }],
    ["maxTotalTokens", { maxTotalTokens: 275 }],
  ])("%s is checked at turn boundaries (one turn may overshoot)", async (_name, limits) => {
    const model = loopingModel({ inputTokens: 100, outputTokens: 10 });
    const handle = Runner.stream(new Agent({ name: "a", model, tools: [ping] }), "go", {
      budget: new Budget(limits),
    });
    for await (const _ of handle);
    const result = await handle.result();
    expect(result.stopReason).toBe("budget");
    // 3 turns: 300 in / 30 out went past the limit at the third turn's end.
    expect(model.requests).toHaveLength(3);
    expect(result.usage.inputTokens).toBe(300);
  });

  it("maxCostUsd uses the provider's cost, or the price table (which users can extend)", async () => {
    setModelPrice("test-model", { input: 1_000, output: 2_000 }); // $ per million tokens
    const model = new ScriptedModel(
      Array.from({ length: 10 }, () => ({
        toolCalls: [{ name: "ping", args: {} }],
        usage: { inputTokens: 100, outputTokens: 10 },
      })),
      { name: "test-model" },
    );
    const result = await Runner.run(new Agent({ name: "a", model, tools: [ping] }), "go", {
      budget: new Budget({ maxCostUsd: 0.35 }),
    });
    // Each turn costs 100 × $0.001 + 10 × $0.002 = $0.12.
    expect(result.usage.costUsd).toBeCloseTo(0.36, 6);
    expect(result.stopReason).toBe("budget");
    const reported = new ScriptedModel(
      [{ text: "hi", usage: { inputTokens: 1, outputTokens: 1, costUsd: 0.5 } }],
      { name: "test-model" },
    );
    expect((await Runner.run(new Agent({ name: "a", model: reported }), "go")).usage.costUsd).toBe(0.5);
  });

  it("prices each model by its own entry or a dated snapshot of it, cache writes at their rate", async () => {
    const cost = async (name: string, usage: Record<string, number>) =>
      (
        await Runner.run(
          new Agent({ name: "a", model: new ScriptedModel([{ text: "hi", usage }], { name }) }),
          "go",
        )
      ).usage.costUsd;
    const million = { inputTokens: 1_000_000, outputTokens: 0 };
    // o3-pro is not o3 (ten times its price), nor is o3-mini; a dated o3 is o3.
    expect(await cost("openai:o3-pro", million)).toBeCloseTo(20, 6);
    expect(await cost("openai:o3-mini", million)).toBeCloseTo(1.1, 6);
    expect(await cost("openai:o3-2025-04-16", million)).toBeCloseTo(2, 6);
    expect(await cost("anthropic:claude-sonnet-4-5-20250929", million)).toBeCloseTo(3, 6);
    expect(await cost("openai:o3-turbo-preview", million)).toBeUndefined();
    // Anthropic: 200k cache writes at 1.25×, 300k reads at 0.1×, the rest at the input rate.
    const cached = {
      inputTokens: 1_000_000,
      cacheWriteTokens: 200_000,
      cachedInputTokens: 300_000,
      outputTokens: 0,
    };
    expect(await cost("anthropic:claude-sonnet-4-5", cached)).toBeCloseTo(
      0.5 * 3 + 0.2 * 3.75 + 0.3 * 0.3,
      6,
    );
  });

  it("a token limit reached exactly sends no further request", async () => {
    const model = new ScriptedModel(
      Array.from({ length: 5 }, () => ({
        toolCalls: [{ name: "ping", args: {} }],
        usage: { inputTokens: 100, outputTokens: 10 },
      })),
    );
    const result = await Runner.run(new Agent({ name: "a", model, tools: [ping] }), "go", {
      budget: new Budget({ maxTotalTokens: 220 }),
    });
    expect(result.stopReason).toBe("budget");
    expect(result.usage.totalTokens).toBe(220);
    expect(model.requests).toHaveLength(2);
  });

  it("a cost limit over a model with no price says so once, instead of silently never tripping", async () => {
    const model = new ScriptedModel(
      [
        { toolCalls: [{ name: "ping", args: {} }], usage: { inputTokens: 100, outputTokens: 10 } },
        { text: "done", usage: { inputTokens: 100, outputTokens: 10 } },
      ],
      { name: "my-private-model" },
    );
    const handle = Runner.stream(new Agent({ name: "a", model, tools: [ping] }), "go", {
      budget: new Budget({ maxCostUsd: 1 }),
    });
    const warnings: string[] = [];
    for await (const event of handle)
      if (event.type === "warning") warnings.push(`${event.code}: ${event.message}`);
    expect((await handle.result()).output).toBe("done");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^unpriced_model: no price is known for my-private-model.*setModelPrice/);
  });

  it("maxDurationMs aborts running calls at the deadline and stops with budget", async () => {
    let signal: AbortSignal | undefined;
    const slow = tool({
      name: "slow",
      description: "Slow.",
      parameters: z.object({}),
      execute: async (_a, ctx) => {
        signal = ctx.signal;
        await wait(5_000);
        return "late";
      },
    });
    const model = new ScriptedModel([{ toolCalls: [{ name: "slow", args: {} }] }, { text: "unreachable" }]);
    const started = performance.now();
    const result = await Runner.run(new Agent({ name: "a", model, tools: [slow] }), "go", {
      budget: new Budget({ maxDurationMs: 60 }),
    });
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(result.stopReason).toBe("budget");
    expect(signal?.aborted).toBe(true);
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "budget" } });
  });

  it("a BudgetExceeded a tool throws for this run ends it; in-flight calls finish and keep their results", async () => {
    const spend = tool({
      name: "spend",
      description: "Spend.",
      parameters: z.object({}),
      execute: async (_a, ctx) => {
        throw new BudgetExceeded(ctx.runId, "credits", "out of credits");
      },
    });
    const slowPing = tool({
      name: "slow_ping",
      description: "Slow ping.",
      parameters: z.object({}),
      execute: async () => {
        await wait(30);
        return "pong";
      },
    });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: "slow_ping", args: {} },
          { name: "spend", args: {} },
        ],
      },
      { text: "unreachable" },
    ]);
    const handle = Runner.stream(new Agent({ name: "a", model, tools: [spend, slowPing] }), "go");
    const events: RunEvent[] = [];
    for await (const ev of handle) events.push(ev);
    const result = await handle.result();
    expect(result.stopReason).toBe("budget");
    expect(result.toolCalls.map((r) => r.output)).toEqual(["pong", "Tool error: out of credits"]);
    expect(events.at(-1)).toMatchObject({ type: "run_completed", stopReason: "budget" });
  });

  it("after a tool's BudgetExceeded, a call still waiting for a slot or its tool's permit never starts", async () => {
    for (const limit of [{ maxConcurrentToolCalls: 1 }, { concurrency: 1 }]) {
      const ran: boolean[] = [];
      const work = tool({
        name: "work",
        description: "Work.",
        parameters: z.object({ spend: z.boolean() }),
        ...("concurrency" in limit && limit),
        execute: async ({ spend }, ctx) => {
          ran.push(spend);
          await wait(10);
          if (spend) throw new BudgetExceeded(ctx.runId, "credits", "out of credits");
          return "done";
        },
      });
      const model = new ScriptedModel([
        {
          toolCalls: [
            { name: "work", args: { spend: true } },
            { name: "work", args: { spend: false } },
          ],
        },
        { text: "unreachable" },
      ]);
      const agent = new Agent({
        name: "a",
        model,
        tools: [work],
        ...("maxConcurrentToolCalls" in limit && limit),
      });
      const result = await Runner.run(agent, "go");
      expect(result.stopReason).toBe("budget");
      expect(ran, JSON.stringify(limit)).toEqual([true]);
      expect(result.toolCalls.map((r) => r.error?.kind)).toEqual(["budget", "skipped"]);
    }
  });

  it("one Budget object can be reused: each run tracks its own usage", async () => {
    const budget = new Budget({ maxToolCalls: 1 });
    for (let i = 0; i < 2; i++) {
      const model = new ScriptedModel([{ toolCalls: [{ name: "ping", args: {} }] }, { text: "done" }]);
      expect(
        (await Runner.run(new Agent({ name: "a", model, tools: [ping] }), "go", { budget })).stopReason,
      ).toBe("completed");
    }
  });

  it("rejects nonsense limits", () => {
    expect(() => new Budget({ maxToolCalls: -1 })).toThrow(UserError);
  });
});
