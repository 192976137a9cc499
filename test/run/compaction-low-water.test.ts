import {
  Agent,
  type Model,
  type ModelRequest,
  type RunEvent,
  Runner,
  ScriptedModel,
  type ScriptedTurn,
  tool,
} from "quiver-agents";
import { MemoryStore } from "quiver-agents/store";
import { describe, expect, it } from "vitest";
import { z } from "zod";

/** ~340 tokens a result: a few of them fill a 2,000-token window. */
const lookup = tool({
  name: "lookup",
  description: "Look a record up.",
  parameters: z.object({ n: z.number() }),
  execute: ({ n }) => `record ${n}: ${"details ".repeat(150)}`,
});

/** A summarizer that counts its calls; each summary is short. */
function countingSummarizer() {
  const counter = { calls: 0 };
  const model = new ScriptedModel(
    Array.from({ length: 100 }, () => () => ({
      text: `Summary ${++counter.calls}: records were looked up.`,
    })),
  );
  return { counter, model };
}

async function collect(handle: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for await (const event of handle) events.push(event);
  return events;
}

const warnings = (events: RunEvent[], code: string) =>
  events.flatMap((e) => (e.type === "warning" && e.code === code ? [e.message] : []));

describe("compaction near the limit", () => {
  it("a 50-message chat summarises a bounded number of times (6 here; it was 15, every third message)", async () => {
    const { counter, model: summarize } = countingSummarizer();
    // Each message: the user asks, the model looks a record up, then answers (~410 tokens in all,
    // a fifth of the limit, so four kept turns are close to the low-water mark).
    let message = 0;
    const model = new ScriptedModel(
      Array.from({ length: 100 }, () => (request: ModelRequest): ScriptedTurn => {
        if (request.messages.at(-1)?.role === "user")
          return { toolCalls: [{ name: "lookup", args: { n: message } }] };
        return { text: `Record ${message} is in: ${"fine ".repeat(40)}` };
      }),
    );
    const agent = new Agent({
      name: "clerk",
      model,
      tools: [lookup],
      compaction: { maxInputTokens: 2_000, summarize },
    });
    const store = new MemoryStore();
    const summaries = new Set<string>();
    const seen: RunEvent[] = [];
    for (message = 0; message < 50; message++) {
      const handle = Runner.stream(agent, `Please look up record ${message}. ${"q".repeat(100)}`, {
        store,
        sessionId: "chat",
      });
      const events = await collect(handle);
      expect((await handle.result()).stopReason).toBe("completed");
      seen.push(...events);
      for (const e of events) if (e.type === "compaction" && e.summary) summaries.add(e.summary.text);
    }
    expect(model.requests).toHaveLength(100);
    expect(counter.calls).toBeGreaterThan(0);
    expect(counter.calls).toBeLessThanOrEqual(7);
    // Every summary written is in the view: none was thrown away and written again.
    expect(summaries.size).toBe(counter.calls);
    expect(warnings(seen, "compaction_insufficient")).toEqual([]);
  }, 30_000);

  it("a 50-turn run compacts down to the low-water mark: the summarizer is called twice (it was 22 times)", async () => {
    const { counter, model: summarize } = countingSummarizer();
    const model = new ScriptedModel([
      ...Array.from({ length: 50 }, (_, n) => ({ toolCalls: [{ name: "lookup", args: { n } }] })),
      { text: "All fifty records are in." },
    ]);
    const agent = new Agent({
      name: "clerk",
      model,
      tools: [lookup],
      compaction: { maxInputTokens: 2_000, summarize },
    });
    const handle = Runner.stream(agent, "Look up records 0 to 49.", { maxTurns: 60 });
    const events = await collect(handle);
    expect((await handle.result()).stopReason).toBe("completed");

    const compactions = events.flatMap((e) => (e.type === "compaction" ? [e] : []));
    // Each change of view goes down to ~70% of the limit, so the next turns fit without one.
    for (const c of compactions) expect(c.tokensAfter).toBeLessThanOrEqual(1_400);
    expect(compactions.length).toBeLessThanOrEqual(15);
    // One summarizer call per compaction that summarises, and few of them.
    expect(counter.calls).toBe(compactions.filter((c) => c.summary).length);
    expect(counter.calls).toBeLessThanOrEqual(3);
    // The latest turn's result is always shown whole.
    for (const request of model.requests.slice(1)) {
      const last = request.messages.at(-1)!;
      expect(last.role).toBe("tool");
      expect(String(last.content)).toMatch(/^record \d+: details/);
    }
  });

  it("a summarizer that fails is not asked on every turn, and the warning says it failed", async () => {
    let calls = 0;
    const failing: Model = {
      name: "flaky-summarizer",
      // biome-ignore lint/correctness/useYield: it fails before its first event, like a provider over quota
      async *stream() {
        calls++;
        throw new Error("429: quota exceeded");
      },
    };
    // A plain conversation: no tool result to elide, so only a summary could make room.
    const model = new ScriptedModel(
      Array.from({ length: 12 }, (_, i) => ({ text: `${i}: ${"talk ".repeat(300)}` })),
    );
    const agent = new Agent({
      name: "talker",
      model,
      compaction: { maxInputTokens: 1_200, keepRecentTurns: 2, summarize: failing },
    });
    const store = new MemoryStore();
    const seen: RunEvent[] = [];
    for (let i = 0; i < 12; i++) {
      const handle = Runner.stream(agent, `message ${i}`, { store, sessionId: "s" });
      seen.push(...(await collect(handle)));
      await handle.result();
    }
    // Asked once: then not again for a minute, across the session's runs.
    expect(calls).toBe(1);
    const failed = warnings(seen, "compaction_summary_failed");
    expect(failed.length).toBe(calls);
    expect(failed[0]).toMatch(/summarizer "flaky-summarizer" failed.*429: quota exceeded/);
    const insufficient = warnings(seen, "compaction_insufficient");
    expect(insufficient.length).toBeGreaterThan(0);
    for (const message of insufficient) {
      expect(message).toMatch(/the summarizer failed/);
      expect(message).not.toMatch(/summarised/);
    }
  });
});
