import {
  Agent,
  type EventOf,
  type Model,
  type ModelStreamEvent,
  type RunEvent,
  Runner,
  ScriptedModel,
  tool,
} from "quiver-agents";
import { askHuman, HumanChannel, type HumanQuestion } from "quiver-agents/tools";
import { describe, expect, it } from "vitest";
import { z } from "zod";

// What traces and UIs need from the event stream, with or without a tracer.

const note = tool({
  name: "note",
  description: "Take a note.",
  parameters: z.object({ text: z.string() }),
  execute: async ({ text }) => `noted: ${text}`,
});

async function events(handle: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const out: RunEvent[] = [];
  for await (const ev of handle) out.push(ev);
  return out;
}
const ofType = <T extends RunEvent["type"]>(list: RunEvent[], type: T) =>
  list.filter((e): e is EventOf<T> => e.type === type);

/** A model that streams each turn's events as given (the shape providers produce). */
function streamingModel(turns: ModelStreamEvent[][]): Model {
  let next = 0;
  return {
    name: "anthropic:claude-test",
    stream(): AsyncIterable<ModelStreamEvent> {
      const turn = turns[next++] ?? [];
      return (async function* () {
        yield* turn;
      })();
    },
  };
}

describe("turn events", () => {
  it("turn_started names the model; turn_completed carries the answer's finish reason and usage", async () => {
    const model = new ScriptedModel(
      [
        { toolCalls: [{ name: "note", args: { text: "a" } }], usage: { inputTokens: 12, outputTokens: 3 } },
        { text: "done", usage: { inputTokens: 20, outputTokens: 2 } },
      ],
      { name: "openai:gpt-4.1-mini" },
    );
    const list = await events(Runner.stream(new Agent({ name: "n", model, tools: [note] }), "go"));
    expect(ofType(list, "turn_started").map((e) => [e.turn, e.model])).toEqual([
      [1, "openai:gpt-4.1-mini"],
      [2, "openai:gpt-4.1-mini"],
    ]);
    const completed = ofType(list, "turn_completed");
    expect(completed.map((e) => [e.turn, e.finish])).toEqual([
      [1, "tool_calls"],
      [2, "stop"],
    ]);
    expect(completed[0]!.usage).toMatchObject({ inputTokens: 12, outputTokens: 3 });
    expect(completed[1]!.usage).toMatchObject({ inputTokens: 20, outputTokens: 2 });
    // The first turn completes after its calls' results.
    const firstCompleted = list.indexOf(completed[0]!);
    const callDone = list.findIndex((e) => e.type === "tool_call_completed");
    expect(callDone).toBeLessThan(firstCompleted);
  });

  it("a turn cut off by the token limit completes with finish length and no usage when none was reported", async () => {
    const model = new ScriptedModel([
      { toolCalls: [{ name: "note", args: '{"text": "an unfinished' }], finish: "length" },
      { text: "sorry" },
    ]);
    const list = await events(Runner.stream(new Agent({ name: "n", model, tools: [note] }), "go"));
    const [first] = ofType(list, "turn_completed");
    expect(first!.finish).toBe("length");
    expect("usage" in first!).toBe(false);
  });
});

describe("tool_call_input_delta.callId", () => {
  it("is the run-unique id the call's later events carry, claimed at the first delta even before the provider's id", async () => {
    const model = streamingModel([
      [
        // Two calls streamed interleaved; the first delta of index 0 has no id yet.
        { type: "tool_call_delta", index: 0, name: "note", argsDelta: '{"te' },
        { type: "tool_call_delta", index: 1, id: "toolu_B", name: "note", argsDelta: '{"text":' },
        { type: "tool_call_delta", index: 0, id: "toolu_A", argsDelta: 'xt":"x"}' },
        { type: "tool_call_delta", index: 1, argsDelta: '"y"}' },
        { type: "finish", reason: "tool_calls" },
      ],
      [
        // The provider reuses an id from the last turn: the run gives the call a fresh one.
        { type: "tool_call_delta", index: 0, id: "toolu_B", name: "note", argsDelta: '{"text":"z"}' },
        { type: "finish", reason: "tool_calls" },
      ],
      [
        { type: "text_delta", delta: "ok" },
        { type: "finish", reason: "stop" },
      ],
    ]);
    const handle = Runner.stream(new Agent({ name: "n", model, tools: [note] }), "go");
    const list = await events(handle);
    const result = await handle.result();
    const deltas = ofType(list, "tool_call_input_delta");
    const requested = ofType(list, "tool_call_requested").map((e) => e.call);
    expect(requested).toHaveLength(3);
    expect(new Set(requested.map((c) => c.id)).size).toBe(3);

    const [a, b, c] = requested;
    expect(deltas.filter((d) => d.index === 0 && d.callId === a!.id)).toHaveLength(2);
    expect(b!.id).toBe("toolu_B");
    expect(deltas.filter((d) => d.callId === "toolu_B")).toHaveLength(2);
    // index 0 streamed before its id arrived: the runner's id, with the provider's kept for the wire.
    expect(a!.providerCallId).toBe("toolu_A");
    expect(c!.id).not.toBe("toolu_B");
    expect(c!.providerCallId).toBe("toolu_B");
    expect(deltas.at(-1)!.callId).toBe(c!.id);
    // Every delta names a call that was then requested, and completed under the same id.
    const completed = new Set(ofType(list, "tool_call_completed").map((e) => e.call.id));
    for (const delta of deltas) expect(completed.has(delta.callId)).toBe(true);
    expect(result.toolCalls.map((r) => r.output)).toEqual(["noted: x", "noted: y", "noted: z"]);
  });
});

describe("HumanChannel questions", () => {
  it("carry the id of the ask_human call that asked", async () => {
    const channel = new HumanChannel();
    const asked: HumanQuestion[] = [];
    const answering = (async () => {
      for await (const question of channel.questions()) {
        asked.push(question);
        channel.answer(question.id, "blue");
      }
    })();
    const model = new ScriptedModel([
      { toolCalls: [{ id: "ask_1", name: "ask_human", args: { question: "Favourite colour?" } }] },
      { text: "Blue it is." },
    ]);
    const handle = Runner.stream(new Agent({ name: "n", model, tools: [askHuman(channel)] }), "go");
    const list = await events(handle);
    channel.close();
    await answering;
    const call = ofType(list, "tool_call_requested")[0]!.call;
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ callId: call.id, runId: handle.runId, question: "Favourite colour?" });
  });
});
