/**
 * W10, a chat kept for a long time: one session of 1,000 messages on a SqliteStore, each a run
 * with its reply (a text-only ScriptedModel), as a chat product stores them. What a message
 * costs as the session grows: the median ms per message over the first 50, messages 451–500 and
 * 951–1,000. What must grow is the conversation itself (the model is sent all of it, and the
 * new run's start refers to it); what must not is work per run already stored — listing every
 * run of the session made the 1,000th message cost 4× the 10th.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fmt, inChild, loadQuiver, loadStores, type Row } from "../harness.js";

const MESSAGES = 1_000;
const WINDOW = 50;

type LongSessionResult = { msPerMessage: Record<string, number> };

export async function longSession(): Promise<LongSessionResult> {
  const { Agent, Runner, ScriptedModel } = await loadQuiver();
  const { SqliteStore } = await loadStores();
  const dir = mkdtempSync(join(tmpdir(), "quiver-bench-session-"));
  const store = new SqliteStore({ path: join(dir, "chat.db") });
  try {
    const padding = "x".repeat(100);
    const replies = Array.from({ length: MESSAGES }, (_, i) => ({ text: `reply ${i} ${padding}` }));
    const agent = new Agent({ name: "assistant", model: new ScriptedModel(replies, { record: false }) });
    const times: number[] = [];
    for (let i = 0; i < MESSAGES; i++) {
      const started = performance.now();
      const result = await Runner.run(agent, `message ${i} ${padding}`, { store, sessionId: "chat" });
      times.push(performance.now() - started);
      if (result.stopReason !== "completed") throw new Error(`message ${i} ended ${result.stopReason}`);
    }
    const median = (from: number) => {
      const window = times.slice(from, from + WINDOW).sort((a, b) => a - b);
      return window[window.length >> 1]!;
    };
    return { msPerMessage: { first: median(0), middle: median(450), last: median(MESSAGES - WINDOW) } };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function rows(): Promise<Row[]> {
  const { msPerMessage: ms } = await inChild<LongSessionResult>(
    "workloads/long-session.ts",
    "longSession",
    {},
  );
  return [
    {
      workload: "W10 one session of 1,000 messages, SqliteStore",
      measure: `ms per message (a run with its reply), median of messages 1–50 → 451–500 → 951–1,000`,
      quiver: `${fmt(ms.first!, 2)} → ${fmt(ms.middle!, 2)} → ${fmt(ms.last!, 2)}`,
      ratio: `${fmt(ms.last! / ms.first!, 2)}× from the first 50 to the last 50`,
    },
  ];
}
