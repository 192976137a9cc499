import { randomUUID } from "node:crypto";
import { DBOS, type DBOSClient } from "@dbos-inc/dbos-sdk";
import type * as Pg from "pg";
import { sleep } from "../abort.js";
import type { RunEvent } from "../contract/events.js";
import { UserError } from "../errors.js";
import type { Model } from "../model/types.js";
import { Agent } from "../run/config/agent.js";
import type { RunInput } from "../run/config/run-input.js";
import { assertRunInput } from "../run/config/run-input.js";
import type { RunOptions } from "../run/config/run-options.js";
import type { AgentsByName } from "../run/durability/recover.js";
import { undecidedIn } from "../run/durability/replay.js";
import { Runner } from "../run/runner.js";
import { failedForStore } from "../store/log-rules.js";
import { loadOptionalPackage } from "../store/optional-package.js";
import type { PostgresStore } from "../store/postgres-store.js";
import { LeaseConflict } from "../store/types.js";
import { questionCallIds } from "./ask-human.js";
import { type Listener, listen } from "./listen.js";
import type { DurableRunsPool } from "./pool.js";
import { type Reaper, type ReaperOptions, startReaper } from "./reaper.js";
import { type TailOptions, tailEvents } from "./tail.js";
import {
  ANSWER_TOPIC,
  type AnswerMessage,
  agentNamed,
  DECISION_TOPIC,
  type DecisionMessage,
  type DurableRunRequest,
  type DurableRunResult,
  registerRunWorkflow,
  WORKFLOW_NAME,
} from "./workflow.js";

/** The DBOS queue every durable run is enqueued on. */
export const QUEUE_NAME = "quiver-runs";

/** Flow control of the `quiver-runs` queue (DBOS queue parameters). */
export type RunQueueOptions = {
  /** Runs one worker process drives at once. */
  workerConcurrency?: number;
  /** Runs the whole cluster drives at once. */
  globalConcurrency?: number;
  /** At most `limitPerPeriod` runs start per `periodSec` seconds, cluster-wide (a provider's quota, say). */
  rateLimit?: { limitPerPeriod: number; periodSec: number };
  /**
   * Runs of one session driven at once, cluster-wide. Default 1: two runs of one chat never
   * interleave. A run without a session is its own partition.
   */
  partitionConcurrency?: number;
  /**
   * How often workers look for queued runs (DBOS's dispatch poll; default 1,000 ms). It bounds
   * throughput: a worker takes at most `workerConcurrency` runs per poll.
   */
  pollingIntervalMs?: number;
};

export type DurableRunsOptions = {
  /** Where runs are kept: the same PostgreSQL database DBOS uses is the usual choice. */
  store: PostgresStore;
  /**
   * The agents this process can drive, by name. Given on workers: it registers the
   * `quiver.run` workflow, so call `durableRuns` before `DBOS.launch()`. Omit it in a process
   * that only starts, follows, decides and cancels runs.
   */
  agents?: AgentsByName;
  /**
   * A `DBOSClient` for a process that does not launch DBOS (a web tier): starts, decisions,
   * cancels and results go through it. Without it they go through the launched `DBOS`.
   */
  client?: DBOSClient;
  /** The store's database (a postgres:// URL), for `events()` and the worker's heartbeats. Or pass `pool`. */
  databaseUrl?: string;
  /** A `pg.Pool` on the store's database, instead of `databaseUrl`; left open by `close()`. */
  pool?: DurableRunsPool;
  /** Flow control of the `quiver-runs` queue; applied by `startWorker()`. */
  queue?: RunQueueOptions;
  /**
   * Quiver's lease on a run while a worker drives it (default 10,000 ms): the time after which
   * a run whose worker machine vanished can be driven elsewhere. Shorter than Quiver's usual
   * 30 s because DBOS, not a person, notices the dead worker.
   */
  leaseMs?: number;
  /** How often a parked run's workflow looks for a decision or a cancel (default 1,000 ms). */
  decisionPollMs?: number;
  /** Run options for every run this worker drives (deps, budget, maxTurns, tracer, …). */
  runOptions?: Omit<RunOptions<any>, "store" | "runId" | "sessionId" | "signal" | "leaseTtlMs">;
};

/** A worker's part after `DBOS.launch()`: the queue it serves and its reaper. */
export type Worker = {
  /** Undefined when started with `reaper: false`. */
  reaper?: Reaper;
  stop(): Promise<void>;
};

/**
 * Runs driven by DBOS Transact across processes and machines, on the same PostgreSQL as a
 * `PostgresStore`. DBOS schedules (the `quiver-runs` queue, a partition per session),
 * recovers a dead worker's runs, waits durably for decisions and cancels; Quiver's event log
 * stays the record, so a recovered run never re-runs a completed call nor a started
 * non-idempotent one.
 *
 * @example
 * const store = new PostgresStore({ connectionString: url });
 * const runs = durableRuns({ store, agents: { support }, databaseUrl: url });
 * DBOS.setConfig({ name: "support", systemDatabaseUrl: url, executorID: "worker-1", applicationVersion: "2026-12-01" });
 * await DBOS.launch();
 * await runs.startWorker();
 * const runId = await runs.start("support", "Where is my order?", { sessionId: "chat-42" });
 * for await (const event of runs.events(runId)) console.log(event.type);
 */
export function durableRuns(options: DurableRunsOptions): DurableRuns {
  return new DurableRuns(options);
}

export class DurableRuns {
  readonly store: PostgresStore;
  readonly #options: DurableRunsOptions;
  readonly #client: DBOSClient | undefined;
  #pool: DurableRunsPool | undefined;
  readonly #ownsPool: boolean;

  constructor(options: DurableRunsOptions) {
    if (options === null || typeof options !== "object" || options.store === undefined) {
      throw new UserError("durableRuns needs { store } (a PostgresStore)");
    }
    const leaseMs = options.leaseMs ?? 10_000;
    const decisionPollMs = options.decisionPollMs ?? 1_000;
    for (const [name, value] of [
      ["leaseMs", leaseMs],
      ["decisionPollMs", decisionPollMs],
    ] as const) {
      if (!(Number.isFinite(value) && value > 0)) {
        throw new UserError(`durableRuns: ${name} must be a positive number of ms (got ${String(value)})`);
      }
    }
    this.store = options.store;
    this.#options = options;
    this.#client = options.client;
    this.#pool = options.pool;
    this.#ownsPool = options.pool === undefined;
    if (options.agents !== undefined) {
      registerRunWorkflow({
        store: options.store,
        agents: options.agents,
        leaseMs,
        decisionPollMs,
        runOptions: options.runOptions ?? {},
      });
    }
  }

  /**
   * After `DBOS.launch()` on a worker: registers the `quiver-runs` queue with its flow control
   * and starts the heartbeat and reaper, which moves the runs of a worker silent for longer
   * than `reaper.silentMs` (default 60 s) to live ones. A worker restarted with the same
   * executor id recovers its own runs at launch without it.
   *
   * @example
   * await DBOS.launch();
   * const worker = await runs.startWorker({ reaper: { silentMs: 60_000 } });
   * process.on("SIGTERM", () => worker.stop().then(() => DBOS.shutdown()));
   */
  async startWorker(options: { reaper?: ReaperOptions | false } = {}): Promise<Worker> {
    if (this.#options.agents === undefined) {
      throw new UserError(
        "startWorker needs durableRuns({ agents }): a worker must know the agents it drives",
      );
    }
    const queue = this.#options.queue ?? {};
    await DBOS.registerQueue(QUEUE_NAME, {
      partitionConcurrency: queue.partitionConcurrency ?? 1,
      ...(queue.workerConcurrency !== undefined && { workerConcurrency: queue.workerConcurrency }),
      ...(queue.globalConcurrency !== undefined && { globalConcurrency: queue.globalConcurrency }),
      ...(queue.rateLimit !== undefined && { rateLimit: queue.rateLimit }),
      ...(queue.pollingIntervalMs !== undefined && { minPollingIntervalMs: queue.pollingIntervalMs }),
      onConflict: "always_update",
    });
    const reaper =
      options.reaper === false
        ? undefined
        : startReaper(this.#database("startWorker"), this.store.schema, QUEUE_NAME, options.reaper);
    return {
      ...(reaper && { reaper }),
      stop: async () => {
        await reaper?.stop();
      },
    };
  }

  /**
   * Enqueues a run and returns its id at once; a worker drives it. Idempotent by `runId`:
   * starting an id that exists returns it and starts nothing. Runs of one `sessionId` run one
   * at a time, in order, across the cluster.
   *
   * @example
   * const runId = await runs.start("support", "Refund order A123", { runId: `refund-A123`, sessionId: "chat-42" });
   */
  async start(
    agent: string,
    input: RunInput,
    options: { runId?: string; sessionId?: string } = {},
  ): Promise<string> {
    if (typeof agent !== "string" || agent === "") throw new UserError("start needs the agent's name");
    assertRunInput(input, {});
    const runId = options.runId ?? `run_${randomUUID()}`;
    const request: DurableRunRequest = {
      agent,
      input,
      ...(options.sessionId !== undefined && { sessionId: options.sessionId }),
    };
    const enqueue = {
      queueName: QUEUE_NAME,
      workflowName: WORKFLOW_NAME,
      workflowID: runId,
      workflowIDReusePolicy: "return-existing" as const,
      queuePartitionKey: options.sessionId ?? runId,
    };
    if (this.#client) await this.#client.enqueue(enqueue, request);
    else await this.#launched("start").enqueueWorkflowWithOptions(enqueue, request);
    return runId;
  }

  /**
   * The run's events from its log, as they are stored, from any process; ends when the run
   * completes, fails or parks (call again with `afterSeq` after a decision), or when `signal`
   * aborts. New events arrive through `pg_notify`, not by polling.
   *
   * @example
   * for await (const event of runs.events(runId, { afterSeq: lastSeenSeq })) render(event);
   */
  events(runId: string, options: TailOptions = {}): AsyncIterable<RunEvent> {
    return tailEvents(this.store, this.#database("events"), runId, options);
  }

  /**
   * Decides an approval a parked run waits on; the run's workflow stores it and goes on when
   * every pending call is decided. A call that is not waiting is a `UserError`.
   *
   * @example
   * await runs.decide(runId, callId, { approved: false, reason: "over the limit" });
   */
  async decide(
    runId: string,
    callId: string,
    decision: boolean | { approved: boolean; reason?: string },
  ): Promise<void> {
    const { approved, reason } =
      typeof decision === "boolean" ? { approved: decision, reason: undefined } : decision;
    const events = await this.store.read(runId);
    if (!undecidedIn(events).includes(callId)) {
      throw new UserError(`run ${runId} has no call ${callId} waiting for approval`);
    }
    if (questionCallIds(events).has(callId)) {
      throw new UserError(
        `call ${callId} of run ${runId} asks a question (ask_human): answer it with answer(runId, callId, text)`,
      );
    }
    const message: DecisionMessage = { callId, approved, ...(reason !== undefined && { reason }) };
    // The key makes a repeated decide (a retried request) one message.
    const key = `${runId}:${callId}:decision`;
    if (this.#client) await this.#client.send(runId, message, DECISION_TOPIC, key);
    else await this.#launched("decide").send(runId, message, DECISION_TOPIC, key);
  }

  /**
   * Answers a question a parked run asked with `durableAskHuman` (its `ask_human` call); the
   * run's workflow stores it and the run goes on, on any worker, with `answer` as the call's
   * result. A call that is not a question waiting for its answer is a `UserError`.
   *
   * @example
   * for (const call of parked.pending) if (call.name === "ask_human") await runs.answer(runId, call.id, "Kyoto");
   */
  async answer(runId: string, callId: string, answer: string): Promise<void> {
    if (typeof answer !== "string") throw new UserError("answer needs the answer as a string");
    const events = await this.store.read(runId);
    if (!undecidedIn(events).includes(callId) || !questionCallIds(events).has(callId)) {
      throw new UserError(`run ${runId} has no question ${callId} waiting for an answer`);
    }
    const message: AnswerMessage = { callId, answer };
    // The key makes a repeated answer (a retried request) one message: the first answer stands.
    const key = `${runId}:${callId}:answer`;
    if (this.#client) await this.#client.send(runId, message, ANSWER_TOPIC, key);
    else await this.#launched("answer").send(runId, message, ANSWER_TOPIC, key);
  }

  /**
   * Cancels a run from any process: a running run ends as cancelled (`stopReason:
   * "cancelled"`) within about a second; a queued one never starts. A parked run (or one whose
   * worker died) is ended here, in the log, the way a cancelled resume ends it (its waiting calls
   * "did not run", then `run_completed` with `stopReason: "cancelled"`), so the store lists it
   * as DBOS does: finished.
   *
   * @example
   * await runs.cancel(runId);
   */
  async cancel(runId: string): Promise<void> {
    if (this.#client) await this.#client.cancelWorkflow(runId);
    else await this.#launched("cancel").cancelWorkflow(runId);
    await this.#endCancelled(runId);
  }

  /**
   * Waits for the run's workflow to end (at most `timeoutMs`, default 60 s) and returns how it
   * ended; a run that failed rejects with its error. A cancelled run resolves with
   * `stopReason: "cancelled"`.
   *
   * @example
   * const { stopReason, output } = await runs.result(runId, { timeoutMs: 120_000 });
   */
  async result(runId: string, options: { timeoutMs?: number } = {}): Promise<DurableRunResult> {
    const timeoutMs = options.timeoutMs ?? 60_000;
    if (!this.#client) this.#launched("result");
    const started = Date.now();
    const ended = await this.#ended(runId, timeoutMs);
    // A run that completed: its result came with its status. Otherwise DBOS hands over the
    // error, or the cancel, at once now that the workflow has ended.
    if (ended?.status === "SUCCESS" && ended.output !== undefined && ended.output !== null)
      return ended.output as DurableRunResult;
    const left = Math.max(1, timeoutMs - (Date.now() - started));
    let outcome: DurableRunResult | null;
    try {
      if (this.#client) {
        const waiting = this.#client
          .retrieveWorkflow<DurableRunResult>(runId)
          .getResult({ pollingIntervalMs: 250 });
        outcome = await withTimeout(waiting, left);
      } else {
        outcome = await this.#launched("result").getResult<DurableRunResult>(runId, {
          timeoutSeconds: left / 1_000,
          pollingIntervalMs: 250,
        });
      }
    } catch (error) {
      const status = this.#client
        ? (await this.#client.getWorkflow(runId))?.status
        : (await DBOS.getWorkflowStatus(runId))?.status;
      if (status === "CANCELLED") return this.#cancelledResult(runId, started + timeoutMs);
      throw error;
    }
    if (outcome === null) {
      throw new UserError(
        `run ${runId} did not finish within ${timeoutMs} ms (timeoutMs); it goes on, ask again later`,
      );
    }
    return outcome;
  }

  /** The runs `result()` waits for, and what to call with each one's status once its workflow has ended. */
  readonly #ending = new Map<string, Set<(ended: EndedWorkflow) => void>>();
  #watching = false;
  /** The store's notices while `result()` waits (see `#watchEnds`). */
  #notices: StopNotices | undefined;
  /** After `close()`: `result()` polls, and opens no connection of its own. */
  #closed = false;

  /**
   * Resolves once the run's workflow has ended (true), or after `timeoutMs` (false). Every run
   * waited for in this process is looked up in one query per RESULT_POLL_MS: with a poller per
   * run (DBOS's `getResult`), a web tier waiting on 200 runs sent 800 queries a second, about
   * as many transactions as the runs themselves.
   */
  #ended(runId: string, timeoutMs: number): Promise<EndedWorkflow | undefined> {
    return new Promise((resolve) => {
      let waiters = this.#ending.get(runId);
      if (waiters === undefined) {
        waiters = new Set();
        this.#ending.set(runId, waiters);
      }
      const wake = (ended: EndedWorkflow) => {
        clearTimeout(timer);
        resolve(ended);
      };
      const timer = setTimeout(() => {
        waiters.delete(wake);
        if (waiters.size === 0 && this.#ending.get(runId) === waiters) this.#ending.delete(runId);
        resolve(undefined);
      }, timeoutMs);
      waiters.add(wake);
      if (!this.#watching) void this.#watchEnds();
    });
  }

  /**
   * With the store's database at hand, the store's notices say when a waited run's log ends
   * (completed or failed); its workflow ends a few statements later, so that run alone is looked
   * up soon, then twice as late each time. Every waited run is still looked up once per
   * RESULT_POLL_MS, which is all there is without the database.
   */
  async #watchEnds(): Promise<void> {
    this.#watching = true;
    const stopping = new Map<string, { due: number; delay: number }>();
    const notices = await this.#stopNotices(stopping);
    this.#notices = notices;
    try {
      let lastFull = 0;
      while (this.#ending.size > 0) {
        const now = Date.now();
        const full = now - lastFull >= RESULT_POLL_MS;
        if (full) lastFull = now;
        const due = [...stopping].filter(([, at]) => at.due <= now).map(([id]) => id);
        const ids = full ? [...this.#ending.keys()] : due;
        if (ids.length > 0) for (const id of this.#wake(await this.#endedAmong(ids))) stopping.delete(id);
        for (const id of due) {
          const at = stopping.get(id);
          if (at === undefined) continue;
          at.delay *= 2;
          at.due = Date.now() + at.delay;
          // Past that, the regular round looks for it.
          if (at.delay >= RESULT_POLL_MS || !this.#ending.has(id)) stopping.delete(id);
        }
        if (this.#ending.size === 0) break;
        let nextAt = lastFull + RESULT_POLL_MS;
        for (const at of stopping.values()) nextAt = Math.min(nextAt, at.due);
        const wait = Math.max(0, nextAt - Date.now());
        await (notices ? notices.next(wait) : sleep(wait));
      }
    } finally {
      notices?.close();
      this.#notices = undefined;
      this.#watching = false;
    }
  }

  /** The workflows among `ids` that have ended, with their status (none when the database did not answer). */
  async #endedAmong(ids: string[]): Promise<Array<EndedWorkflow & { workflowID: string }>> {
    const query = { workflowIDs: ids, loadInput: false, loadOutput: true };
    try {
      const statuses = this.#client
        ? await this.#client.listWorkflows(query)
        : await DBOS.listWorkflows(query);
      return statuses.filter((workflow) => ENDED.has(workflow.status));
    } catch {
      // The next round asks again (each wait has its timeout).
      return [];
    }
  }

  /** Settles the waits of these ended workflows; returns their ids. */
  #wake(ended: Array<EndedWorkflow & { workflowID: string }>): string[] {
    for (const workflow of ended) {
      const waiters = this.#ending.get(workflow.workflowID);
      this.#ending.delete(workflow.workflowID);
      for (const wake of waiters ?? []) wake(workflow);
    }
    return ended.map((workflow) => workflow.workflowID);
  }

  /**
   * Listens on the store's events channel while `result()` waits: a waited run whose log ends
   * goes into `stopping`, due SOON_MS later, and `next(ms)` resolves then (or after `ms`).
   * Undefined without the store's database (`databaseUrl` or `pool`) or when listening failed:
   * polling alone then.
   */
  async #stopNotices(
    stopping: Map<string, { due: number; delay: number }>,
  ): Promise<StopNotices | undefined> {
    if (this.#closed || (this.#pool === undefined && this.#options.databaseUrl === undefined))
      return undefined;
    let wake: (() => void) | undefined;
    // A notice that came while the watcher was not waiting (it was looking runs up).
    let noticed = false;
    const onPayload = (payload: string) => {
      try {
        const { runId, status } = JSON.parse(payload) as { runId: string; status?: string };
        // A parked run's workflow waits for its decisions: only an ended log ends it.
        if ((status !== "completed" && status !== "failed") || !this.#ending.has(runId)) return;
        if (!stopping.has(runId)) stopping.set(runId, { due: Date.now() + SOON_MS, delay: SOON_MS });
        if (wake) wake();
        else noticed = true;
      } catch {}
    };
    let listener: Listener;
    try {
      listener = await listen(this.#database("result"), this.store.eventsChannel, onPayload);
    } catch {
      return undefined;
    }
    return {
      next: (ms) =>
        new Promise<void>((resolve) => {
          if (noticed) {
            noticed = false;
            resolve();
            return;
          }
          const done = () => {
            clearTimeout(timer);
            wake = undefined;
            resolve();
          };
          const timer = setTimeout(done, ms);
          wake = done;
        }),
      // At close() the connection just goes: the pool is ending.
      close: () => void listener.close(this.#closed),
    };
  }

  /** Closes the pool made from `databaseUrl` (the store and a DBOS client stay open: they are yours). */
  async close(): Promise<void> {
    // A wait for a result goes on by polling: its listening connection must not hold the pool open.
    this.#closed = true;
    this.#notices?.close();
    const pool = this.#pool;
    if (pool && this.#ownsPool) {
      this.#pool = undefined;
      await pool.end();
    }
  }

  /**
   * After the workflow is cancelled nothing drives the run again, so a run no live process
   * holds (parked, or its worker died) would stay unfinished in the log. It is resumed once,
   * already cancelled, for the normal ending. A run a worker still holds is ended by that
   * worker: its cancel signal fires (its step's, or `watchCancel`'s).
   */
  async #endCancelled(runId: string): Promise<void> {
    const summary = await this.store.getRun(runId);
    if (summary === undefined || summary.parentRunId !== undefined) return;
    // A run its store stopped (failed, store_unavailable) is unfinished too: end it as well.
    const unheld =
      (summary.status === "running" || failedForStore(summary)) && summary.leaseOwner === undefined;
    if (summary.status !== "parked" && !unheld) return;
    const events = await this.store.read(runId);
    const speaker = events.findLast((event) => event.agent !== "")?.agent ?? summary.agent;
    const stop = new AbortController();
    stop.abort(new Error("the run was cancelled"));
    const handle = Runner.resume(this.#agentFor(summary.agent, speaker), runId, {
      store: this.store,
      signal: stop.signal,
    });
    try {
      for await (const _ of handle) {
      }
      await handle.result();
    } catch (error) {
      // A worker took the run meanwhile: it holds the cancel signal and ends it itself.
      if (!(error instanceof LeaseConflict)) throw error;
    }
  }

  /**
   * The agent to resume a run with: this process's own when it has it, else a stand-in of the
   * same name that has no tools and whose model is never called (an already-cancelled resume
   * runs no turn and no tool; it only ends the run).
   */
  #agentFor(name: string, speaker: string): Agent<any, any> {
    const agents = this.#options.agents;
    if (agents !== undefined) {
      try {
        return agentNamed(agents, name);
      } catch {}
    }
    return new Agent({ name: speaker, model: NO_MODEL });
  }

  /**
   * How a cancelled run ended, once its log says so. DBOS marks the workflow cancelled at once;
   * the run ends when its worker notices (its step's cancel signal, within about a second), or,
   * with no live worker, when `cancel()` or this ends it once the dead worker's lease is gone.
   * Until `deadline` the store's record is awaited, so the caller never hears of an end the log
   * does not hold; past it the answer is DBOS's.
   */
  async #cancelledResult(runId: string, deadline: number): Promise<DurableRunResult> {
    let ended = false;
    for (let pause = 20; ; pause = Math.min(pause * 2, 500)) {
      const summary = await this.store.getRun(runId);
      if (summary === undefined) break;
      if (summary.status === "completed") {
        const end = (await this.store.read(runId, summary.lastSeq - 1)).at(-1);
        if (end?.type === "run_completed")
          return { runId, stopReason: end.stopReason, output: end.output ?? null };
        break;
      }
      if (summary.status === "failed" && !failedForStore(summary)) break;
      if (!ended && summary.leaseOwner === undefined) {
        // Nobody holds it (parked, or its worker died and the lease ran out): end it here.
        ended = true;
        await this.#endCancelled(runId).catch(() => {});
        continue;
      }
      const left = deadline - Date.now();
      if (left <= 0) break;
      await sleep(Math.min(pause, left));
    }
    return { runId, stopReason: "cancelled", output: null };
  }

  #launched(action: string): typeof DBOS {
    if (!DBOS.isInitialized()) {
      throw new UserError(
        `${action} needs DBOS launched in this process (DBOS.launch()), or durableRuns({ client })`,
      );
    }
    return DBOS;
  }

  #database(action: string): DurableRunsPool {
    if (this.#pool) return this.#pool;
    if (this.#options.databaseUrl === undefined) {
      throw new UserError(
        `${action} needs durableRuns({ databaseUrl }) or ({ pool }): the store's PostgreSQL database`,
      );
    }
    const pg = loadOptionalPackage<typeof Pg>("pg", "durableRuns", "npm install pg@8");
    const pool = new pg.Pool({ connectionString: this.#options.databaseUrl, max: 4, keepAlive: true });
    // An idle connection the server drops must not crash the process; the next query reports it.
    pool.on("error", () => {});
    this.#pool = pool;
    return pool;
  }
}

/** How often `result()` looks for the end of the runs it waits for (all of them in one query). */
const RESULT_POLL_MS = 100;
/** After a waited run's log stopped, its workflow is looked up this soon, then twice as late each time. */
const SOON_MS = 4;

/** The store's notices of runs that stopped, while `result()` waits (see `#stopNotices`). */
type StopNotices = { next(ms: number): Promise<void>; close(): void };

/** What `result()` learns of a workflow that ended: its status, and its output if it succeeded. */
type EndedWorkflow = { status: string; output?: unknown };

/** The workflow statuses of a run that will not go on by itself. */
const ENDED = new Set(["SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"]);

/** The model of a stand-in agent: never called, since the run it resumes is already cancelled. */
const NO_MODEL: Model = {
  name: "none",
  stream() {
    throw new UserError("a cancelled run resumed only to end it called its model");
  },
};

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(null), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
