// Interleaved: floor commits and durable runs in one process; prints the ratio per round.
import { startPostgresCluster } from "./store/postgres-cluster.js";
const q = await import(`${process.env.DIST}/index.js`);
const stores = await import(`${process.env.DIST}/store/index.js`);
const { Agent, Runner, ScriptedModel, tool } = q as any;
import { z } from "zod";
const TURNS = 20;
function script(runs: number) {
  const steps: any[] = [];
  for (let r = 0; r < runs; r++) {
    for (let i = 0; i < TURNS; i++) steps.push({ toolCalls: [{ name: "add", args: { a: i, b: 1 } }] });
    steps.push({ text: "done" });
  }
  return steps;
}
const add = tool({ name: "add", description: "add", parameters: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }: any) => a + b });
const cluster = await startPostgresCluster({ durable: true });
const store = new stores.PostgresStore({ connectionString: cluster.connectionString, schema: "prof" });
const RUNS = Number(process.env.RUNS ?? 10);
async function round() {
  const model = new ScriptedModel(script(RUNS), { record: false });
  const agent = new Agent({ name: "bench", model, tools: [add] });
  for (let i = 0; i < RUNS; i++) {
    const r = await Runner.run(agent, "go", { maxTurns: TURNS + 1, store });
    if (r.stopReason !== "completed") throw new Error(r.stopReason);
  }
}
const pg = (await import("pg")).default;
const fc = new pg.Client({ connectionString: cluster.connectionString }); await fc.connect();
await fc.query("CREATE TABLE IF NOT EXISTS bench_floor (k serial PRIMARY KEY, v text NOT NULL)");
async function floor(n: number) { for (let i = 0; i < n; i++) { await fc.query("BEGIN"); await fc.query("INSERT INTO bench_floor (v) VALUES ($1)", ["a small row of about forty characters...."]); await fc.query("COMMIT"); } }
await floor(300); await round(); await round();
const ours: number[] = [], floors: number[] = [];
for (let k = 0; k < Number(process.env.ROUNDS ?? 15); k++) {
  let t0 = performance.now(); await floor(RUNS * TURNS / 2); floors.push((performance.now() - t0) * 1000 / (RUNS * TURNS / 2));
  t0 = performance.now(); await round(); ours.push((performance.now() - t0) * 1000 / (RUNS * TURNS));
}
const med = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
console.log(`${process.env.LABEL} ours ${med(ours).toFixed(0)} floor ${med(floors).toFixed(0)} ratio ${(med(ours) / med(floors)).toFixed(2)}`);
await store.close(); await fc.end(); await cluster.stop();
