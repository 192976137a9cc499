import { Agent, type RunEvent, Runner, type RunResult, replay, ScriptedModel, tool } from "quiver-agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

const sleepy = tool({
  name: "sleepy",
  description: "Sleeps, then answers.",
  parameters: z.object({ ms: z.number(), say: z.string() }),
  execute: async ({ ms, say }) => {
    await wait(ms);
    return { said: say };
  },
});
const huge = tool({
  name: "huge",
  description: "Big.",
  parameters: z.object({}),
  maxOutputChars: 100,
  execute: async () => "z".repeat(1_000),
});

async function liveAndLog(
  agent: Agent,
  input: string,
  options: { cancelAfterMs?: number; maxTurns?: number } = {},
) {
  const handle = Runner.stream(agent, input, options.maxTurns ? { maxTurns: options.maxTurns } : {});
  if (options.cancelAfterMs) setTimeout(() => handle.cancel(), options.cancelAfterMs);
  const events: RunEvent[] = [];
  for await (const ev of handle) events.push(JSON.parse(JSON.stringify(ev)));
  return { result: await handle.result(), events };
}

/** The live result as a log can know it: raw values are never persisted. */
function withoutValues(result: RunResult<unknown>) {
  return result.toolCalls.map(({ value: _value, ...rest }) => rest);
}

describe("replay(events)", () => {
  it("rebuilds the transcript, calls (in request order) and usage of a completed run", async () => {
    const model = new ScriptedModel([
      {
        text: "Working on it.",
        toolCalls: [
          { name: "sleepy", args: { ms: 40, say: "first" } },
          { name: "sleepy", args: { ms: 5, say: "second" } },
          { name: "huge", args: {} },
          { name: "missing", args: {} },
        ],
        usage: { inputTokens: 100, outputTokens: 20 },
      },
      { text: "Both answered.", usage: { inputTokens: 150, outputTokens: 10 } },
    ]);
    const { result, events } = await liveAndLog(new Agent({ name: "a", model, tools: [sleepy, huge] }), "go");
    const state = replay(events);
    expect(state.messages).toEqual(result.messages);
    expect(state.toolCalls).toEqual(withoutValues(result));
    expect(state.usage).toEqual(result.usage);
    expect(state).toMatchObject({
      status: "completed",
      stopReason: "completed",
      output: "Both answered.",
      runId: result.runId,
      turn: 2,
    });
    expect(state.pendingCalls).toEqual([]);
    expect(state.lastSeq).toBe(events.length);
  });

  it("rebuilds a cancelled run, synthesised results included", async () => {
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: "sleepy", args: { ms: 5, say: "quick" } },
          { name: "sleepy", args: { ms: 1_000, say: "slow" } },
        ],
      },
      { text: "never" },
    ]);
    const { result, events } = await liveAndLog(new Agent({ name: "a", model, tools: [sleepy] }), "go", {
      cancelAfterMs: 60,
    });
    expect(result.stopReason).toBe("cancelled");
    const state = replay(events);
    expect(state.messages).toEqual(result.messages);
    expect(state.toolCalls).toEqual(withoutValues(result));
    expect(state.stopReason).toBe("cancelled");
  });

  it("rebuilds a run cancelled while its model turn streamed, with that turn closed", async () => {
    const model = new ScriptedModel([{ text: "hello", delayMs: 200 }]);
    const { result, events } = await liveAndLog(new Agent({ name: "a", model }), "hi", { cancelAfterMs: 20 });
    expect(result.stopReason).toBe("cancelled");
    expect(events.map((e) => e.type)).toEqual([
      "run_started",
      "turn_started",
      "turn_completed",
      "run_completed",
    ]);
    const state = replay(events);
    expect(state.openTurn).toBeUndefined();
    expect(state.messages).toEqual(result.messages);
  });

  it("rebuilds a run that hit max_turns", async () => {
    const model = new ScriptedModel(
      Array.from({ length: 3 }, () => ({ toolCalls: [{ name: "sleepy", args: { ms: 1, say: "x" } }] })),
    );
    const { result, events } = await liveAndLog(new Agent({ name: "a", model, tools: [sleepy] }), "go", {
      maxTurns: 2,
    });
    const state = replay(events);
    expect(state.messages).toEqual(result.messages);
    expect(state.toolCalls).toEqual(withoutValues(result));
    expect(state.stopReason).toBe("max_turns");
  });

  it("reports calls that were requested but have no result in a log cut short", async () => {
    const model = new ScriptedModel([
      { toolCalls: [{ id: "c1", name: "sleepy", args: { ms: 1, say: "x" } }] },
      { text: "ok" },
    ]);
    const { events } = await liveAndLog(new Agent({ name: "a", model, tools: [sleepy] }), "go");
    const cut = events.slice(0, events.findIndex((e) => e.type === "tool_call_started") + 1);
    const state = replay(cut);
    expect(state.status).toBe("running");
    expect(state.pendingCalls.map((c) => c.id)).toEqual(["c1"]);
  });
});
