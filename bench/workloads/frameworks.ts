/**
 * Other TypeScript agent frameworks on W1's workload (one `add` call per turn, then a final
 * answer, over an instant scripted model), each in its own child process: their per-call
 * cost at 20 and 500 turns, and the baseline loop interleaved in the same process. Each
 * adapter in bench/frameworks/ builds that framework's own scripted model and tool, and
 * counts the calls its run really made. They are installed apart from Quiver's own
 * dependencies (bench/frameworks/package.json), on the first `npm run bench`.
 *
 * Issue 9's W1 target is "≤ ⅓ of the fastest framework measured": this is the measurement.
 * Issue 20 adds a one-call run (W0: one chat request, per run) and, for the fastest framework,
 * W1 on a cold heap (a full `gc()` before each run).
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { coldMs, compare, compareTimed, fmt, inChild, loadQuiver, ratio, root, timeMs } from "../harness.js";
import { addNumbers, bareAdd, baselineRun, quiverAdd, script } from "./baseline.js";

type Adapter = {
  label: string;
  setup(options: { turns: number; addNumbers: typeof addNumbers }): Promise<() => Promise<number>>;
};

const DIR = join(root, "bench/frameworks");
/** The adapters, fastest first as measured here; every one is measured in every run. */
const ADAPTERS = ["pi-agent-core.mjs", "openai-agents.mjs", "ai-sdk.mjs"];

type FrameworkArgs = {
  adapter: string;
  turns: number;
  samples: number;
  cold?: boolean;
  /** Also Quiver's run() on the same workload, interleaved with the framework in this process. */
  beside?: boolean;
};
/** Runs per sample are chosen so a sample takes about this long, for slow and fast frameworks alike. */
const SAMPLE_MS = 250;
/** About how many scripted turns one scripted model of the baseline or of Quiver holds. */
const CHUNK_TURNS = 10_000;

/**
 * How many runs of `once` fill a sample of about SAMPLE_MS, timed once it is warm: its first
 * runs are interpreted, and timing those made a fast contender's samples several times too
 * short. A slow framework's run is a sample by itself.
 */
export async function runsPerSample(once: () => Promise<unknown>): Promise<number> {
  if ((await timeMs(once)) >= SAMPLE_MS) return 1;
  let warm = 0;
  for (const until = performance.now() + SAMPLE_MS / 2; performance.now() < until; warm++) await once();
  const batch = Math.max(1, Math.round(warm / 8));
  let fastest = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 3; i++) {
    const ms = await timeMs(async () => {
      for (let k = 0; k < batch; k++) await once();
    });
    fastest = Math.min(fastest, ms / batch);
  }
  return Math.max(1, Math.round(SAMPLE_MS / fastest));
}
type FrameworkResult = {
  label: string;
  us: number;
  baselineUs: number;
  /** With `beside`: Quiver's run(), per call, interleaved with the framework's samples. */
  quiverUs?: number;
  /** With `beside`: Quiver's stream() read event by event, per call, the same way. */
  quiverStreamUs?: number;
  /** With `cold`: the same runs, each after a full `gc()`. */
  coldUs?: number;
  baselineColdUs?: number;
};

/**
 * Child side: per-call µs of one framework and of the baseline, interleaved; with `cold`, also
 * both with a full `gc()` before each run (the child runs with `--expose-gc`).
 */
export async function framework({
  adapter,
  turns,
  samples,
  cold,
  beside,
}: FrameworkArgs): Promise<FrameworkResult> {
  const mod = (await import(pathToFileURL(join(DIR, adapter)).href)) as Adapter;
  const runOnce = await mod.setup({ turns, addNumbers });
  const calls = await runOnce();
  if (calls !== turns) throw new Error(`${mod.label} made ${calls} tool calls in a run of ${turns} turns`);
  const { Agent, Runner, ScriptedModel, tool } = await loadQuiver();
  // The scripted models of the baseline and of Quiver are renewed when a run no longer fits,
  // over one script built once: a contender runs back to back, for as long as it is asked to.
  const chunk = script({ turns, runs: Math.max(1, Math.ceil(CHUNK_TURNS / (turns + 1))) });
  let baselineModel = new ScriptedModel(chunk, { record: false });
  const baselineOnce = () => {
    if (baselineModel.remaining <= turns) baselineModel = new ScriptedModel(chunk, { record: false });
    return baselineRun(baselineModel, "go", [bareAdd]);
  };
  const contenders: Record<string, () => Promise<unknown>> = { framework: runOnce, baseline: baselineOnce };
  if (beside) {
    // The same tool and runs as loop.ts's run(): this process's speed, whatever it is right
    // now, is then the same for both sides of the ratio.
    const add = quiverAdd(tool);
    const options = { maxTurns: turns + 1 };
    const check = await Runner.run(
      new Agent({
        name: "bench",
        model: new ScriptedModel(script({ turns }), { record: false }),
        tools: [add],
      }),
      "go",
      options,
    );
    if (check.toolCalls.filter((c) => c.ok).length !== turns)
      throw new Error("a Quiver run did not complete");
    let model = new ScriptedModel(chunk, { record: false });
    let agent = new Agent({ name: "bench", model, tools: [add] });
    contenders.quiver = () => {
      if (model.remaining <= turns) {
        model = new ScriptedModel(chunk, { record: false });
        agent = new Agent({ name: "bench", model, tools: [add] });
      }
      return Runner.run(agent, "go", options);
    };
    // stream() read event by event, as loop.ts measures it.
    let streamModel = new ScriptedModel(chunk, { record: false });
    let streamAgent = new Agent({ name: "bench", model: streamModel, tools: [add] });
    contenders.quiverStream = async () => {
      if (streamModel.remaining <= turns) {
        streamModel = new ScriptedModel(chunk, { record: false });
        streamAgent = new Agent({ name: "bench", model: streamModel, tools: [add] });
      }
      const handle = Runner.stream(streamAgent, "go", options);
      let events = 0;
      for await (const event of handle) if (event.type) events++;
      await handle.result();
      return events;
    };
  }
  // Each contender gets its own number of runs per sample, so that every sample lasts about
  // SAMPLE_MS: with the same number for all, the fastest contender's samples were a few ms
  // long, and the GC work the previous contender's sample left behind (its first scavenge
  // after pi-agent-core's sample cost ~3 ms here) weighed on it alone.
  const runs: Record<string, number> = {};
  for (const [name, once] of Object.entries(contenders)) runs[name] = await runsPerSample(once);
  const sampled = Object.fromEntries(
    Object.entries(contenders).map(([name, once]) => [
      name,
      async () => {
        for (let i = 0; i < runs[name]!; i++) await once();
      },
    ]),
  );
  const ms = await compare(sampled, { samples, warmups: 1 });
  const perCall = (name: string) => (ms[name]! * 1000) / (runs[name]! * turns);
  const result: FrameworkResult = {
    label: mod.label,
    us: perCall("framework"),
    baselineUs: perCall("baseline"),
    ...(beside && { quiverUs: perCall("quiver"), quiverStreamUs: perCall("quiverStream") }),
  };
  if (cold) {
    // A gc() costs milliseconds: fewer runs per sample, so a sample stays short.
    const coldRuns = Math.max(1, Math.round(runs.framework! / 4));
    const coldTurns = script({ turns, runs: coldRuns });
    const coldMsOf = await compareTimed(
      {
        framework: () => coldMs(coldRuns, runOnce),
        baseline: () => {
          const model = new ScriptedModel(coldTurns, { record: false });
          return coldMs(coldRuns, () => baselineRun(model, "go", [bareAdd]));
        },
      },
      { samples, warmups: 1 },
    );
    const perColdCall = (sampleMs: number) => (sampleMs * 1000) / (coldRuns * turns);
    result.coldUs = perColdCall(coldMsOf.framework);
    result.baselineColdUs = perColdCall(coldMsOf.baseline);
  }
  return result;
}

/**
 * Installs the frameworks on first use (from the lock file in bench/frameworks). Without a
 * registry the comparison is skipped, said so, and W1 falls back to issue 9's figure.
 */
export function install(): boolean {
  // A package the lock file gained since the last install (@ai-sdk/openai) installs it again.
  if (existsSync(join(DIR, "node_modules/@ai-sdk/openai"))) return true;
  console.error("bench: installing the frameworks to compare with (bench/frameworks)…");
  try {
    execFileSync("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], {
      cwd: DIR,
      stdio: "inherit",
    });
    return true;
  } catch (error) {
    console.error(`bench: could not install them (${(error as Error).message}); skipping the comparison`);
    return false;
  }
}

/** One framework: W0 (1 turn, per run = per call), W1s (20 turns), W1 (500 turns; cold too for the first adapter). */
export type Measured = { label: string; w0: FrameworkResult; short: FrameworkResult; long: FrameworkResult };

/** Every framework at 1, 20 and 500 turns, each in its own child processes. */
export async function measure(): Promise<Measured[]> {
  if (!install()) return [];
  const measured: Measured[] = [];
  for (const adapter of ADAPTERS) {
    // The cold heap, and Quiver side by side, only for the fastest (listed first): the others
    // take seconds per run.
    const first = adapter === ADAPTERS[0];
    const at = (turns: number, cold = false) =>
      inChild<FrameworkResult>(
        "workloads/frameworks.ts",
        "framework",
        { adapter, turns, samples: first ? 11 : 7, cold, beside: first },
        cold ? ["--expose-gc"] : [],
      );
    const w0 = await at(1);
    const short = await at(20);
    const long = await at(500, first);
    measured.push({ label: long.label, w0, short, long });
  }
  return measured;
}

/**
 * What Quiver's targets compare with: the fastest framework at 500 turns, and its W0, W1s and
 * cold W1; `beside`, when measured, holds both sides of each workload from one process each.
 */
export type Anchor = {
  label: string;
  us: number;
  w0Us: number;
  shortUs: number;
  coldUs?: number;
  beside?: Record<"w0" | "short" | "long", { quiverUs: number; frameworkUs: number }> & {
    /** Quiver's stream() at 500 turns, beside the framework. */
    streamLong?: { quiverUs: number; frameworkUs: number };
  };
};

/** The fastest framework at 500 turns, per call. */
export function fastest(measured: Measured[]): Anchor | undefined {
  const best = [...measured].sort((a, b) => a.long.us - b.long.us)[0];
  return (
    best && {
      label: best.label,
      us: best.long.us,
      w0Us: best.w0.us,
      shortUs: best.short.us,
      coldUs: best.long.coldUs,
      ...(best.w0.quiverUs !== undefined &&
        best.short.quiverUs !== undefined &&
        best.long.quiverUs !== undefined && {
          beside: {
            w0: { quiverUs: best.w0.quiverUs, frameworkUs: best.w0.us },
            short: { quiverUs: best.short.quiverUs, frameworkUs: best.short.us },
            long: { quiverUs: best.long.quiverUs, frameworkUs: best.long.us },
            ...(best.long.quiverStreamUs !== undefined && {
              streamLong: { quiverUs: best.long.quiverStreamUs, frameworkUs: best.long.us },
            }),
          },
        }),
    }
  );
}

/** A row of the frameworks table for Quiver (or the baseline loop), from loop.ts. */
export type QuiverRow = { label: string; w0?: number; short: number; long: number; cold?: number };

/** One markdown table: each framework (and Quiver and the baseline loop, from loop.ts) at 1, 20 and 500 turns. */
export function table(measured: Measured[], quiver: QuiverRow[]): string {
  const lines = [
    "| framework | W0: µs per run (1 call + answer) | W1s: µs per call (20 turns) | W1: µs per call (500 turns) | W1 cold heap: µs per call | growth (W1 ÷ W1s) | × baseline (W1) | Quiver run() is faster by (W0 / W1s / W1) |",
    "| --- | --: | --: | --: | --: | --: | --: | --: |",
  ];
  const quiverRun = quiver.find((q) => q.label === "Quiver run()");
  const opt = (n: number | undefined) => (n === undefined ? "" : fmt(n));
  for (const q of quiver)
    lines.push(
      `| **${q.label}** | ${opt(q.w0)} | ${fmt(q.short)} | ${fmt(q.long)} | ${opt(q.cold)} | ${ratio(q.long / q.short)} | | |`,
    );
  for (const { label, w0, short, long } of measured) {
    const faster = quiverRun
      ? [
          quiverRun.w0 === undefined ? "" : `${fmt(w0.us / quiverRun.w0, 1)}×`,
          `${fmt(short.us / quiverRun.short, 1)}×`,
          `${fmt(long.us / quiverRun.long, 1)}×`,
        ].join(" / ")
      : "";
    lines.push(
      `| ${label} | ${fmt(w0.us)} | ${fmt(short.us)} | ${fmt(long.us)} | ${opt(long.coldUs)} | ${ratio(long.us / short.us)} | ${ratio(long.us / long.baselineUs)} | ${faster} |`,
    );
  }
  return lines.join("\n");
}
