/**
 * A worker process for bench/workloads/dbos.ts: drives `quiver.run` for the bench agent (see
 * dbos-agent.mjs). Plain node on dist/ (src/ under tsx with BENCH_SOURCE=src); prints "ready".
 *
 *   DATABASE_URL=postgresql://…  EXECUTOR_ID=bench-1  CALLS=5  CONCURRENCY=8  POLL_MS=10
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { DBOS } from "@dbos-inc/dbos-sdk";
import { z } from "zod";
import { benchAgent } from "./dbos-agent.mjs";

const root = join(import.meta.dirname, "..");
const from = (dist, src) =>
  process.env.BENCH_SOURCE === "src" ? import(join(root, src)) : import(pathToFileURL(join(root, dist)).href);
const q = await from("dist/index.js", "src/index.ts");
const { PostgresStore } = await from("dist/store/index.js", "src/store/index.ts");
const { durableRuns } = await from("dist/dbos/index.js", "src/dbos/index.ts");

const env = process.env;
const url = env.DATABASE_URL;
const store = new PostgresStore({ connectionString: url });
const runs = durableRuns({
  store,
  agents: { bench: benchAgent(q, z, Number(env.CALLS ?? 5)) },
  databaseUrl: url,
  queue: { workerConcurrency: Number(env.CONCURRENCY ?? 8), pollingIntervalMs: Number(env.POLL_MS ?? 1_000) },
});
DBOS.setConfig({
  name: "quiver-bench",
  systemDatabaseUrl: url,
  executorID: env.EXECUTOR_ID,
  applicationVersion: "bench-1",
  logLevel: "error",
});
await DBOS.launch();
await runs.startWorker({ reaper: false });
process.stdout.write("ready\n");
