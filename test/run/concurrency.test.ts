import { Agent, Runner, ScriptedModel, tool } from "quiver-agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Span = { label: string; start: number; end: number };
const maxOverlap = (spans: Span[]) =>
  Math.max(...spans.map((s) => spans.filter((o) => o.start <= s.start && s.start < o.end).length));

describe("concurrency control", () => {
  it("a tool's concurrency limit holds across runs of the process", async () => {
    const spans: Span[] = [];
    const rateLimited = tool({
      name: "api",
      description: "A rate-limited API.",
      parameters: z.object({ label: z.string() }),
      concurrency: 2,
      execute: async ({ label }) => {
        const start = performance.now();
        await wait(25);
        spans.push({ label, start, end: performance.now() });
        return label;
      },
    });
    const runOnce = (prefix: string) =>
      Runner.run(
        new Agent({
          name: "a",
          model: new ScriptedModel([
            { toolCalls: [1, 2, 3].map((i) => ({ name: "api", args: { label: `${prefix}${i}` } })) },
            { text: "ok" },
          ]),
          tools: [rateLimited],
        }),
        "go",
      );
    const results = await Promise.all([runOnce("x"), runOnce("y")]);
    expect(spans).toHaveLength(6);
    expect(maxOverlap(spans)).toBe(2);
    expect(results.every((r) => r.toolCalls.every((c) => c.ok))).toBe(true);
  });

  it("cancelSiblingsOnError aborts the still-running siblings of a failed call", async () => {
    const signals: AbortSignal[] = [];
    const slow = tool({
      name: "slow",
      description: "Slow.",
      parameters: z.object({}),
      execute: async (_a, ctx) => {
        signals.push(ctx.signal);
        await wait(2_000);
        return "late";
      },
    });
    const failing = tool({
      name: "failing",
      description: "Fails.",
      parameters: z.object({}),
      execute: async () => {
        await wait(10);
        throw new Error("boom");
      },
    });
    const model = () =>
      new ScriptedModel([
        {
          toolCalls: [
            { name: "slow", args: {} },
            { name: "failing", args: {} },
          ],
        },
        { text: "ok" },
      ]);
    const started = performance.now();
    const result = await Runner.run(
      new Agent({ name: "a", model: model(), tools: [slow, failing], cancelSiblingsOnError: true }),
      "go",
    );
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(result.toolCalls.map((r) => r.error?.kind)).toEqual(["cancelled", "tool_error"]);
    expect(result.toolCalls[0]?.output).toMatch(/cancelled because failing failed/);
    expect(signals[0]?.aborted).toBe(true);
  });

  it("a call waiting for its tool's permit when a sibling's failure cancels it never starts", async () => {
    let ran = 0;
    const limited = tool({
      name: "limited",
      description: "One at a time.",
      parameters: z.object({ fail: z.boolean() }),
      concurrency: 1,
      execute: async ({ fail }) => {
        ran++;
        if (fail) throw new Error("boom");
        return "ok";
      },
    });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: "limited", args: { fail: true } },
          { name: "limited", args: { fail: false } },
        ],
      },
      { text: "done" },
    ]);
    const handle = Runner.stream(
      new Agent({ name: "a", model, tools: [limited], cancelSiblingsOnError: true }),
      "go",
    );
    const events: string[] = [];
    for await (const ev of handle) {
      if (ev.type === "tool_call_started" || ev.type === "tool_call_completed")
        events.push(`${ev.type} ${ev.call.id}`);
    }
    const [first, second] = (await handle.result()).toolCalls;
    expect(ran).toBe(1);
    expect(second?.error?.kind).toBe("cancelled");
    // Nothing about the second call after its result: it never started.
    expect(events).toEqual([
      `tool_call_started ${first!.call.id}`,
      `tool_call_completed ${first!.call.id}`,
      `tool_call_completed ${second!.call.id}`,
    ]);
  });
});
