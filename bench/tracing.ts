/**
 * What tracing costs, as evidence for "zero cost when unused": W1's workload (one `add` call per
 * turn, 500 turns) through the built dist/, untraced and traced, interleaved in one process:
 *   - untraced (no tracer anywhere: the loop's only tracing work is one `undefined` check per event);
 *   - traced with the OpenTelemetry API's default tracer and no SDK (spans are non-recording);
 *   - traced with an SDK provider that records every span and exports none (span creation and
 *     attributes, without an exporter's cost), content capture off.
 * With BENCH_BEFORE_DIST=<a dist/ built from the commit before tracing existed>, that build's
 * untraced run is measured too, so "untraced" can be compared with code that had no tracing.
 *
 *   npm run build && npx tsx bench/tracing.ts
 */
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { trace } from "@opentelemetry/api";
import { BasicTracerProvider } from "@opentelemetry/sdk-trace-base";
import type { RunOptions } from "quiver-agents";
import { compare, fmt, root } from "./harness.js";
import { quiverAdd, script } from "./workloads/baseline.js";

const TURNS = 500;
const RUNS_PER_SAMPLE = 6;
const SAMPLES = 11;

type Quiver = typeof import("quiver-agents");

function w1(q: Quiver, options: RunOptions): () => Promise<void> {
  const add = quiverAdd(q.tool);
  const turns = script({ turns: TURNS, runs: RUNS_PER_SAMPLE });
  return async () => {
    const model = new q.ScriptedModel(turns, { record: false });
    const agent = new q.Agent({ name: "bench", model, tools: [add] });
    for (let i = 0; i < RUNS_PER_SAMPLE; i++)
      await q.Runner.run(agent, "go", { maxTurns: TURNS + 1, ...options });
  };
}

export async function main(): Promise<Record<string, number>> {
  const built = (await import(pathToFileURL(join(root, "dist/index.js")).href)) as Quiver;
  const contenders: Record<string, () => Promise<void>> = {
    untraced: w1(built, {}),
    "non-recording tracer": w1(built, { tracer: trace.getTracer("bench") }),
    "recording tracer, no export": w1(built, {
      tracer: new BasicTracerProvider({ spanProcessors: [] }).getTracer("bench"),
    }),
  };
  const before = process.env.BENCH_BEFORE_DIST;
  if (before) {
    const old = (await import(pathToFileURL(join(resolve(before), "index.js")).href)) as Quiver;
    contenders["untraced, before tracing existed"] = w1(old, {});
  }
  const ms = await compare(contenders, { samples: SAMPLES });
  const perCall = (sampleMs: number) => (sampleMs * 1000) / (TURNS * RUNS_PER_SAMPLE);
  const us = Object.fromEntries(Object.entries(ms).map(([name, sample]) => [name, perCall(sample)]));
  console.log(`W1 (Runner.run), ${TURNS} turns, µs per call (median of ${SAMPLES} interleaved samples)`);
  for (const [name, value] of Object.entries(us)) {
    const delta = value - us.untraced!;
    console.log(
      `  ${name.padEnd(34)} ${fmt(value, 2)}${name === "untraced" ? "" : `   (${delta >= 0 ? "+" : ""}${fmt(delta, 2)})`}`,
    );
  }
  return us;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) await main();
