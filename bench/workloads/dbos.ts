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
 * five-call runs would measure. Plain and DBOS phases alternate, ROUNDS DBOS phases per worker
 * count; each is compared with the mean of the plain phases around it (the machine's speed
 * drifts), and the median of those ratios is the row's.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { fmt, inChild, loadQuiver, type Row, ratio, root } from "../harness.js";

const RUNS = Number(process.env.RUNS ?? 200);
const CALLS = 5;
const CONCURRENCY = 8;
const POLL_MS = Number(process.env.POLL_MS ?? 10);
/** Runs started at once to warm the DBOS client's pool (its default size is 20 connections). */
const WARM_RUNS = 40;

/** DBOS phases per worker count, each between two plain ones (the median ratio is reported). */
const ROUNDS = 5;

type DbosArgs = { url: string };
/** Runs per second: the plain phases in order, and each DBOS phase with the plain ones around it. */
type Phase = { dbos: number; before: number; after: number };
type DbosResult = { plain: number[]; one: Phase[]; two: Phase[] };

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
    // As docs/scale-out.md writes a web tier: with the store's database, result() hears runs end.
    const runs = durableRuns({ store, client, databaseUrl: url });
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
    await runs.close();
    await client.destroy();
    await store.close();
    return RUNS / (ms / 1000);
  };
  try {
    const plainRates = [await plain()];
    const phases = async (label: string): Promise<Phase[]> => {
      const measured: Phase[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const dbos = await viaDbos(`${label}-${round}`);
        plainRates.push(await plain());
        measured.push({ dbos, before: plainRates.at(-2)!, after: plainRates.at(-1)! });
      }
      return measured;
    };
    // A worker just started has cold code and pools: one whole phase warms it, not counted.
    await startWorker(url, "bench-1", workers);
    await viaDbos("one-warm");
    const one = await phases("one");
    await startWorker(url, "bench-2", workers);
    await viaDbos("two-warm");
    const two = await phases("two");
    return { plain: plainRates, one, two };
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
    const what = `${RUNS} runs × ${CALLS} tool calls, ${CONCURRENCY} at a time per process, queue polled every ${POLL_MS} ms`;
    const row = (workers: number, phases: Phase[]): Row => {
      // Each phase against the mean of the plain phases just before and after it; the median phase.
      const ratios = phases.map((p) => p.dbos / ((p.before + p.after) / 2));
      const middle = [...ratios].sort((a, b) => a - b)[Math.floor(ratios.length / 2)]!;
      const median = phases[ratios.indexOf(middle)]!;
      return {
        workload: `D1 durableRuns (DBOS), ${workers} worker${workers > 1 ? "s" : ""}: ${what}`,
        measure: `runs per second, the median of ${phases.length} phases (ratios ${ratios.map((x) => ratio(x)).join(", ")}; baseline column: plain PostgresStore in one process, the mean of the phases just before and after; plain phases: ${r.plain.map((x) => fmt(x, 0)).join(", ")})`,
        quiver: fmt(median.dbos, 1),
        baseline: fmt((median.before + median.after) / 2, 1),
        ratio: ratio(middle),
        target: "≥ 0.5×",
        met: middle >= 0.5,
      };
    };
    return [row(1, r.one), row(2, r.two)];
  } finally {
    await cluster.stop();
  }
}
