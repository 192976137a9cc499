import {
  Agent,
  type Message,
  type ModelRequest,
  type RunEvent,
  Runner,
  ScriptedModel,
  type ScriptedTurn,
  tool,
} from "quiver-agents";
import { LeaseConflict, MemoryStore } from "quiver-agents/store";
import { describe, expect, it } from "vitest";
import { z } from "zod";

async function collect(handle: AsyncIterable<RunEvent>) {
  const events: RunEvent[] = [];
  for await (const ev of handle) events.push(ev);
  return events;
}

/**
 * A model whose answer depends only on the transcript, so a resumed run gets the same answers
 * as an uninterrupted one: turn N of the conversation (counted by assistant messages) plays
 * script[N].
 */
function transcriptModel(script: ScriptedTurn[]) {
  return new ScriptedModel(
    Array.from({ length: 50 }, () => (req: ModelRequest) => {
      const turn = req.messages.filter((m) => m.role === "assistant").length;
      return script[turn] ?? { text: "(script over)" };
    }),
  );
}

describe("a stored run", () => {
  it("stores every event before the reader sees it, and tool_call_started before execute runs", async () => {
    const store = new MemoryStore();
    let storedAtExecute: string[] = [];
    const probe = tool({
      name: "probe",
      description: "Probe.",
      parameters: z.object({}),
      execute: async (_a, ctx) => {
        storedAtExecute = (await store.read(ctx.runId)).map((e) => e.type);
        return "ok";
      },
    });
    const model = new ScriptedModel([{ toolCalls: [{ name: "probe", args: {} }] }, { text: "done" }]);
    const handle = Runner.stream(new Agent({ name: "a", model, tools: [probe] }), "go", { store });
    const seen: RunEvent[] = [];
    for await (const ev of handle) {
      const stored = await store.read(handle.runId);
      expect(stored.some((e) => e.seq === ev.seq)).toBe(true);
      seen.push(ev);
    }
    expect(storedAtExecute.at(-1)).toBe("tool_call_started");
    expect((await store.read(handle.runId)).map((e) => e.seq)).toEqual(seen.map((e) => e.seq));
    expect(await store.getRun(handle.runId)).toMatchObject({ status: "completed", agent: "a" });
  });

  it("is driven by one process at a time: a second driver gets LeaseConflict", async () => {
    const store = new MemoryStore();
    const slow = tool({
      name: "slow",
      description: "Slow.",
      parameters: z.object({}),
      execute: () => new Promise((r) => setTimeout(r, 100, "ok")),
    });
    const agent = new Agent({
      name: "a",
      model: transcriptModel([{ toolCalls: [{ name: "slow", args: {} }] }, { text: "done" }]),
      tools: [slow],
    });
    const first = Runner.stream(agent, "go", { store, runId: "run-shared" });
    await new Promise((r) => setTimeout(r, 20));
    const second = Runner.resume(agent, "run-shared", { store });
    await expect(second.result()).rejects.toBeInstanceOf(LeaseConflict);
    expect((await first.result()).stopReason).toBe("completed");
  });

  it("continues a session's conversation from the store", async () => {
    const store = new MemoryStore();
    const model = new ScriptedModel([{ text: "Hi Ada." }, { text: "You are Ada." }]);
    const agent = new Agent({ name: "a", model });
    await Runner.run(agent, "I am Ada.", { store, sessionId: "chat-1" });
    const second = await Runner.run(agent, "Who am I?", { store, sessionId: "chat-1" });
    expect(model.requests[1]?.messages.map((m) => m.content)).toEqual(["I am Ada.", "Hi Ada.", "Who am I?"]);
    expect(second.messages).toHaveLength(4);
    expect((await store.listSessions()).map((s) => [s.sessionId, s.runs])).toEqual([["chat-1", 2]]);
    await store.clearSession("chat-1");
    const third = await Runner.run(
      agent.clone({ model: new ScriptedModel([{ text: "Hello, stranger." }]) }),
      "Who am I?",
      {
        store,
        sessionId: "chat-1",
      },
    );
    expect(third.messages.map((m) => m.content)).toEqual(["Who am I?", "Hello, stranger."]);
  });

  it("continues a session from its top-level runs, not from an agent-as-tool's child run", async () => {
    const store = new MemoryStore();
    const helper = new Agent({ name: "helper", model: new ScriptedModel([{ text: "child answer" }]) });
    const model = new ScriptedModel([
      { toolCalls: [{ name: "helper", args: { input: "sub question" } }] },
      { text: "first answer" },
      { text: "second answer" },
    ]);
    const agent = new Agent({ name: "main", model, tools: [helper.asTool()] });
    await Runner.run(agent, "first question", { store, sessionId: "s" });
    await Runner.run(agent, "second question", { store, sessionId: "s" });
    const history = model.requests[2]!.messages.map((m) => (typeof m.content === "string" ? m.content : ""));
    expect(history[0]).toBe("first question");
    expect(history).not.toContain("sub question");
    expect(history.at(-1)).toBe("second question");
  });

  it("keeps a truncated result's full text, which recall_tool_result reads by call id and offset", async () => {
    const store = new MemoryStore();
    const full = Array.from({ length: 400 }, (_, i) => `line ${i}`).join("\n");
    const big = tool({
      name: "big",
      description: "Big.",
      parameters: z.object({}),
      maxOutputChars: 600,
      execute: async () => full,
    });
    const model = new ScriptedModel([
      { toolCalls: [{ id: "c1", name: "big", args: {} }] },
      (req) => {
        const notice = String(req.messages.at(-1)?.content);
        const offset = Number(/offset (\d+) to read on/.exec(notice)?.[1]);
        return {
          toolCalls: [{ name: "recall_tool_result", args: { call_id: "c1", offset, max_chars: 30 } }],
        };
      },
      { toolCalls: [{ name: "recall_tool_result", args: { call_id: "nope" } }] },
      { text: "done" },
    ]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: [big] }), "go", { store });
    const first = result.toolCalls[0]!;
    expect(first.truncated).toEqual({ originalChars: full.length });
    expect(first.output.length).toBeLessThanOrEqual(600);
    expect(first.output).toMatch(
      /\[the full output is stored: call recall_tool_result with call_id "c1" and offset \d+ to read on\]/,
    );
    const head = first.output.slice(0, first.output.indexOf("\n[..."));
    const recalled = result.toolCalls[1]!.output;
    expect(recalled).toContain(full.slice(head.length, head.length + 30));
    expect(recalled).toMatch(/more chars: continue with offset/);
    expect(result.toolCalls[2]?.output).toMatch(/no stored output for call nope/);
    expect(model.requests[0]?.tools.map((t) => t.name)).toContain("recall_tool_result");
  });
});

describe("approvals on a stored run", () => {
  const makeAgent = (ran: string[]) => {
    const refund = tool({
      name: "refund",
      description: "Refund.",
      parameters: z.object({ orderId: z.string() }),
      needsApproval: true,
      execute: async ({ orderId }) => {
        ran.push(orderId);
        return `refunded ${orderId}`;
      },
    });
    const lookup = tool({
      name: "lookup",
      description: "Lookup.",
      parameters: z.object({}),
      execute: async () => "order A1: paid",
    });
    const model = transcriptModel([
      {
        toolCalls: [
          { id: "l1", name: "lookup", args: {} },
          { id: "r1", name: "refund", args: { orderId: "A1" } },
        ],
      },
      { text: "Done." },
    ]);
    return new Agent({ name: "support", model, tools: [refund, lookup] });
  };

  it("park the run, survive any number of restarts undecided, and continue once decided from another process", async () => {
    const store = new MemoryStore();
    const ran: string[] = [];
    const first = await Runner.run(makeAgent(ran), "refund A1", { store });
    expect(first.stopReason).toBe("awaiting_approval");
    expect(ran).toEqual([]);
    const runId = first.runId;

    // Restarts with nobody deciding: it asks again and parks again — never allowed by default.
    for (let i = 0; i < 3; i++) {
      const again = await Runner.resume(makeAgent(ran), runId, { store }).result();
      expect(again.stopReason).toBe("awaiting_approval");
    }
    expect(ran).toEqual([]);

    await expect(Runner.decide(store, runId, "nope", true)).rejects.toThrow(
      /no call nope waiting for approval/,
    );
    await Runner.decide(store, runId, "r1", true);
    const handle = Runner.resume(makeAgent(ran), runId, { store });
    const events = await collect(handle);
    const result = await handle.result();
    expect(ran).toEqual(["A1"]);
    expect(result).toMatchObject({ stopReason: "completed", output: "Done." });
    expect(events[0]).toMatchObject({ type: "run_resumed" });
    expect(events[0]!.seq).toBeGreaterThan(1);
    // The lookup that finished before the park was not run again, and results are in request order.
    const tools = result.messages.filter((m): m is Extract<Message, { role: "tool" }> => m.role === "tool");
    expect(tools.map((m) => [m.toolCallId, m.content])).toEqual([
      ["l1", "order A1: paid"],
      ["r1", "refunded A1"],
    ]);
    const log = await store.read(runId);
    expect(log.filter((e) => e.type === "tool_call_started" && e.call.id === "l1")).toHaveLength(1);
    expect(log.find((e) => e.type === "approval_resolved")).toMatchObject({
      decision: "approved",
      by: "decide",
    });
  });

  it("a denial decided from another process is what the model reads", async () => {
    const store = new MemoryStore();
    const ran: string[] = [];
    const { runId } = await Runner.run(makeAgent(ran), "refund A1", { store });
    await Runner.decide(store, runId, "r1", { approved: false, reason: "needs a manager" });
    const result = await Runner.resume(makeAgent(ran), runId, { store }).result();
    expect(ran).toEqual([]);
    expect(result.toolCalls[1]?.output).toMatch(/not approved: needs a manager/);
  });

  it("resuming a finished run returns its stored result and emits nothing", async () => {
    const store = new MemoryStore();
    const done = await Runner.run(
      new Agent({ name: "a", model: new ScriptedModel([{ text: "hi" }]) }),
      "go",
      { store },
    );
    const handle = Runner.resume(new Agent({ name: "a", model: new ScriptedModel([]) }), done.runId, {
      store,
    });
    expect(await collect(handle)).toEqual([]);
    expect((await handle.result()).output).toBe("hi");
  });
});

describe("resume after a crash at every boundary (in-process log cuts)", () => {
  it("never re-runs a completed call, re-runs idempotent interrupted ones, and ends with the uninterrupted transcript", async () => {
    const script: ScriptedTurn[] = [
      {
        text: "Checking.",
        toolCalls: [
          { id: "a", name: "count", args: { key: "a" } },
          { id: "b", name: "count", args: { key: "b" } },
        ],
      },
      { toolCalls: [{ id: "c", name: "count", args: { key: "c" } }] },
      { text: "All counted." },
    ];
    const runs = new Map<string, number>();
    const count = tool({
      name: "count",
      description: "Count.",
      parameters: z.object({ key: z.string() }),
      idempotent: true,
      execute: async ({ key }) => {
        runs.set(key, (runs.get(key) ?? 0) + 1);
        return `counted ${key}`;
      },
    });
    const agent = () => new Agent({ name: "counter", model: transcriptModel(script), tools: [count] });
    const reference = new MemoryStore();
    const uninterrupted = await Runner.run(agent(), "count things", { store: reference, runId: "ref" });
    const log = await reference.read("ref");

    for (let cut = 1; cut < log.length; cut++) {
      const store = new MemoryStore();
      const lease = await store.acquireLease("ref", "crashed-process", 60_000);
      await store.append(lease, log.slice(0, cut));
      await store.releaseLease(lease);
      const prefix = log.slice(0, cut);
      const completed = new Set(
        prefix
          .filter((e) => e.type === "tool_call_completed")
          .map((e) => (e as { call: { id: string } }).call.id),
      );
      runs.clear();
      const result = await Runner.resume(agent(), "ref", { store }).result();
      expect(result.messages, `cut after event ${cut} (${log[cut - 1]!.type})`).toEqual(
        uninterrupted.messages,
      );
      for (const id of completed)
        expect(runs.get(id), `call ${id} ran again after cut ${cut}`).toBeUndefined();
      const final = await store.read("ref");
      expect(final.map((e) => e.seq)).toEqual(final.map((_, i) => i + 1));
    }
  });

  it("gives a non-idempotent call that had started an interrupted result instead of running it twice", async () => {
    let charged = 0;
    const charge = tool({
      name: "charge",
      description: "Charge a card.",
      parameters: z.object({}),
      execute: async () => {
        charged++;
        return "charged";
      },
    });
    const script: ScriptedTurn[] = [{ toolCalls: [{ id: "p", name: "charge", args: {} }] }, { text: "ok" }];
    const reference = new MemoryStore();
    await Runner.run(new Agent({ name: "a", model: transcriptModel(script), tools: [charge] }), "pay", {
      store: reference,
      runId: "r",
    });
    const log = await reference.read("r");
    const cut = log.findIndex((e) => e.type === "tool_call_started") + 1;
    const store = new MemoryStore();
    const lease = await store.acquireLease("r", "crashed", 60_000);
    await store.append(lease, log.slice(0, cut));
    await store.releaseLease(lease);
    charged = 0;
    const result = await Runner.resume(
      new Agent({ name: "a", model: transcriptModel(script), tools: [charge] }),
      "r",
      { store },
    ).result();
    expect(charged).toBe(0);
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "interrupted" } });
    expect(result.toolCalls[0]?.output).toMatch(/not marked idempotent/);
  });
});
