/**
 * A caller's signal outlives its runs (a server's shutdown signal, one MCP connection's): a run
 * must not stay attached to it once it has ended, however it ended.
 */
import { getEventListeners } from "node:events";
import { Agent, type Model, Runner, ScriptedModel, tool } from "quiver-agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const echo = tool({
  name: "echo",
  description: "Echo the text.",
  parameters: z.object({ text: z.string() }),
  execute: ({ text }) => text,
});

const failing: Model = {
  name: "broken",
  // biome-ignore lint/correctness/useYield: a model that fails before it streams anything
  async *stream() {
    throw new Error("the provider is down");
  },
};

describe("a signal given to many runs", () => {
  it("holds no listener of a run that ended: completed, failed, cancelled or out of turns", async () => {
    const shutdown = new AbortController();
    const signal = shutdown.signal;
    const turns = () => [{ toolCalls: [{ name: "echo", args: { text: "hi" } }] }, { text: "done" }];
    for (let i = 0; i < 30; i++) {
      const agent = new Agent({ name: "a", model: new ScriptedModel(turns()), tools: [echo] });
      expect((await Runner.run(agent, "go", { signal })).output).toBe("done");
    }
    await Runner.run(new Agent({ name: "b", model: failing }), "go", { signal }).catch(() => {});
    const handle = Runner.stream(
      new Agent({ name: "c", model: new ScriptedModel(turns()), tools: [echo] }),
      "go",
      {
        signal,
      },
    );
    handle.cancel();
    expect((await handle.result()).stopReason).toBe("cancelled");
    const short = new Agent({ name: "d", model: new ScriptedModel(turns()), tools: [echo] });
    expect((await Runner.run(short, "go", { signal, maxTurns: 1 })).stopReason).toBe("max_turns");

    expect(getEventListeners(signal, "abort")).toHaveLength(0);

    // Still cancels a run that is going on.
    const slow = tool({
      name: "slow",
      description: "Wait.",
      parameters: z.object({}),
      execute: (_args, ctx) =>
        new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve("stopped"))),
    });
    const running = Runner.run(
      new Agent({
        name: "e",
        model: new ScriptedModel([{ toolCalls: [{ name: "slow", args: {} }] }]),
        tools: [slow],
      }),
      "go",
      { signal },
    );
    setTimeout(() => shutdown.abort(), 20);
    expect((await running).stopReason).toBe("cancelled");
  });
});
