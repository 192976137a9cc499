/**
 * A worker process for bench/dbos.ts: drives `quiver.run` for one agent that makes CALLS tool
 * calls, one per turn, then answers.
 *
 *   DATABASE_URL=postgresql://…  EXECUTOR_ID=bench-1  CALLS=5  CONCURRENCY=8  POLL_MS=1000
 */
import { DBOS } from "@dbos-inc/dbos-sdk";
import { durableRuns } from "quiver-agents/dbos";
import { PostgresStore } from "quiver-agents/store";
import { benchAgent } from "./dbos-agent.js";

const env = process.env;
const url = env.DATABASE_URL!;
const store = new PostgresStore({ connectionString: url });
const runs = durableRuns({
  store,
  agents: { bench: benchAgent(Number(env.CALLS ?? 5)) },
  databaseUrl: url,
  queue: { workerConcurrency: Number(env.CONCURRENCY ?? 8), pollingIntervalMs: Number(env.POLL_MS ?? 1_000) },
});
DBOS.setConfig({
  name: "quiver-bench",
  systemDatabaseUrl: url,
  executorID: env.EXECUTOR_ID!,
  applicationVersion: "bench-1",
  logLevel: "error",
});
await DBOS.launch();
await runs.startWorker({ reaper: false });
process.stdout.write("ready\n");
