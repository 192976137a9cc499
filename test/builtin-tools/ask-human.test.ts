import { Agent, type RunEvent, Runner, ScriptedModel, tool, UserError } from "quiver-agents";
import { askHuman, HumanChannel, type HumanQuestion } from "quiver-agents/tools";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

function agentAsking(channel: HumanChannel, calls: Array<{ name: string; args: unknown }>, extraTools = []) {
  const model = new ScriptedModel([{ toolCalls: calls }, { text: "thanks" }]);
  return { model, agent: new Agent({ name: "planner", model, tools: [askHuman(channel), ...extraTools] }) };
}

describe("ask_human", () => {
  it("delivers the question with options, session and run, and returns the operator's answer", async () => {
    const channel = new HumanChannel();
    const { agent } = agentAsking(channel, [
      {
        name: "ask_human",
        args: {
          question: "Which cities?",
          options: [{ label: "Kyoto", description: "temples" }, { label: "Osaka" }],
          multi_select: true,
        },
      },
    ]);
    const asked: HumanQuestion[] = [];
    const operator = (async () => {
      for await (const q of channel.questions()) {
        asked.push(q);
        channel.answer(q.id, "Kyoto\nOsaka");
      }
    })();
    const handle = Runner.stream(agent, "plan a trip", { sessionId: "s-42" });
    const result = await handle.result();
    channel.close();
    await operator;
    expect(asked).toEqual([
      {
        id: expect.stringMatching(/^q_/),
        question: "Which cities?",
        options: [{ label: "Kyoto", description: "temples" }, { label: "Osaka" }],
        multiSelect: true,
        sessionId: "s-42",
        runId: handle.runId,
        callId: result.toolCalls[0]!.call.id,
      },
    ]);
    expect(result.toolCalls[0]).toMatchObject({ ok: true, output: "Kyoto\nOsaka" });
  });

  it("validates options: 2-4, single-line labels, unique after validation; multi_select dropped without options", async () => {
    const channel = new HumanChannel();
    const { agent } = agentAsking(channel, [
      { name: "ask_human", args: { question: "Pick", options: [{ label: "only one" }] } },
      { name: "ask_human", args: { question: "Pick", options: [{ label: "a\nb" }, { label: "c" }] } },
      { name: "ask_human", args: { question: "Pick", options: [{ label: "same" }, { label: "same" }] } },
      { name: "ask_human", args: { question: "Free text?", multi_select: true } },
    ]);
    const asked: HumanQuestion[] = [];
    void (async () => {
      for await (const q of channel.questions()) {
        asked.push(q);
        channel.answer(q.id, "free answer");
      }
    })();
    const result = await Runner.run(agent, "go");
    channel.close();
    expect(result.toolCalls.map((r) => r.error?.kind ?? "ok")).toEqual([
      "invalid_arguments",
      "invalid_arguments",
      "invalid_arguments",
      "ok",
    ]);
    expect(result.toolCalls[0]?.output).toMatch(/options: must NOT have fewer than 2 items/);
    expect(result.toolCalls[2]?.output).toMatch(/labels must be unique; "same" repeats/);
    expect(asked.map((q) => [q.question, q.multiSelect])).toEqual([["Free text?", false]]);
  });

  it("turns cancel and close into tool errors the model reads, and fails fast after close", async () => {
    const channel = new HumanChannel();
    const { agent, model } = agentAsking(channel, [{ name: "ask_human", args: { question: "First?" } }]);
    void (async () => {
      for await (const q of channel.questions()) channel.cancel(q.id, "the operator is away");
    })();
    const result = await Runner.run(agent, "go");
    expect(result.toolCalls[0]?.output).toBe(
      "Tool error: nobody answered: the operator is away\nHint: Continue without the answer or ask differently.",
    );
    expect(model.requests[1]?.messages.at(-1)).toMatchObject({ role: "tool", isError: true });
    channel.close("shutting down");
    const after = agentAsking(channel, [{ name: "ask_human", args: { question: "Still there?" } }]);
    const started = performance.now();
    const closed = await Runner.run(after.agent, "go");
    expect(performance.now() - started).toBeLessThan(500);
    expect(closed.toolCalls[0]?.output).toMatch(/nobody can be asked: shutting down/);
  });

  it("delivers a backlog to a late consumer and skips questions resolved before it got there", async () => {
    const channel = new HumanChannel();
    const a = channel.ask({ question: "A?", options: [], multiSelect: false, runId: "r" });
    const b = channel.ask({ question: "B?", options: [], multiSelect: false, runId: "r" });
    const c = channel.ask({ question: "C?", options: [], multiSelect: false, runId: "r" });
    expect(channel.pending.map((q) => q.question)).toEqual(["A?", "B?", "C?"]);
    channel.answer(channel.pending[1]!.id, "b");
    const seen: string[] = [];
    const consumer = (async () => {
      for await (const q of channel.questions()) {
        seen.push(q.question);
        channel.answer(q.id, q.question.toLowerCase());
      }
    })();
    expect(await Promise.all([a, b, c])).toEqual(["a?", "b", "c?"]);
    channel.close();
    await consumer;
    expect(seen).toEqual(["A?", "C?"]);
  });

  it("allows one questions() consumer", async () => {
    const channel = new HumanChannel();
    const first = channel.questions()[Symbol.asyncIterator]();
    void first.next();
    await wait(1);
    await expect(channel.questions()[Symbol.asyncIterator]().next()).rejects.toBeInstanceOf(UserError);
    channel.close();
  });

  it("is a barrier, and its question is withdrawn when the call times out", async () => {
    const channel = new HumanChannel();
    const spans: string[] = [];
    const work = tool({
      name: "work",
      description: "Work.",
      parameters: z.object({}),
      execute: async () => {
        spans.push("work start");
        await wait(20);
        spans.push("work end");
        return "worked";
      },
    });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: "work", args: {} },
          { name: "ask_human", args: { question: "Q?" } },
        ],
      },
      { text: "ok" },
    ]);
    const agent = new Agent({ name: "a", model, tools: [work, askHuman(channel, { timeoutMs: 50 })] });
    const handle = Runner.stream(agent, "go");
    const events: RunEvent[] = [];
    for await (const ev of handle) {
      events.push(ev);
      if (ev.type === "tool_call_started" && ev.call.name === "ask_human")
        spans.push(`asked (${channel.pending.length} pending)`);
    }
    const result = await handle.result();
    expect(spans).toEqual(["work start", "work end", "asked (1 pending)"]);
    expect(result.toolCalls[1]?.error?.kind).toBe("timeout");
    expect(channel.pending).toEqual([]);
  });
});
