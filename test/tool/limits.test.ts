/**
 * Numbers a tool, an agent or a budget is given are checked when it is defined: a limit of 0
 * slots waited forever, a misspelt budget limit was no limit. Truncation keeps something of
 * every result, and what a store keeps for recall is bounded too.
 */
import { Agent, Budget, Runner, ScriptedModel, tool, UserError } from "quiver-agents";
import { MemoryStore } from "quiver-agents/store";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { resultArtifactKey } from "../../src/run/conversation/recall.js";

const base = { name: "p", description: "Ping.", parameters: z.object({}), execute: async () => "pong" };

describe("limits checked at definition", () => {
  it.each([
    [{ concurrency: 0 }, /tool "p": concurrency must be a whole number of at least 1 \(or Infinity\), got 0/],
    [{ retries: 1.5 }, /tool "p": retries must be a whole number of at least 0, got 1.5/],
    [{ retries: -1 }, /retries must be a whole number of at least 0, got -1/],
    [{ timeoutMs: 0 }, /timeoutMs must be a whole number of at least 1, got 0: leave it out for no timeout/],
    [{ timeoutMs: -5 }, /timeoutMs must be/],
    [{ maxOutputChars: 0 }, /maxOutputChars must be/],
  ])("a tool with %o is a UserError", (options, message) => {
    expect(() => tool({ ...base, ...options })).toThrow(UserError);
    expect(() => tool({ ...base, ...options })).toThrow(message);
  });

  it("takes Infinity where it means no limit", () => {
    expect(tool({ ...base, concurrency: Infinity, maxOutputChars: Infinity }).concurrency).toBe(Infinity);
    const agent = new Agent({ name: "a", model: new ScriptedModel([]), maxConcurrentToolCalls: Infinity });
    expect(agent.config.maxConcurrentToolCalls).toBe(Infinity);
  });

  it.each([
    [{ maxConcurrentToolCalls: 0 }, /agent "a": maxConcurrentToolCalls must be a whole number of at least 1/],
    [{ maxConcurrentToolCalls: -1 }, /maxConcurrentToolCalls/],
    [{ maxConcurrentToolCalls: 0.5 }, /maxConcurrentToolCalls/],
    [{ maxToolOutputChars: -1 }, /agent "a": maxToolOutputChars/],
    [{ defaultToolRetries: Number.NaN }, /defaultToolRetries/],
    [{ defaultToolTimeoutMs: 0 }, /defaultToolTimeoutMs/],
  ])("an agent with %o is a UserError", (options, message) => {
    expect(() => new Agent({ name: "a", model: new ScriptedModel([]), ...options })).toThrow(message);
  });

  it("refuses a budget limit it does not know, naming the ones it does", () => {
    expect(() => new Budget({ maxTokens: 5 } as never)).toThrow(
      /Budget has no limit named maxTokens: use maxTurns, maxToolCalls, maxInputTokens, maxOutputTokens, maxTotalTokens, maxDurationMs, maxCostUsd/,
    );
  });

  it("a run with maxConcurrentToolCalls: 1 still runs its calls (one at a time)", async () => {
    const agent = new Agent({
      name: "a",
      model: new ScriptedModel([
        {
          toolCalls: [
            { name: "p", args: {} },
            { name: "p", args: {} },
          ],
        },
        { text: "ok" },
      ]),
      tools: [tool(base)],
      maxConcurrentToolCalls: 1,
    });
    const result = await Runner.run(agent, "go");
    expect(result.toolCalls.map((c) => c.output)).toEqual(["pong", "pong"]);
  });
});

describe("what an agent is given as tools", () => {
  it("warns once per run about a tool the model knows only by name", async () => {
    const agent = new Agent({
      name: "a",
      model: new ScriptedModel([{ text: "ok" }]),
      tools: [tool({ ...base, description: undefined as never, name: "bare" }), tool(base)],
    });
    const warnings: string[] = [];
    for await (const ev of Runner.stream(agent, "go"))
      if (ev.type === "warning") warnings.push(`${ev.code}: ${ev.message}`);
    expect(warnings).toEqual([
      'tool_without_description: tool "bare" has no description: the model sees only its name and parameters; say what it does and when to use it',
    ]);
  });

  it("names a search backend or page reader given where a tool belongs, when the agent is made", async () => {
    const { duckduckgoSearch, HttpReader } = await import("quiver-agents/tools");
    for (const [given, wrap] of [
      [duckduckgoSearch(), /a search backend, not a tool: wrap it with webSearch/],
      [new HttpReader(), /a page reader, not a tool: wrap it with webFetch/],
    ] as const) {
      expect(
        () => new Agent({ name: "a", model: new ScriptedModel([{ text: "ok" }]), tools: [given as never] }),
      ).toThrow(wrap);
    }
  });
});

describe("truncation keeps something", () => {
  it("a cap smaller than the marker keeps that much of the head, the marker on top", async () => {
    const sixty = "0123456789".repeat(6);
    const agent = new Agent({
      name: "a",
      model: new ScriptedModel([{ toolCalls: [{ name: "p", args: {} }] }, { text: "ok" }]),
      tools: [tool({ ...base, maxOutputChars: 10, execute: async () => sixty })],
    });
    const [call] = (await Runner.run(agent, "go")).toolCalls;
    expect(call!.output).toBe("0123456789\n[... tool output truncated: kept 10 of 60 chars ...]\n");
  });

  it("a store keeps at most 10 million characters of one result for recall", async () => {
    const store = new MemoryStore();
    const huge = `${"h".repeat(6_000_000)}${"t".repeat(6_000_000)}`;
    const agent = new Agent({
      name: "a",
      model: new ScriptedModel([{ toolCalls: [{ id: "c1", name: "p", args: {} }] }, { text: "ok" }]),
      tools: [tool({ ...base, execute: async () => huge })],
    });
    const result = await Runner.run(agent, "go", { store });
    expect(result.toolCalls[0]!.output).toMatch(/call recall_tool_result with call_id "c1"/);
    const kept = (await store.getArtifact(result.runId, resultArtifactKey("c1")))!;
    expect(kept.length).toBeLessThanOrEqual(10_000_000);
    expect(kept.length).toBeGreaterThan(9_999_000);
    expect(kept.startsWith("hhhh")).toBe(true);
    expect(kept.endsWith("tttt")).toBe(true);
    expect(kept).toMatch(/\[\.\.\. tool output truncated: kept [\d,]+ of 12,000,000 chars \.\.\.\]/);
  });
});
