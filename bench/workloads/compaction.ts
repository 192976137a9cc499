/**
 * W8, context compaction over long runs: one `lookup` call per turn returning 2,000 chars, with
 * `compaction: { maxInputTokens: 8,000, summarize }` (an instant ScriptedModel writes the
 * summaries), against the same runs without compaction, interleaved in one process. Runs of 20,
 * 500 and 2,000 turns; per turn = wall time ÷ turns played. The view is kept beside the
 * transcript and updated with each new message, so its cost per turn must not grow with the
 * length of the run: a view rebuilt from the transcript every turn would cost 25× more at 500
 * turns and 100× at 2,000. Past the first ~15 turns the view is in its steady state (a change
 * every few turns, a summary now and then, each bounded by the window), so the 500- and
 * 2,000-turn figures match each other; the 20-turn run has had only one change.
 */
import { z } from "zod";
import { compare, fmt, inChild, loadQuiver, type Row } from "../harness.js";

const RESULT_CHARS = 2_000;
const MAX_INPUT_TOKENS = 8_000;
const TURNS_PER_SAMPLE = 500;

type Shape = { turns: number; compactions: number; summaries: number; lastRequestMessages: number };
type CompactionResult = {
  shapes: Shape[];
  /** Median ms per turn of each contender, e.g. `compacted20`, `plain500`. */
  msPerTurn: Record<string, number>;
};

/** Both lengths in one process, interleaved sample by sample: load bursts hit all four alike. */
export async function compaction({
  lengths,
  samples,
}: {
  lengths: number[];
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
  const scriptOf = (turns: number) => [
    ...Array.from({ length: turns }, (_, n) => ({ toolCalls: [{ name: "lookup", args: { n } }] })),
    { text: "done" },
  ];
  const summarizer = (turns: number) =>
    new ScriptedModel(
      Array.from({ length: turns }, () => ({
        text: "The assistant looked up records; each returned digits.",
      })),
      { record: false },
    );
  const compacted = (turns: number, record = false) =>
    new Agent({
      name: "bench",
      model: new ScriptedModel(scriptOf(turns), { record }),
      tools: [lookup],
      compaction: { maxInputTokens: MAX_INPUT_TOKENS, summarize: summarizer(turns) },
    });
  const plain = (turns: number) =>
    new Agent({
      name: "bench",
      model: new ScriptedModel(scriptOf(turns), { record: false }),
      tools: [lookup],
    });

  const shapes: Shape[] = [];
  const contenders: Record<string, () => Promise<unknown>> = {};
  for (const turns of lengths) {
    // What the run did, checked once outside timing: compaction really ran and kept the view bounded.
    const probe = compacted(turns, true);
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
    shapes.push({ turns, compactions, summaries, lastRequestMessages: requests.at(-1)!.messages.length });
    // Every sample plays about the same number of turns (25 runs of 20, one of 500): a sample
    // of one short run is too brief to time, and GC lands on long samples anyway.
    const runs = Math.ceil(TURNS_PER_SAMPLE / turns);
    contenders[`compacted${turns}`] = async () => {
      for (let i = 0; i < runs; i++) await Runner.run(compacted(turns), "go", { maxTurns: turns + 1 });
    };
    contenders[`plain${turns}`] = async () => {
      for (let i = 0; i < runs; i++) await Runner.run(plain(turns), "go", { maxTurns: turns + 1 });
    };
  }
  const ms = await compare(contenders, { samples, warmups: 2 });
  const msPerTurn: Record<string, number> = {};
  for (const turns of lengths) {
    const played = Math.ceil(TURNS_PER_SAMPLE / turns) * (turns + 1);
    msPerTurn[`compacted${turns}`] = ms[`compacted${turns}`]! / played;
    msPerTurn[`plain${turns}`] = ms[`plain${turns}`]! / played;
  }
  return { shapes, msPerTurn };
}

export async function rows(): Promise<Row[]> {
  const r = await inChild<CompactionResult>("workloads/compaction.ts", "compaction", {
    lengths: [20, 500, 2_000],
    samples: 15,
  });
  const µs = (ms: number) => `${fmt(ms * 1000)} µs`;
  const per = r.msPerTurn;
  const view = (turns: number) => per[`compacted${turns}`]! - per[`plain${turns}`]!;
  const flat = Math.max(per.compacted500!, per.compacted2000!) / per.compacted20!;
  return [
    ...r.shapes.map((shape) => ({
      workload: "W8 compaction",
      measure: `per turn, ${shape.turns} turns (${shape.compactions} view changes, ${shape.summaries} summaries; last request ${shape.lastRequestMessages} messages)`,
      quiver: µs(per[`compacted${shape.turns}`]!),
      baseline: µs(per[`plain${shape.turns}`]!),
      ratio: `${fmt(per[`compacted${shape.turns}`]! / per[`plain${shape.turns}`]!, 2)}×`,
    })),
    {
      workload: "W8 compaction",
      measure: "the view's own cost per turn (compacted − plain), 20 → 500 → 2,000 turns",
      quiver: `${µs(view(20))} → ${µs(view(500))} → ${µs(view(2_000))}`,
    },
    {
      workload: "W8 compaction",
      measure: "per turn at 500 or 2,000 turns (the larger) ÷ per turn at 20 turns, compacted",
      quiver: `${fmt(flat, 2)}×`,
      target: "≤ 1.5× (O(new messages) per turn)",
      met: flat <= 1.5,
    },
  ];
}
