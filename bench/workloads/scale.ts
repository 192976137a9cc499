/**
 * W5: many runs in one process. Each run has its own ScriptedModel and Agent (as a server
 * building one per request would) and plays 10 turns of one `add` call, then a final answer.
 *
 * - concurrent: 1,000 runs started together, awaited with Promise.all; wall time (median of
 *   5 rounds after a warm-up round) and the child's peak RSS (maxRSS, Node itself included).
 * - sequential: 10,000 runs one after another; RSS and heap after a forced GC at 1,000, 5,000
 *   and 10,000 runs. Heap used per run is the sharper leak signal. RSS also moves with the
 *   heap V8 keeps reserved: some time in the first thousands of runs of any loop it doubles
 *   the young generation (16 → 32 MB here, the baseline's too) and touches its pages over the
 *   following thousands of runs, and the old generation's reservation swings by a few MB from
 *   one GC to the next. So the baseline loop runs the same 10,000 runs in its own child as the
 *   control: "no RSS growth" means Quiver's RSS after 10,000 runs is the baseline's, and each
 *   point is the median of three checkpoints 1,000 runs apart (4–6k, 8–10k).
 */
import v8 from "node:v8";
import { compare, fmt, inChild, loadQuiver, mb, median, peakRssBytes, type Row, ratio } from "../harness.js";
import { bareAdd, baselineRun, quiverAdd, script } from "./baseline.js";

const TURNS = 10;

/** One run of the chosen loop, each with its own ScriptedModel (and Agent, for Quiver). */
async function runOnce(loop: "quiver-agents" | "baseline"): Promise<() => Promise<void>> {
  const turns = script({ turns: TURNS });
  const { Agent, Runner, ScriptedModel, tool } = await loadQuiver();
  if (loop === "baseline") {
    return async () => {
      await baselineRun(new ScriptedModel(turns, { record: false }), "go", [bareAdd]);
    };
  }
  const add = quiverAdd(tool);
  return async () => {
    const model = new ScriptedModel(turns, { record: false });
    const result = await Runner.run(new Agent({ name: "bench", model, tools: [add] }), "go");
    if (result.stopReason !== "completed") throw new Error(`run stopped: ${result.stopReason}`);
  };
}

type ConcurrentResult = { wallMs: number; startRss: number; peakRss: number };

export async function concurrent({
  runs,
  samples,
}: {
  runs: number;
  samples: number;
}): Promise<ConcurrentResult> {
  const startRss = process.memoryUsage().rss;
  const one = await runOnce("quiver-agents");
  const ms = await compare(
    { quiver: () => Promise.all(Array.from({ length: runs }, one)) },
    { samples, warmups: 1 },
  );
  return { wallMs: ms.quiver, startRss, peakRss: peakRssBytes() };
}

type Memory = { rss: number; heapUsed: number; heapTotal: number; youngGeneration: number };
type SequentialResult = { first: Memory; mid: Memory; last: Memory; wallMs: number };

/** Checkpoints: after 1,000 runs; the medians of 4–6k and of 8–10k. */
const FIRST = 1000;
const MIDDLE = [4000, 5000, 6000];
const LAST = [8000, 9000, 10_000];

export async function sequential(options: { loop: "quiver-agents" | "baseline" }): Promise<SequentialResult> {
  const gc = globalThis.gc;
  if (!gc) throw new Error("run with --expose-gc");
  const one = await runOnce(options.loop);
  const measure = (): Memory => {
    gc();
    const { rss, heapUsed, heapTotal } = process.memoryUsage();
    const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space");
    return { rss, heapUsed, heapTotal, youngGeneration: young?.space_size ?? 0 };
  };
  const started = performance.now();
  let done = 0;
  const runTo = async (count: number) => {
    for (; done < count; done++) await one();
    return measure();
  };
  const first = await runTo(FIRST);
  const middle: Memory[] = [];
  for (const count of MIDDLE) middle.push(await runTo(count));
  const last: Memory[] = [];
  for (const count of LAST) last.push(await runTo(count));
  return { first, mid: medianMemory(middle), last: medianMemory(last), wallMs: performance.now() - started };
}

/** Field by field, the median of a few checkpoints. */
function medianMemory(points: Memory[]): Memory {
  const of = (key: keyof Memory) => median(points.map((p) => p[key]));
  return {
    rss: of("rss"),
    heapUsed: of("heapUsed"),
    heapTotal: of("heapTotal"),
    youngGeneration: of("youngGeneration"),
  };
}

export async function rows(): Promise<Row[]> {
  const c = await inChild<ConcurrentResult>("workloads/scale.ts", "concurrent", { runs: 1000, samples: 5 });
  const sequentialIn = (loop: "quiver-agents" | "baseline") =>
    inChild<SequentialResult>("workloads/scale.ts", "sequential", { loop }, ["--expose-gc"]);
  const q = await sequentialIn("quiver-agents");
  const b = await sequentialIn("baseline");
  const change = (s: SequentialResult, key: keyof Memory, digits = 1) =>
    `${fmt(mb(s.first[key]), digits)} → ${fmt(mb(s.mid[key]), digits)} → ${fmt(mb(s.last[key]), digits)}`;
  // Both loops end at the same plateau unless Quiver keeps something per run: V8's own
  // reservations (young generation, old-space pages) grow the same way under either loop.
  const rssVsBaseline = q.last.rss / b.last.rss;
  const heapPerRun = (q.last.heapUsed - q.first.heapUsed) / (LAST[1]! - FIRST);
  return [
    {
      workload: `W5 1,000 concurrent runs × ${TURNS} turns`,
      measure: "wall ms",
      quiver: fmt(c.wallMs, 0),
    },
    {
      workload: `W5 1,000 concurrent runs × ${TURNS} turns`,
      measure: "peak RSS, MB (before loading quiver)",
      quiver: `${fmt(mb(c.peakRss))} (${fmt(mb(c.startRss))})`,
      target: "≤ 200 MB",
      met: mb(c.peakRss) <= 200,
    },
    {
      workload: "W5 10,000 sequential runs",
      measure: "RSS after GC, MB: at 1,000 → 4–6k → 8–10k runs (medians)",
      quiver: change(q, "rss"),
      baseline: change(b, "rss"),
      ratio: `${ratio(rssVsBaseline)} of the baseline's at 8–10k`,
      target: "no growth of its own: ≤ 1.05× the baseline's",
      met: rssVsBaseline <= 1.05,
    },
    {
      workload: "W5 10,000 sequential runs",
      measure: "V8 young generation reserved, MB (part of heapTotal)",
      quiver: change(q, "youngGeneration"),
      baseline: change(b, "youngGeneration"),
    },
    {
      workload: "W5 10,000 sequential runs",
      measure: "V8 heap reserved (heapTotal) after GC, MB",
      quiver: change(q, "heapTotal"),
      baseline: change(b, "heapTotal"),
    },
    {
      workload: "W5 10,000 sequential runs",
      measure: `heap used after GC, MB (${fmt(q.wallMs / 1000)} s in all)`,
      quiver: change(q, "heapUsed", 2),
      baseline: change(b, "heapUsed", 2),
      ratio: `${fmt(heapPerRun, 0)} B/run`,
      target: "no growth (< 100 B/run)",
      met: heapPerRun < 100,
    },
  ];
}
