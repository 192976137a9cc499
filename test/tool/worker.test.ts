import { Agent, type RunEvent, Runner, ScriptedModel, Tool, tool } from "quiver-agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";

describe('isolate: "worker"', () => {
  it("runs a CPU-heavy tool off the event loop, with updates and errors crossing back", async () => {
    const fib = tool({
      name: "fib",
      description: "Fibonacci, the slow way.",
      parameters: z.object({ n: z.number().int() }),
      isolate: "worker",
      execute: async ({ n }, ctx) => {
        const slow = (k: number): number => (k < 2 ? k : slow(k - 1) + slow(k - 2));
        ctx.update({ computing: n });
        if (n < 0) throw new Error("n must be positive");
        const busyUntil = Date.now() + 300; // hold the thread: inline, this would freeze the event loop
        while (Date.now() < busyUntil) {}
        return { n, value: slow(n) };
      },
    });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: "fib", args: { n: 27 } },
          { name: "fib", args: { n: -1 } },
        ],
      },
      { text: "done" },
    ]);
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 5);
    const handle = Runner.stream(new Agent({ name: "a", model, tools: [fib] }), "go");
    const events: RunEvent[] = [];
    for await (const ev of handle) events.push(ev);
    clearInterval(ticker);
    const result = await handle.result();
    expect(result.toolCalls[0]?.value).toMatchObject({ n: 27, value: 196418 });
    expect(result.toolCalls[1]).toMatchObject({ ok: false, output: "Tool error: n must be positive" });
    expect(events.filter((e) => e.type === "tool_call_update").map((e) => e.partial)).toContainEqual({
      computing: 27,
    });
    // The main thread kept firing its 5 ms timer through the worker's 300 ms of busy work.
    expect(ticks).toBeGreaterThan(20);
  });

  it("really stops a runaway computation when the attempt times out", async () => {
    const spin = tool({
      name: "spin",
      description: "Never returns.",
      parameters: z.object({}),
      isolate: "worker",
      timeoutMs: 100,
      execute: () => {
        while (true) {
          // burn CPU forever: only terminating the thread stops this
        }
      },
    });
    const model = new ScriptedModel([{ toolCalls: [{ name: "spin", args: {} }] }, { text: "gave up" }]);
    const started = performance.now();
    const result = await Runner.run(new Agent({ name: "a", model, tools: [spin] }), "go");
    expect(result.toolCalls[0]?.error?.kind).toBe("timeout");
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it("works for a class tool's execute method", async () => {
    class Upper extends Tool<{ text: string }> {
      constructor() {
        super({
          name: "upper",
          description: "Upper-case.",
          parameters: z.object({ text: z.string() }),
          isolate: "worker",
        });
      }
      override async execute({ text }: { text: string }) {
        return text.toUpperCase();
      }
    }
    const model = new ScriptedModel([
      { toolCalls: [{ name: "upper", args: { text: "abc" } }] },
      { text: "ok" },
    ]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: [new Upper()] }), "go");
    expect(result.toolCalls[0]?.output).toBe("ABC");
  });
});
