/**
 * What `quiver-agents/dbos` costs beside the plain `PostgresStore` path (issue 36): runs per
 * second for RUNS runs of an agent making CALLS tool calls (one per turn, a scripted model and an
 * instant tool, so the orchestration is all that is measured), on a throwaway PostgreSQL.
 *
 * - plain: the child drives the runs itself (`Runner.run` with a `PostgresStore`), CONCURRENCY at a time;
 * - DBOS, 1 and 2 workers: worker processes (bench/dbos-worker.mjs, started before the clock)
 *   drive the runs, enqueued from the child through a `DBOSClient`; the clock stops when the
 *   last `runs.result()` is in.
 *
 * The queue is polled every POLL_MS (10 ms): at DBOS's default 1 s poll a worker takes at most
 * CONCURRENCY runs a second, and the poll, not the orchestration, is what a benchmark of
 * five-call runs would measure. The plain path is measured before and after each DBOS phase;
 * each phase is compared with the mean of the two around it (the machine's speed drifts).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { fmt, inChild, loadQuiver, type Row, ratio, root } from "../harness.js";

const RUNS = 200;
const CALLS = 5;
const CONCURRENCY = 8;
const POLL_MS = 10;
/** Runs started at once to warm the DBOS client's pool (its default size is 20 connections). */
const WARM_RUNS = 40;

type DbosArgs = { url: string };
type DbosResult = { plain: number[]; one: number; two: number };

type Stores = typeof import("quiver-agents/store");
type Dbos = typeof import("quiver-agents/dbos");

async function fromBuild<T>(dist: string, source: string): Promise<T> {
  if (process.env.BENCH_SOURCE === "src") return import(source) as Promise<T>;
  return import(pathToFileURL(join(root, dist)).href) as Promise<T>;
}

function startWorker(url: string, id: string, workers: ChildProcess[]): Promise<void> {
  const loader = process.env.BENCH_SOURCE === "src" ? ["--import", "tsx"] : [];
  const child = spawn(process.execPath, [...loader, resolve(root, "bench/dbos-worker.mjs")], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: url,
      EXECUTOR_ID: id,
      CALLS: String(CALLS),
      CONCURRENCY: String(CONCURRENCY),
      POLL_MS: String(POLL_MS),
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
    child.once("exit", (code) => fail(new Error(`worker ${id} exited with ${code}`)));
  });
}

/** Child side: plain, DBOS with one worker, plain, DBOS with two, plain; runs per second each. */
export async function dbos({ url }: DbosArgs): Promise<DbosResult> {
  const q = await loadQuiver();
  const { PostgresStore } = await fromBuild<Stores>("dist/store/index.js", "quiver-agents/store");
  const { durableRuns } = await fromBuild<Dbos>("dist/dbos/index.js", "quiver-agents/dbos");
  const { DBOSClient } = await import("@dbos-inc/dbos-sdk");
  const { z } = await import("zod");
  const { benchAgent } = (await import(pathToFileURL(join(root, "bench/dbos-agent.mjs")).href)) as {
    benchAgent(quiver: typeof q, zod: typeof z, calls: number): InstanceType<typeof q.Agent>;
  };
  const workers: ChildProcess[] = [];
  let plainRound = 0;
  const plain = async (): Promise<number> => {
    const store = new PostgresStore({ connectionString: url, schema: `plain_${plainRound++}` });
    const agent = benchAgent(q, z, CALLS);
    // Warm: CONCURRENCY runs at once, so the pool holds its connections before the clock starts.
    await Promise.all(Array.from({ length: CONCURRENCY }, () => q.Runner.run(agent, "warm up", { store })));
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < RUNS) {
          next++;
          const result = await q.Runner.run(agent, "add", { store, maxTurns: CALLS + 2 });
          if (result.stopReason !== "completed") throw new Error(`plain run ended ${result.stopReason}`);
        }
      }),
    );
    const ms = performance.now() - started;
    await store.close();
    return RUNS / (ms / 1000);
  };
  const viaDbos = async (label: string): Promise<number> => {
    const store = new PostgresStore({ connectionString: url });
    const client = await DBOSClient.create({ systemDatabaseUrl: url });
    const runs = durableRuns({ store, client });
    // Warm the same way: a batch as wide as the timed one's first wave, so the client's pool (and
    // the workers' pools) hold their connections before the clock starts, as a web tier's do.
    const warm = await Promise.all(
      Array.from({ length: WARM_RUNS }, (_, i) =>
        runs.start("bench", "warm up", { runId: `${label}-warm-${i}` }),
      ),
    );
    await Promise.all(warm.map((id) => runs.result(id, { timeoutMs: 60_000 })));
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
    return RUNS / (ms / 1000);
  };
  try {
    const before = await plain();
    await startWorker(url, "bench-1", workers);
    const one = await viaDbos("one");
    const between = await plain();
    await startWorker(url, "bench-2", workers);
    const two = await viaDbos("two");
    const after = await plain();
    return { plain: [before, between, after], one, two };
  } finally {
    for (const child of workers) child.kill("SIGKILL");
  }
}

export async function rows(): Promise<Row[]> {
  let cluster: { connectionString: string; stop(): Promise<void> };
  try {
    const { startPostgresCluster } = await import("../../test/store/postgres-cluster.js");
    cluster = await startPostgresCluster({ durable: true });
  } catch (error) {
    console.error(`bench: dbos: no PostgreSQL (${(error as Error).message.split("\n")[0]}); skipped`);
    return [];
  }
  try {
    const r = await inChild<DbosResult>("workloads/dbos.ts", "dbos", { url: cluster.connectionString });
    const [before, between, after] = r.plain as [number, number, number];
    const what = `${RUNS} runs × ${CALLS} tool calls, ${CONCURRENCY} at a time per process, queue polled every ${POLL_MS} ms`;
    const row = (workers: number, runsPerSecond: number, reference: number): Row => ({
      workload: `D1 durableRuns (DBOS), ${workers} worker${workers > 1 ? "s" : ""}: ${what}`,
      measure: `runs per second (baseline column: plain PostgresStore in one process, the mean of the runs just before and after: ${fmt(before, 0)}, ${fmt(between, 0)}, ${fmt(after, 0)})`,
      quiver: fmt(runsPerSecond, 1),
      baseline: fmt(reference, 1),
      ratio: ratio(runsPerSecond / reference),
      target: "≥ 0.5×",
      met: runsPerSecond >= 0.5 * reference,
    });
    return [row(1, r.one, (before + between) / 2), row(2, r.two, (between + after) / 2)];
  } finally {
    await cluster.stop();
  }
}
