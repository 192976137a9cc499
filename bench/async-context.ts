/**
 * What `getRunContext()`'s AsyncLocalStorage costs on this Node, as evidence for the W1 rows:
 * W1's workload (one `add` call per turn, 500 turns) through the built dist/ and through a
 * copy of it whose `enterRunContext` calls the tool without AsyncLocalStorage (so
 * `getRunContext()` would throw there), interleaved in one process; then the bare cost of
 * switching an AsyncLocalStorage on and off around one async call, which Node 20 does by
 * installing and removing promise hooks.
 *
 *   npm run build && npx tsx bench/async-context.ts
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { cpSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { compare, fmt, root } from "./harness.js";
import { quiverAdd, script } from "./workloads/baseline.js";

const TURNS = 500;
const RUNS_PER_SAMPLE = 6;

/** dist/ with the run context bypassed; throws if call-scope.js no longer looks as expected. */
function withoutAsyncContext(): string {
  const copy = join(root, "node_modules/.cache/quiver-without-async-context");
  rmSync(copy, { recursive: true, force: true });
  cpSync(join(root, "dist"), copy, { recursive: true });
  const file = join(copy, "run/engine/call-scope.js");
  const source = readFileSync(file, "utf8");
  const patched = source
    .replace("return storage.run(ctx, fn, arg);", "return fn(arg);")
    .replace("storage.disable();", ";");
  if (patched === source || patched.includes("storage.run(ctx")) {
    throw new Error("dist/run/engine/call-scope.js changed: update bench/async-context.ts's patch");
  }
  writeFileSync(file, patched);
  return copy;
}

type Quiver = typeof import("quiver-agents");

function w1(q: Quiver, stream: boolean): () => Promise<void> {
  const add = quiverAdd(q.tool);
  const turns = script({ turns: TURNS, runs: RUNS_PER_SAMPLE });
  return async () => {
    const agent = new q.Agent({
      name: "bench",
      model: new q.ScriptedModel(turns, { record: false }),
      tools: [add],
    });
    for (let i = 0; i < RUNS_PER_SAMPLE; i++) {
      if (!stream) {
        await q.Runner.run(agent, "go", { maxTurns: TURNS + 1 });
        continue;
      }
      const handle = q.Runner.stream(agent, "go", { maxTurns: TURNS + 1 });
      for await (const event of handle) if (!event.type) throw new Error("an event without a type");
      await handle.result();
    }
  };
}

type Measured = { builtUs: number; withoutUs: number };

export async function main(): Promise<{ run: Measured; stream: Measured; toggleUs: number }> {
  const built = (await import(pathToFileURL(join(root, "dist/index.js")).href)) as Quiver;
  const bypassed = (await import(pathToFileURL(join(withoutAsyncContext(), "index.js")).href)) as Quiver;
  const perCall = (ms: number) => (ms * 1000) / (TURNS * RUNS_PER_SAMPLE);
  console.log(`W1, ${TURNS} turns, µs per call (median of 11 interleaved samples)`);
  const w1Results: Measured[] = [];
  for (const stream of [false, true]) {
    const ms = await compare({ built: w1(built, stream), bypassed: w1(bypassed, stream) }, { samples: 11 });
    const path = stream ? "stream()" : "run()   ";
    console.log(
      `  ${path}  as built ${fmt(perCall(ms.built), 2)}   without AsyncLocalStorage ${fmt(perCall(ms.bypassed), 2)}   difference ${fmt(perCall(ms.built - ms.bypassed), 2)}`,
    );
    w1Results.push({ builtUs: perCall(ms.built), withoutUs: perCall(ms.bypassed) });
  }

  const storage = new AsyncLocalStorage<number>();
  const call = async () => 1;
  const n = 100_000;
  const toggled = async () => {
    for (let i = 0; i < n; i++) {
      const work = storage.run(i, call);
      await work;
      storage.disable();
    }
  };
  const plain = async () => {
    for (let i = 0; i < n; i++) await call();
  };
  const ms = await compare({ toggled, plain }, { samples: 7 });
  const toggleUs = ((ms.toggled - ms.plain) * 1000) / n;
  console.log(
    `AsyncLocalStorage run() + disable() around one async call: ${fmt(toggleUs, 2)} µs more than the call alone`,
  );
  return { run: w1Results[0]!, stream: w1Results[1]!, toggleUs };
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) await main();
