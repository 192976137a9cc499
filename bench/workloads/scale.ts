/**
 * W5: many runs in one process. Each run has its own ScriptedModel and Agent (as a server
 * building one per request would) and plays 10 turns of one `add` call, then a final answer.
 *
 * - concurrent: 1,000 runs started together, awaited with Promise.all; wall time (median of
 *   5 rounds after a warm-up round) and the child's peak RSS (maxRSS, Node itself included).
 * - sequential: 10,000 runs one after another; RSS and heap after a forced GC at 1,000 runs
 *   and at 10,000. Heap growth per run is the sharper leak signal; RSS is what the issue asks,
 *   but it also moves with how much heap V8 chooses to keep reserved, so the baseline loop
 *   runs the same 10,000 runs in its own child as a control.
 */
import { compare, fmt, inChild, loadQuiver, mb, peakRssBytes, type Row, ratio } from "../harness.js";
import { addArgs, addNumbers, bareAdd, baselineRun, script } from "./baseline.js";

const TURNS = 10;

/** One run of the chosen loop, each with its own ScriptedModel (and Agent, for Quiver). */
async function runOnce(loop: "quiver" | "baseline"): Promise<() => Promise<void>> {
  const turns = script({ turns: TURNS });
  const { Agent, Runner, ScriptedModel, tool } = await loadQuiver();
  if (loop === "baseline") {
    return async () => {
      await baselineRun(new ScriptedModel(turns, { record: false }), "go", [bareAdd]);
    };
  }
  const add = tool({
    name: "add",
    description: "Add two numbers.",
    parameters: addArgs,
    execute: addNumbers,
  });
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
  const one = await runOnce("quiver");
  const ms = await compare(
    { quiver: () => Promise.all(Array.from({ length: runs }, one)) },
    { samples, warmups: 1 },
  );
  return { wallMs: ms.quiver, startRss, peakRss: peakRssBytes() };
}

type Memory = { rss: number; heapUsed: number; heapTotal: number };
type SequentialResult = { first: Memory; last: Memory; wallMs: number };

export async function sequential(options: {
  loop: "quiver" | "baseline";
  first: number;
  total: number;
}): Promise<SequentialResult> {
  const gc = globalThis.gc;
  if (!gc) throw new Error("run with --expose-gc");
  const one = await runOnce(options.loop);
  const measure = (): Memory => {
    gc();
    const { rss, heapUsed, heapTotal } = process.memoryUsage();
    return { rss, heapUsed, heapTotal };
  };
  const started = performance.now();
  for (let i = 0; i < options.first; i++) await one();
  const first = measure();
  for (let i = options.first; i < options.total; i++) await one();
  return { first, last: measure(), wallMs: performance.now() - started };
}

export async function rows(): Promise<Row[]> {
  const c = await inChild<ConcurrentResult>("workloads/scale.ts", "concurrent", { runs: 1000, samples: 5 });
  const sequentialIn = (loop: "quiver" | "baseline") =>
    inChild<SequentialResult>("workloads/scale.ts", "sequential", { loop, first: 1000, total: 10_000 }, [
      "--expose-gc",
    ]);
  const q = await sequentialIn("quiver");
  const b = await sequentialIn("baseline");
  const change = (s: SequentialResult, key: keyof Memory, digits = 1) =>
    `${fmt(mb(s.first[key]), digits)} → ${fmt(mb(s.last[key]), digits)}`;
  const rssGrowth = q.last.rss / q.first.rss;
  const heapPerRun = (q.last.heapUsed - q.first.heapUsed) / 9000;
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
      measure: "RSS after GC, MB: at 1,000 → at 10,000 runs",
      quiver: change(q, "rss"),
      baseline: change(b, "rss"),
      ratio: `${ratio(rssGrowth)} (baseline ${ratio(b.last.rss / b.first.rss)})`,
      target: "no growth (≤ 1.05×)",
      met: rssGrowth <= 1.05,
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
