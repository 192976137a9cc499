/**
 * Context compaction over long runs: one `lookup` call per turn returning 2,000 chars, with
 * `compaction: { maxInputTokens: 8,000, summarize }` (an instant ScriptedModel writes the
 * summaries), against the same run without compaction. Runs of 20 and of 500 turns; per turn
 * = a run's wall time ÷ its turns. The view is kept beside the transcript and updated with
 * each new message, so its per-turn cost must be flat in the length of the run: the 500-turn
 * figure is the 20-turn one, not 25× it (a view rebuilt from the transcript every turn would be).
 * Summaries rebuild the view (O(window), bounded by the limit), amortised over the turns between them.
 */
import { z } from "zod";
import { compare, fmt, inChild, loadQuiver, type Row } from "../harness.js";

const RESULT_CHARS = 2_000;
const MAX_INPUT_TOKENS = 8_000;

type CompactionResult = {
  turns: number;
  compactedMsPerTurn: number;
  plainMsPerTurn: number;
  compactions: number;
  summaries: number;
  lastRequestMessages: number;
};

export async function compaction({
  turns,
  samples,
}: {
  turns: number;
  samples: number;
}): Promise<CompactionResult> {
  const { Agent, Runner, ScriptedModel, tool } = await loadQuiver();
  const text = "0123456789".repeat(RESULT_CHARS / 10);
  const lookup = tool({
    name: "lookup",
    description: "Look a record up.",
    parameters: z.object({ n: z.number() }),
    execute: async () => text,
  });
  const script = [
    ...Array.from({ length: turns }, (_, n) => ({ toolCalls: [{ name: "lookup", args: { n } }] })),
    { text: "done" },
  ];
  const summarizer = () =>
    new ScriptedModel(
      Array.from({ length: turns }, () => ({
        text: "The assistant looked up records; each returned digits.",
      })),
      { record: false },
    );
  const compacted = (record = false) =>
    new Agent({
      name: "bench",
      model: new ScriptedModel(script, { record }),
      tools: [lookup],
      compaction: { maxInputTokens: MAX_INPUT_TOKENS, summarize: summarizer() },
    });
  const plain = () =>
    new Agent({ name: "bench", model: new ScriptedModel(script, { record: false }), tools: [lookup] });

  // What the run did, checked once outside timing: compaction really ran and kept the view bounded.
  const probe = compacted(true);
  const handle = Runner.stream(probe, "go", { maxTurns: turns + 1 });
  let compactions = 0;
  let summaries = 0;
  for await (const ev of handle) {
    if (ev.type !== "compaction") continue;
    compactions++;
    if (ev.summary) summaries++;
  }
  const result = await handle.result();
  if (result.messages.length !== 2 * turns + 2)
    throw new Error(`the transcript lost messages: ${result.messages.length}`);
  const requests = (probe.config.model as InstanceType<typeof ScriptedModel>).requests;

  const ms = await compare(
    {
      compacted: () => Runner.run(compacted(), "go", { maxTurns: turns + 1 }),
      plain: () => Runner.run(plain(), "go", { maxTurns: turns + 1 }),
    },
    { samples, warmups: 2 },
  );
  return {
    turns,
    compactedMsPerTurn: ms.compacted / (turns + 1),
    plainMsPerTurn: ms.plain / (turns + 1),
    compactions,
    summaries,
    lastRequestMessages: requests.at(-1)!.messages.length,
  };
}

export async function rows(): Promise<Row[]> {
  const short = await inChild<CompactionResult>("workloads/compaction.ts", "compaction", {
    turns: 20,
    samples: 31,
  });
  const long = await inChild<CompactionResult>("workloads/compaction.ts", "compaction", {
    turns: 500,
    samples: 11,
  });
  const µs = (ms: number) => `${fmt(ms * 1000)} µs`;
  const viewShort = short.compactedMsPerTurn - short.plainMsPerTurn;
  const viewLong = long.compactedMsPerTurn - long.plainMsPerTurn;
  const flat = long.compactedMsPerTurn / short.compactedMsPerTurn;
  return [
    ...[short, long].map((r) => ({
      workload: "W8 compaction",
      measure: `per turn, ${r.turns} turns (${r.compactions} view changes, ${r.summaries} summaries; last request ${r.lastRequestMessages} messages)`,
      quiver: µs(r.compactedMsPerTurn),
      baseline: µs(r.plainMsPerTurn),
      ratio: `${fmt(r.compactedMsPerTurn / r.plainMsPerTurn, 2)}×`,
    })),
    {
      workload: "W8 compaction",
      measure: "the view's own cost per turn (compacted − plain), 20 → 500 turns",
      quiver: `${µs(viewShort)} → ${µs(viewLong)}`,
    },
    {
      workload: "W8 compaction",
      measure: "per turn at 500 turns ÷ per turn at 20 turns",
      quiver: `${fmt(flat, 2)}×`,
      target: "≤ 1.5× (O(new messages) per turn)",
      met: flat <= 1.5,
    },
  ];
}
