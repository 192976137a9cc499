/**
 * What `quiver-agents/dbos` costs next to the plain `PostgresStore` path: runs per second and
 * milliseconds per tool call, for RUNS runs of an agent making CALLS tool calls (one per model
 * turn, a scripted model and an instant tool, so the orchestration is all that is measured).
 *
 * - plain: this process drives the runs itself (`Runner.run` with a `PostgresStore`), CONCURRENCY at a time;
 * - dbos, 1 and 2 workers: worker processes (launched before the clock starts) drive the runs,
 *   enqueued through a `DBOSClient`; the clock stops when the last result is in.
 *
 * Needs PostgreSQL's initdb/pg_ctl (a throwaway cluster is started).
 *
 *   npx tsx bench/dbos.ts            # RUNS=40 CALLS=5 CONCURRENCY=8 POLL_MS=1000 (the queue's dispatch poll)
 */
import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import { DBOSClient } from "@dbos-inc/dbos-sdk";
import { Runner } from "quiver-agents";
import { durableRuns } from "quiver-agents/dbos";
import { PostgresStore } from "quiver-agents/store";
import { startPostgresCluster } from "../test/store/postgres-cluster.js";
import { benchAgent } from "./dbos-agent.js";

const RUNS = Number(process.env.RUNS ?? 40);
const CALLS = Number(process.env.CALLS ?? 5);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 8);
const root = resolve(import.meta.dirname, "..");

const cluster = await startPostgresCluster({ durable: true });
const url = cluster.connectionString;
const workers: ChildProcess[] = [];

function startWorker(id: string): Promise<void> {
  const child = spawn(process.execPath, ["--import", "tsx", resolve(root, "bench/dbos-worker.ts")], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: url,
      EXECUTOR_ID: id,
      CALLS: String(CALLS),
      CONCURRENCY: String(CONCURRENCY),
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  workers.push(child);
  return new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`worker ${id} not ready in 60 s`)), 60_000);
    child.stdout!.on("data", (chunk) => {
      if (String(chunk).includes("ready")) {
        clearTimeout(timer);
        done();
      }
    });
  });
}

async function plain(): Promise<number> {
  const store = new PostgresStore({ connectionString: url, schema: "plain" });
  const agent = benchAgent(CALLS);
  await Runner.run(agent, "warm up", { store });
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < RUNS) {
        next++;
        const result = await Runner.run(agent, "add", { store, maxTurns: CALLS + 2 });
        if (result.stopReason !== "completed") throw new Error(`plain run ended ${result.stopReason}`);
      }
    }),
  );
  const ms = performance.now() - started;
  await store.close();
  return ms;
}

async function viaDbos(label: string): Promise<number> {
  const store = new PostgresStore({ connectionString: url });
  const client = await DBOSClient.create({ systemDatabaseUrl: url });
  const runs = durableRuns({ store, client });
  const warm = await runs.start("bench", "warm up", { runId: `${label}-warm` });
  await runs.result(warm, { timeoutMs: 60_000 });
  const started = performance.now();
  const ids = await Promise.all(
    Array.from({ length: RUNS }, (_, i) => runs.start("bench", "add", { runId: `${label}-${i}` })),
  );
  for (const result of await Promise.all(ids.map((id) => runs.result(id, { timeoutMs: 120_000 })))) {
    if (result.stopReason !== "completed") throw new Error(`dbos run ended ${result.stopReason}`);
  }
  const ms = performance.now() - started;
  await client.destroy();
  await store.close();
  return ms;
}

const rows: Array<[string, number]> = [];
try {
  rows.push(["plain PostgresStore, 1 process", await plain()]);
  await startWorker("bench-1");
  rows.push(["dbos, 1 worker", await viaDbos("one")]);
  await startWorker("bench-2");
  rows.push(["dbos, 2 workers", await viaDbos("two")]);
} finally {
  for (const child of workers) child.kill("SIGKILL");
  await cluster.stop();
}
const base = rows[0]![1] / RUNS;
console.log(
  `\n${RUNS} runs × ${CALLS} tool calls, ${CONCURRENCY} at a time per process, queue poll ${process.env.POLL_MS ?? 1000} ms\n`,
);
console.log("| path | runs/s | ms per run | ms per call | overhead per call vs plain |");
console.log("| --- | --- | --- | --- | --- |");
for (const [name, ms] of rows) {
  const perRun = ms / RUNS;
  console.log(
    `| ${name} | ${(RUNS / (ms / 1000)).toFixed(1)} | ${perRun.toFixed(1)} | ${(perRun / CALLS).toFixed(2)} | ${((perRun - base) / CALLS).toFixed(2)} ms |`,
  );
}
