import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  Agent,
  handoff,
  type Message,
  type ModelRequest,
  type RunEvent,
  Runner,
  replay,
  ScriptedModel,
  type ScriptedTurn,
  tool,
  UserError,
} from "quiver-agents";
import { MemoryStore, SqliteStore } from "quiver-agents/store";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";

/** A provider's count of a request: a different tokenizer from Quiver's estimate (3 chars a token, JSON included). */
function providerCount(req: ModelRequest): number {
  const chars =
    (req.system?.length ?? 0) + JSON.stringify(req.tools).length + JSON.stringify(req.messages).length;
  return Math.ceil(chars / 3);
}

function usageOf(req: ModelRequest) {
  const inputTokens = providerCount(req);
  return { inputTokens, outputTokens: 10, totalTokens: inputTokens + 10 };
}

const filler = (n: number, size: number) =>
  `record ${n}: ${"abcdefghij".repeat(Math.ceil(size / 10))}`.slice(0, size);

const lookup = tool({
  name: "lookup",
  description: "Look a record up.",
  parameters: z.object({ n: z.number() }),
  execute: ({ n }) => filler(n, 1_500),
});

async function collect(handle: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for await (const ev of handle) events.push(ev);
  return events;
}

/** Every tool message answers a call of the assistant message before it, and every call is answered. */
function assertPairing(messages: readonly Message[]): void {
  const open = new Set<string>();
  for (const message of messages) {
    if (message.role === "tool") {
      expect(open.has(message.toolCallId), `orphan result ${message.toolCallId}`).toBe(true);
      open.delete(message.toolCallId);
      continue;
    }
    expect(open.size, `unanswered calls ${[...open]}`).toBe(0);
    if (message.role === "assistant") for (const call of message.toolCalls ?? []) open.add(call.id);
  }
}

const isPrefix = (a: readonly Message[], b: readonly Message[]) =>
  a.length <= b.length && JSON.stringify(a) === JSON.stringify(b.slice(0, a.length));

describe("a 200-turn session over the limit", () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  const TURNS = 200;
  const PARK_AT = 150;
  const MAX = 6_000;

  /** Turn k calls lookup(k); turn PARK_AT calls `confirm` (needs approval); then a final answer. */
  function sessionModel() {
    let k = 0;
    return new ScriptedModel(
      Array.from({ length: TURNS + 1 }, () => (req: ModelRequest): ScriptedTurn => {
        k++;
        const usage = usageOf(req);
        if (k > TURNS) return { text: "all done", usage };
        if (k === PARK_AT) return { toolCalls: [{ name: "confirm", args: {} }], usage };
        return { text: `step ${k}`, toolCalls: [{ name: "lookup", args: { n: k } }], usage };
      }),
    );
  }

  function summarizer() {
    let n = 0;
    return new ScriptedModel(
      Array.from({ length: 100 }, () => (req: ModelRequest): ScriptedTurn => {
        const text = String(req.messages[0]?.content);
        const ids = text.match(/\[call_\d+\]/g) ?? [];
        return {
          text: `Summary ${++n}: ${ids.length / 2} lookups so far, the last was ${ids.at(-1)}.`,
          usage: { inputTokens: Math.ceil(text.length / 3), outputTokens: 20, totalTokens: 0 },
        };
      }),
    );
  }

  function agentWith(model: ScriptedModel, approve: boolean) {
    const confirm = tool({
      name: "confirm",
      description: "Confirm the plan.",
      parameters: z.object({}),
      needsApproval: true,
      execute: () => "confirmed",
    });
    return new Agent({
      name: "researcher",
      model,
      instructions: "Look records up one by one.",
      tools: [lookup, confirm],
      maxToolOutputChars: 10_000,
      compaction: { maxInputTokens: MAX, summarize: summarizer() },
      ...(approve && { approvalHandler: () => true }),
    });
  }

  it("every request fits, the transcript is whole, caches stay warm, and a resumed run (SqliteStore) sees the same view", async () => {
    // The uninterrupted run.
    const modelA = sessionModel();
    const handleA = Runner.stream(agentWith(modelA, true), "start", {
      store: new MemoryStore(),
      maxTurns: 300,
    });
    const eventsA = await collect(handleA);
    const resultA = await handleA.result();
    expect(resultA.stopReason).toBe("completed");
    expect(resultA.output).toBe("all done");

    // Every request fits the provider's own count (the estimate is corrected by the reported usage).
    expect(modelA.requests).toHaveLength(TURNS + 1);
    for (const request of modelA.requests) {
      expect(providerCount(request)).toBeLessThanOrEqual(MAX);
      assertPairing(request.messages);
    }
    // Compaction really happened: results elided, older turns summarised.
    const compactions = eventsA.filter((e) => e.type === "compaction");
    expect(compactions.some((e) => e.elided.length > 0)).toBe(true);
    expect(compactions.some((e) => e.summary)).toBe(true);
    const last = modelA.requests.at(-1)!.messages;
    expect(String(last[0]?.content)).toMatch(/^\[Summary of the earlier part of this conversation/);
    expect(
      last.some(
        (m) =>
          m.role === "tool" &&
          /^\[result of lookup elided: 1,500 chars; recall_tool_result\("call_\d+"\) to read it\]$/.test(
            String(m.content),
          ),
      ),
    ).toBe(true);
    // The last 4 turns are whole.
    const recentResults = last.filter((m) => m.role === "tool").slice(-4);
    for (const m of recentResults) expect(String(m.content)).toMatch(/^record \d+: abc/);

    // The view changes only when it must: between compactions, each request extends the last one.
    let changes = 0;
    for (let i = 1; i < modelA.requests.length; i++)
      if (!isPrefix(modelA.requests[i - 1]!.messages, modelA.requests[i]!.messages)) changes++;
    expect(changes).toBe(compactions.length);
    expect(compactions.length).toBeLessThan(TURNS / 4);

    // Lossless: the transcript keeps every result whole; replay rebuilds it and the view.
    expect(resultA.messages).toHaveLength(1 + 2 * TURNS + 1);
    const results = resultA.messages.filter((m) => m.role === "tool" && m.name === "lookup");
    expect(results).toHaveLength(TURNS - 1);
    for (const m of results) expect(String(m.content)).toHaveLength(1_500);
    const stateA = replay(eventsA);
    expect(stateA.messages).toEqual(resultA.messages);
    expect(stateA.view?.slice(0, -1)).toEqual(last);
    expect(stateA.view?.at(-1)).toEqual(resultA.messages.at(-1));

    // The same session parked at turn 150 (an approval), then resumed from SQLite.
    dir = mkdtempSync(join(tmpdir(), "quiver-compaction-"));
    const store = new SqliteStore({ path: join(dir, "runs.db") });
    const modelB = sessionModel();
    const agentB = agentWith(modelB, false);
    const handleB = Runner.stream(agentB, "start", { store, maxTurns: 300 });
    await collect(handleB);
    const parked = await handleB.result();
    expect(parked.stopReason).toBe("awaiting_approval");
    expect(modelB.requests).toHaveLength(PARK_AT);
    const stored = replay(await store.read(parked.runId));
    expect(stored.view).toEqual([...modelB.requests.at(-1)!.messages, parked.messages.at(-1)]);

    await Runner.decide(store, parked.runId, parked.pending![0]!.id, true);
    const resumed = await Runner.resume(agentB, parked.runId, { store, maxTurns: 300 }).result();
    expect(resumed.stopReason).toBe("completed");
    expect(resumed.messages).toEqual(resultA.messages);
    // Request for request, the resumed run showed the model exactly what the uninterrupted one did.
    expect(modelB.requests.map((r) => r.messages)).toEqual(modelA.requests.map((r) => r.messages));
    expect(modelB.requests.map((r) => r.tools.map((t) => t.name))).toEqual(
      modelA.requests.map((r) => r.tools.map((t) => t.name)),
    );
    const all = await store.read(parked.runId);
    expect(replay(all).view).toEqual(stateA.view);
    await store.close?.();
  }, 60_000);
});

describe("compaction", () => {
  function bigLookup(size: number) {
    return tool({
      name: "lookup",
      description: "Look a record up.",
      parameters: z.object({ n: z.number() }),
      execute: ({ n }) => filler(n, size),
    });
  }

  it("leaves the request alone while it fits: the model gets the transcript, nothing is elided", async () => {
    const model = new ScriptedModel([
      { toolCalls: [{ name: "lookup", args: { n: 1 } }] },
      { toolCalls: [{ name: "lookup", args: { n: 2 } }] },
      { text: "done" },
    ]);
    const agent = new Agent({
      name: "a",
      model,
      tools: [bigLookup(500)],
      compaction: { maxInputTokens: 100_000 },
    });
    const handle = Runner.stream(agent, "go");
    const events = await collect(handle);
    const result = await handle.result();
    expect(events.some((e) => e.type === "compaction")).toBe(false);
    expect(model.requests.at(-1)!.messages).toEqual(result.messages.slice(0, -1));
    // Nothing can be recalled yet, and without a store there is nothing truncated to read: no recall tool.
    for (const request of model.requests) expect(request.tools.map((t) => t.name)).toEqual(["lookup"]);
  });

  it("elides the oldest results first, offers recall_tool_result, and recall reads the full text without a store", async () => {
    const model = new ScriptedModel([
      ...Array.from({ length: 8 }, (_, i) => ({ toolCalls: [{ name: "lookup", args: { n: i + 1 } }] })),
      (req: ModelRequest) => {
        const stub = req.messages.find((m) => m.role === "tool" && String(m.content).includes("elided"));
        const id = /recall_tool_result\("([^"]+)"\)/.exec(String(stub?.content))![1]!;
        return { toolCalls: [{ name: "recall_tool_result", args: { call_id: id, max_chars: 100_000 } }] };
      },
      { text: "done" },
    ]);
    const agent = new Agent({
      name: "a",
      model,
      tools: [bigLookup(4_000)],
      compaction: { maxInputTokens: 6_000, keepRecentTurns: 2 },
    });
    const handle = Runner.stream(agent, "go");
    const events = await collect(handle);
    const result = await handle.result();
    expect(result.stopReason).toBe("completed");

    const compactions = events.filter((e) => e.type === "compaction");
    expect(compactions.length).toBeGreaterThan(0);
    const first = compactions[0]!;
    expect(first.elided[0]).toMatchObject({ name: "lookup", chars: 4_000 });
    // Oldest first: the elided results are the earliest calls, in order.
    const order = compactions.flatMap((e) => e.elided.map((x) => x.index));
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(first.tokensAfter).toBeLessThan(first.tokensBefore);

    // recall_tool_result is offered from the first elision on, and not before.
    const firstCompactedRequest = model.requests.findIndex((r) =>
      r.messages.some((m) => String(m.content).includes("elided")),
    );
    expect(firstCompactedRequest).toBeGreaterThan(0);
    expect(model.requests[firstCompactedRequest - 1]!.tools.map((t) => t.name)).not.toContain(
      "recall_tool_result",
    );
    expect(model.requests[firstCompactedRequest]!.tools.map((t) => t.name)).toContain("recall_tool_result");

    // The recall returns the elided result's full text, read from the transcript.
    const recall = result.toolCalls.find((r) => r.call.name === "recall_tool_result")!;
    expect(recall.ok).toBe(true);
    const recalledId = (recall.call.args as { call_id: string }).call_id;
    const original = result.messages.find((m) => m.role === "tool" && m.toolCallId === recalledId)!;
    expect(recall.output).toContain(String(original.content));
    expect(recall.output).toMatch(/\[end of output\]$/);
  });

  it("an elided screenshot's stub names its text and image, and recall gives the image back", async () => {
    // A 64×64 PNG header is enough for the image estimate; the bytes after it do not matter here.
    const png = Buffer.concat([
      Buffer.from("89504e470d0a1a0a0000000d49484452000000400000004008060000", "hex"),
      Buffer.alloc(64),
    ]).toString("base64");
    const screenshot = tool({
      name: "screenshot",
      description: "Take a screenshot.",
      parameters: z.object({ n: z.number() }),
      execute: ({ n }) => ({
        content: [
          { type: "text" as const, text: `screen ${n} ${"x".repeat(2_000)}` },
          { type: "image" as const, data: png, mimeType: "image/png" },
        ],
      }),
    });
    const model = new ScriptedModel([
      ...Array.from({ length: 6 }, (_, i) => ({ toolCalls: [{ name: "screenshot", args: { n: i } }] })),
      (req: ModelRequest) => {
        const stub = req.messages.find((m) => m.role === "tool" && String(m.content).includes("elided"));
        const id = /recall_tool_result\("([^"]+)"\)/.exec(String(stub?.content))![1]!;
        return { toolCalls: [{ name: "recall_tool_result", args: { call_id: id } }] };
      },
      { text: "done" },
    ]);
    const agent = new Agent({
      name: "a",
      model,
      tools: [screenshot],
      compaction: { maxInputTokens: 3_000, keepRecentTurns: 1 },
    });
    const result = await Runner.run(agent, "go");
    expect(result.stopReason).toBe("completed");
    const stubs = model.requests
      .at(-2)!
      .messages.filter((m) => m.role === "tool" && String(m.content).includes("elided"))
      .map((m) => String(m.content));
    expect(stubs[0]).toMatch(
      /^\[result of screenshot elided: 2,009 chars and 1 image; recall_tool_result\("[^"]+"\) to read it\]$/,
    );
    const recalled = model.requests.at(-1)!.messages.at(-1)!;
    expect(recalled.role).toBe("tool");
    const blocks = recalled.content as Array<{ type: string; text?: string; data?: string }>;
    expect(blocks[0]?.text).toMatch(/^\[chars 0-\d+ of \d+\]\nscreen 0 x+/);
    expect(blocks.find((b) => b.type === "image")?.data).toBe(png);
  });

  it("a handoff whose inputFilter rewrites the transcript starts the view over", async () => {
    const billingModel = new ScriptedModel([{ text: "billing here" }]);
    const billing = new Agent({
      name: "billing",
      model: billingModel,
      compaction: { maxInputTokens: 6_000 },
    });
    const model = new ScriptedModel([
      ...Array.from({ length: 6 }, (_, i) => ({ toolCalls: [{ name: "lookup", args: { n: i } }] })),
      { toolCalls: [{ name: "transfer_to_billing", args: {} }] },
    ]);
    const triage = new Agent({
      name: "triage",
      model,
      tools: [bigLookup(4_000)],
      compaction: { maxInputTokens: 6_000, keepRecentTurns: 2 },
      handoffs: [handoff(billing, { inputFilter: (messages) => messages.filter((m) => m.role === "user") })],
    });
    const handle = Runner.stream(triage, "I need a refund");
    const events = await collect(handle);
    const result = await handle.result();
    expect(result.output).toBe("billing here");
    expect(events.some((e) => e.type === "compaction")).toBe(true);
    // Billing sees the filtered transcript as it is: no stubs from the old view.
    expect(billingModel.requests[0]!.messages).toEqual([{ role: "user", content: "I need a refund" }]);
    const state = replay(events);
    expect(state.messages).toEqual(result.messages);
    expect(state.view).toBeUndefined();
  });

  it("a failing summarizer is a warning: the run goes on with the results elided", async () => {
    const broken = new ScriptedModel([]);
    const model = new ScriptedModel([
      ...Array.from({ length: 10 }, (_, i) => ({
        text: "x".repeat(3_000),
        toolCalls: [{ name: "lookup", args: { n: i } }],
      })),
      { text: "done" },
    ]);
    const agent = new Agent({
      name: "a",
      model,
      tools: [bigLookup(2_000)],
      compaction: { maxInputTokens: 8_000, keepRecentTurns: 1, summarize: broken },
    });
    const handle = Runner.stream(agent, "go");
    const events = await collect(handle);
    const result = await handle.result();
    expect(result.stopReason).toBe("completed");
    const warning = events.find((e) => e.type === "warning" && e.code === "compaction_summary_failed");
    expect(warning && "message" in warning && warning.message).toMatch(/summarizer "scripted" failed/);
  });

  it("says so when even the kept turns do not fit", async () => {
    const model = new ScriptedModel([{ toolCalls: [{ name: "lookup", args: { n: 1 } }] }, { text: "done" }]);
    const agent = new Agent({
      name: "a",
      model,
      tools: [bigLookup(20_000)],
      compaction: { maxInputTokens: 1_000 },
    });
    const handle = Runner.stream(agent, "go");
    const events = await collect(handle);
    expect((await handle.result()).stopReason).toBe("completed");
    const warning = events.find((e) => e.type === "warning" && e.code === "compaction_insufficient");
    expect(warning && "message" in warning && warning.message).toMatch(
      /over compaction.maxInputTokens \(1,000\)/,
    );
  });

  it("rejects bad settings with a UserError naming the agent", async () => {
    const model = new ScriptedModel([{ text: "hi" }]);
    for (const compaction of [{ maxInputTokens: 0 }, { maxInputTokens: 1_000, keepRecentTurns: 0 }]) {
      const agent = new Agent({ name: "bad", model, compaction });
      const error = await Runner.run(agent, "go").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UserError);
      expect((error as Error).message).toMatch(/agent "bad": compaction\./);
    }
    expect(model.requests).toHaveLength(0);
    // A summarizer given as "provider:model-id" is resolved like an agent's model.
    const named = new Agent({
      name: "named",
      model,
      compaction: { maxInputTokens: 1_000, summarize: "nowhere:small" },
    });
    await expect(Runner.run(named, "go")).rejects.toThrow(/unknown model provider "nowhere"/);
  });

  it("a name clash with recall_tool_result is reported at run start", async () => {
    const mine = tool({
      name: "recall_tool_result",
      description: "Mine.",
      parameters: z.object({}),
      execute: () => "",
    });
    const agent = new Agent({
      name: "a",
      model: new ScriptedModel([]),
      tools: [mine],
      compaction: { maxInputTokens: 1_000 },
    });
    await expect(Runner.run(agent, "go")).rejects.toThrow(
      /"recall_tool_result" \(one in the agent's tools, one in the run/,
    );
  });
});

describe("a session's next run", () => {
  it("starts from the view the last run ended with: no second summary, the prompt prefix unchanged", async () => {
    const store = new MemoryStore();
    let summaries = 0;
    const summarize = new ScriptedModel(
      Array.from({ length: 20 }, () => () => ({ text: `summary ${++summaries}` })),
    );
    let k = 0;
    const model = new ScriptedModel(
      Array.from({ length: 40 }, () => (req: ModelRequest): ScriptedTurn => {
        const usage = usageOf(req);
        // Each question gets 12 lookups, then an answer.
        k++;
        if (k % 13 !== 0)
          return {
            text: `thinking about ${k} `.repeat(50),
            toolCalls: [{ name: "lookup", args: { n: k } }],
            usage,
          };
        return { text: `answer after ${k} turns`, usage };
      }),
    );
    const agent = new Agent({
      name: "a",
      model,
      tools: [lookup],
      compaction: { maxInputTokens: 4_000, keepRecentTurns: 2, summarize },
    });
    const first = await Runner.run(agent, "first question", { store, sessionId: "s1" });
    expect(first.stopReason).toBe("completed");
    expect(summaries).toBeGreaterThan(0);
    const lastSeen = model.requests.at(-1)!.messages;
    const summariesBefore = summaries;
    const requestsBefore = model.requests.length;

    const handle = Runner.stream(agent, "second question", { store, sessionId: "s1" });
    const events = await collect(handle);
    const second = await handle.result();
    expect(second.stopReason).toBe("completed");
    // The whole conversation is in the transcript…
    expect(second.messages.slice(0, first.messages.length)).toEqual(first.messages);
    // …and the model's first request of the new run extends what it saw last: same summary, same stubs.
    const firstOfSecond = model.requests[requestsBefore]!.messages;
    expect(isPrefix(lastSeen, firstOfSecond)).toBe(true);
    expect(firstOfSecond.at(-1)).toEqual({ role: "user", content: "second question" });
    const adopted = events.find((e) => e.type === "compaction")!;
    expect(adopted.summary?.text).toBe(`summary ${summariesBefore}`);
    // The new run's own log rebuilds its view.
    expect(replay(await store.read(second.runId)).view?.slice(0, -1)).toEqual(
      model.requests.at(-1)!.messages,
    );
  });
});
