/**
 * Recovery of a dead machine's runs without DBOS Conductor. DBOS recovers a process's own
 * workflows when a process with the same executor id starts again; a machine that never comes
 * back leaves its workflows PENDING for ever. Each worker heartbeats into a small table; the
 * worker holding an advisory lock re-enqueues the PENDING `quiver.run` workflows of executors
 * silent for longer than `silentMs`, and any live worker picks them up.
 *
 * Two workers driving one run at once (the silent one was only slow) cannot both write it:
 * Quiver's lease lets one drive and the other retries until it finds the run finished.
 */
import { DBOS } from "@dbos-inc/dbos-sdk";
import type { DurableRunsPool } from "./pool.js";
import { WORKFLOW_NAME } from "./workflow.js";

/** What `startWorker` takes for the reaper. */
export type ReaperOptions = {
  /** An executor silent this long is taken for dead and its runs move to live workers. Default 60,000 ms. */
  silentMs?: number;
  /** How often this worker heartbeats and looks for dead executors. Default a quarter of `silentMs`, at most 5,000 ms. */
  everyMs?: number;
};

export const DEFAULT_SILENT_MS = 60_000;

/** A running heartbeat + reaper loop. */
export type Reaper = {
  /** Runs recovered from other executors so far, by this worker. */
  readonly recovered: readonly string[];
  /** One heartbeat and one pass over dead executors, now. */
  tick(): Promise<void>;
  stop(): Promise<void>;
};

export function startReaper(
  pool: DurableRunsPool,
  schema: string,
  queueName: string,
  options: ReaperOptions = {},
): Reaper {
  const silentMs = options.silentMs ?? DEFAULT_SILENT_MS;
  const everyMs = options.everyMs ?? Math.min(5_000, Math.max(100, silentMs / 4));
  const table = `${quoteIdentifier(schema)}.quiver_dbos_executors`;
  const me = DBOS.executorID;
  const version = DBOS.applicationVersion;
  const recovered: string[] = [];
  let ready: Promise<void> | undefined;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();

  const setUp = () =>
    (ready ??= pool
      .query(
        `CREATE TABLE IF NOT EXISTS ${table} (executor_id text PRIMARY KEY, application_version text NOT NULL, seen_at bigint NOT NULL)`,
      )
      .then(
        () => {},
        (error) => {
          ready = undefined;
          throw error;
        },
      ));

  async function pass(): Promise<void> {
    await setUp();
    await pool.query(
      `INSERT INTO ${table} (executor_id, application_version, seen_at) VALUES ($1, $2, ${NOW_MS})
       ON CONFLICT (executor_id) DO UPDATE SET application_version = EXCLUDED.application_version, seen_at = EXCLUDED.seen_at`,
      [me, version],
    );
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      // One reaper at a time across the cluster; the others skip this pass.
      const [lock] = (
        await client.query("SELECT pg_try_advisory_xact_lock(hashtext($1)) AS held", [
          `quiver.dbos.reaper:${schema}`,
        ])
      ).rows;
      if (!lock?.held) {
        await client.query("COMMIT");
        return;
      }
      const silent = (
        await client.query(
          `SELECT executor_id FROM ${table} WHERE executor_id <> $1 AND seen_at < ${NOW_MS} - $2`,
          [me, Math.ceil(silentMs)],
        )
      ).rows.map((row) => row.executor_id as string);
      for (const executorId of silent) {
        const pending = await DBOS.listWorkflows({
          status: "PENDING",
          executorId,
          workflowName: WORKFLOW_NAME,
          loadInput: false,
          loadOutput: false,
        });
        const ids = pending.map((workflow) => workflow.workflowID);
        // Back onto the runs queue (its session partition is kept), where any live worker takes it.
        if (ids.length) await DBOS.resumeWorkflows(ids, { queueName });
        recovered.push(...ids);
        // Forgotten until it heartbeats again: a restarted executor recovers nothing of these,
        // since they are no longer PENDING under its id.
        await client.query(`DELETE FROM ${table} WHERE executor_id = $1`, [executorId]);
      }
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  const tick = () => {
    running = running.catch(() => {}).then(pass);
    return running;
  };
  let timer: NodeJS.Timeout | undefined;
  const loop = () => {
    if (stopped) return;
    // A failed pass (the database restarting, say) is retried on the next one.
    tick()
      .catch(() => {})
      .finally(() => {
        if (!stopped) timer = setTimeout(loop, everyMs);
        timer?.unref?.();
      });
  };
  loop();
  return {
    recovered,
    tick,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running.catch(() => {});
    },
  };
}

/** The database's clock in epoch ms, so workers' clocks never decide who is silent. */
const NOW_MS = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
