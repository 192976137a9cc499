/**
 * Other TypeScript agent frameworks on W1's workload (one `add` call per turn, then a final
 * answer, over an instant scripted model), each in its own child process: their per-call
 * cost at 20 and 500 turns, and the baseline loop interleaved in the same process. Each
 * adapter in bench/frameworks/ builds that framework's own scripted model and tool, and
 * counts the calls its run really made. They are installed apart from Quiver's own
 * dependencies (bench/frameworks/package.json), on the first `npm run bench`.
 *
 * Issue 9's W1 target is "≤ ⅓ of the fastest framework measured": this is the measurement.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { compare, fmt, inChild, loadQuiver, ratio, root, timeMs } from "../harness.js";
import { addNumbers, bareAdd, baselineRun, script } from "./baseline.js";

type Adapter = {
  label: string;
  setup(options: { turns: number; addNumbers: typeof addNumbers }): Promise<() => Promise<number>>;
};

const DIR = join(root, "bench/frameworks");
/** The adapters, fastest first as measured here; every one is measured in every run. */
const ADAPTERS = ["pi-agent-core.mjs", "openai-agents.mjs", "ai-sdk.mjs"];

type FrameworkArgs = { adapter: string; turns: number; samples: number };
/** Runs per sample are chosen so a sample takes about this long, for slow and fast frameworks alike. */
const SAMPLE_MS = 250;
type FrameworkResult = { label: string; us: number; baselineUs: number };

/** Child side: per-call µs of one framework and of the baseline, interleaved. */
export async function framework({ adapter, turns, samples }: FrameworkArgs): Promise<FrameworkResult> {
  const mod = (await import(pathToFileURL(join(DIR, adapter)).href)) as Adapter;
  const runOnce = await mod.setup({ turns, addNumbers });
  const calls = await runOnce();
  if (calls !== turns) throw new Error(`${mod.label} made ${calls} tool calls in a run of ${turns} turns`);
  // A slow framework's run is a sample by itself; a fast one's is timed a few times first.
  let oneRunMs = await timeMs(runOnce);
  if (oneRunMs < SAMPLE_MS) oneRunMs = Math.min(oneRunMs, await timeMs(runOnce), await timeMs(runOnce));
  const runsPerSample = Math.max(1, Math.round(SAMPLE_MS / oneRunMs));
  const { ScriptedModel } = await loadQuiver();
  const turnsPerSample = script({ turns, runs: runsPerSample });
  const ms = await compare(
    {
      framework: async () => {
        for (let i = 0; i < runsPerSample; i++) await runOnce();
      },
      baseline: async () => {
        const model = new ScriptedModel(turnsPerSample, { record: false });
        for (let i = 0; i < runsPerSample; i++) await baselineRun(model, "go", [bareAdd]);
      },
    },
    { samples, warmups: 1 },
  );
  const perCall = (sampleMs: number) => (sampleMs * 1000) / (runsPerSample * turns);
  return { label: mod.label, us: perCall(ms.framework), baselineUs: perCall(ms.baseline) };
}

/**
 * Installs the frameworks on first use (from the lock file in bench/frameworks). Without a
 * registry the comparison is skipped, said so, and W1 falls back to issue 9's figure.
 */
function install(): boolean {
  if (existsSync(join(DIR, "node_modules"))) return true;
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

export type Measured = { label: string; short: FrameworkResult; long: FrameworkResult };

/** Every framework at 20 and 500 turns, each in its own child processes. */
export async function measure(): Promise<Measured[]> {
  if (!install()) return [];
  const measured: Measured[] = [];
  for (const adapter of ADAPTERS) {
    const short = await inChild<FrameworkResult>("workloads/frameworks.ts", "framework", {
      adapter,
      turns: 20,
      samples: 7,
    });
    const long = await inChild<FrameworkResult>("workloads/frameworks.ts", "framework", {
      adapter,
      turns: 500,
      samples: 7,
    });
    measured.push({ label: long.label, short, long });
  }
  return measured;
}

/** The fastest framework at 500 turns, per call. */
export function fastest(measured: Measured[]): { label: string; us: number } | undefined {
  const best = [...measured].sort((a, b) => a.long.us - b.long.us)[0];
  return best && { label: best.label, us: best.long.us };
}

/** One markdown table: each framework (and Quiver, from W1) per call at 20 and 500 turns. */
export function table(
  measured: Measured[],
  quiver: Array<{ label: string; short: number; long: number }>,
): string {
  const lines = [
    "| framework | µs per call, 20 turns | µs per call, 500 turns | growth | × baseline (500 turns) | Quiver run() is faster by |",
    "| --- | --: | --: | --: | --: | --: |",
  ];
  const quiverRun = quiver[0]?.long;
  for (const q of quiver)
    lines.push(`| **${q.label}** | ${fmt(q.short)} | ${fmt(q.long)} | ${ratio(q.long / q.short)} | | |`);
  for (const { label, short, long } of measured) {
    const faster = quiverRun ? `${fmt(long.us / quiverRun, 1)}×` : "";
    lines.push(
      `| ${label} | ${fmt(short.us)} | ${fmt(long.us)} | ${ratio(long.us / short.us)} | ${ratio(long.us / long.baselineUs)} | ${faster} |`,
    );
  }
  return lines.join("\n");
}
