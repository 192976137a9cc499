/**
 * The small machinery every workload shares: run a workload in a fresh child process, load
 * Quiver in it, take medians, and print results as table rows.
 *
 * Why a child per workload: a fresh heap and a fresh JIT, so one workload's garbage, inline
 * caches or peak RSS cannot skew the next.
 *
 * Why plain `node` on the built `dist/`: the code measured is the JavaScript users run (tsc's
 * output), in a process with no loader. The workloads are TypeScript, type-checked against
 * `src/` through the `quiver-agents` path alias; `compile.ts` transpiles them to plain JS first.
 * Running them under `--import tsx` instead would add its loader thread to every process:
 * about 40 MB of RSS, which would distort W4 and W5. `BENCH_SOURCE=src` measures `src/`
 * through tsx, for quick loops while optimizing without a build (not what RESULTS.md reports).
 *
 * The child side is `workloads/child.ts`.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** The checkout. Compiled workloads live elsewhere, so `compile.ts` passes it on. */
export const root = process.env.BENCH_ROOT ?? resolve(import.meta.dirname, "..");
export const distEntry = resolve(root, "dist/index.js");

/** One line of the results table. `met` is undefined when the number has no target. */
export type Row = {
  workload: string;
  measure: string;
  quiver: string;
  baseline?: string;
  ratio?: string;
  target?: string;
  met?: boolean;
};

/** The public API, from `dist/` (default) or from `src/` when `BENCH_SOURCE=src`. */
export async function loadQuiver(): Promise<typeof import("quiver-agents")> {
  if (process.env.BENCH_SOURCE === "src") return import("quiver-agents");
  if (!existsSync(distEntry)) throw new Error("dist/ is missing: run `npm run build` first");
  return import(pathToFileURL(distEntry).href);
}

/** `quiver-agents/store`, from the same build as `loadQuiver()`. */
export async function loadStores(): Promise<typeof import("quiver-agents/store")> {
  if (process.env.BENCH_SOURCE === "src") return import("quiver-agents/store");
  await loadQuiver(); // says so when dist/ is missing
  return import(pathToFileURL(resolve(root, "dist/store/index.js")).href);
}

export function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Milliseconds taken by `fn`. */
export async function timeMs(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

/**
 * A young-generation collection (a scavenge), untimed, before every sample: what the previous
 * contender left in the young generation is collected now, not during the next one's sample.
 * Not a full collection, which would throw away optimized code and measure a cold heap.
 */
const scavenge = () => collectGarbage("minor");

/** A garbage collection now, full by default, in a process not started with `--expose-gc`. */
export function collectGarbage(type: "minor" | "major" = "major"): void {
  if (!gc) {
    setFlagsFromString("--expose-gc");
    gc = runInNewContext("gc") as (options?: { type: "minor" }) => void;
  }
  // Node 20's V8 reads only "minor": `{ type: "major" }` is a scavenge too; no argument is a full collection.
  if (type === "minor") gc({ type });
  else gc();
}
let gc: ((options?: { type: "minor" }) => void) | undefined;

/**
 * Runs each contender `samples` times, interleaved (A B A B …) so that a burst of load on a
 * shared machine hits all of them alike, after `warmups` untimed rounds, each sample after a
 * scavenge. Returns the median sample of each, in milliseconds.
 */
export async function compare<K extends string>(
  contenders: Record<K, () => Promise<unknown>>,
  { samples = 9, warmups = 2 }: { samples?: number; warmups?: number } = {},
): Promise<Record<K, number>> {
  const names = Object.keys(contenders) as K[];
  const times = Object.fromEntries(names.map((n) => [n, [] as number[]])) as Record<K, number[]>;
  for (let round = 0; round < warmups + samples; round++) {
    for (const name of names) {
      scavenge();
      const ms = await timeMs(contenders[name]);
      if (round >= warmups) times[name].push(ms);
    }
  }
  return Object.fromEntries(names.map((n) => [n, median(times[n])])) as Record<K, number>;
}

/**
 * `compare()` for contenders that time themselves: each returns the milliseconds it counts
 * (e.g. its runs without the `gc()` before each). Interleaved the same way; medians.
 */
export async function compareTimed<K extends string>(
  contenders: Record<K, () => Promise<number>>,
  { samples = 9, warmups = 2 }: { samples?: number; warmups?: number } = {},
): Promise<Record<K, number>> {
  const names = Object.keys(contenders) as K[];
  const times = Object.fromEntries(names.map((n) => [n, [] as number[]])) as Record<K, number[]>;
  for (let round = 0; round < warmups + samples; round++) {
    for (const name of names) {
      scavenge();
      const ms = await contenders[name]();
      if (round >= warmups) times[name].push(ms);
    }
  }
  return Object.fromEntries(names.map((n) => [n, median(times[n])])) as Record<K, number>;
}

/**
 * Runs `run` `times` times, each after a full `gc()` (the child needs `--expose-gc`): a cold
 * heap, as a server's first request after a quiet spell sees. Returns the ms of the runs alone.
 */
export async function coldMs(times: number, run: () => Promise<unknown>): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("cold runs need node --expose-gc");
  let ms = 0;
  for (let i = 0; i < times; i++) {
    gc();
    const started = performance.now();
    await run();
    ms += performance.now() - started;
  }
  return ms;
}

export const mb = (bytes: number) => bytes / 1024 / 1024;
export const peakRssBytes = () => process.resourceUsage().maxRSS * 1024;
export const fmt = (n: number, digits = 1) => n.toFixed(digits);
export const ratio = (n: number) => `${n.toFixed(2)}×`;

/**
 * Runs `exportName` of `module` (a path relative to bench/) in a fresh Node process and
 * returns what it returned, and what it printed before that. `nodeFlags` go before the
 * script (e.g. `--expose-gc`).
 */
export function inChildWithLog<T>(
  module: string,
  exportName: string,
  args: unknown = {},
  nodeFlags: string[] = [],
): Promise<{ result: T; log: string }> {
  // Workloads run compiled under plain node (see above); other benchmarks import src/ under tsx.
  const compiled = process.env.BENCH_COMPILED;
  const argv =
    compiled && module.startsWith("workloads/")
      ? [...nodeFlags, join(compiled, "workloads/child.js"), module.replace(/\.ts$/, ".js")]
      : [...nodeFlags, "--import", "tsx", resolve(import.meta.dirname, "workloads/child.ts"), module];
  argv.push(exportName, JSON.stringify(args));
  // BENCH_NODE_FLAGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") reach every workload child.
  argv.unshift(...(process.env.BENCH_NODE_FLAGS?.split(" ").filter(Boolean) ?? []));
  return runNode(argv).then((stdout) => {
    const lines = stdout.trimEnd().split("\n");
    const result = JSON.parse(lines.pop() ?? "null") as T;
    return { result, log: lines.join("\n").trim() };
  });
}

/** `inChildWithLog` when only the result matters. */
export async function inChild<T>(
  module: string,
  exportName: string,
  args: unknown = {},
  nodeFlags: string[] = [],
) {
  return (await inChildWithLog<T>(module, exportName, args, nodeFlags)).result;
}

/** Runs `node` with `argv` in the checkout and returns its stdout; a non-zero exit rejects with its stderr. */
export function runNode(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((done, fail) => {
    execFile(
      process.execPath,
      argv,
      { cwd: root, env, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) =>
        error ? fail(new Error(`node ${argv.join(" ")} failed:\n${stderr || error.message}`)) : done(stdout),
    );
  });
}
