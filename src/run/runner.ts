import type { RunEvent, RunFailedKind } from "../contract/events.js";
import { ProviderError, UserError } from "../errors.js";
import { leaseOwner } from "../store/lease-owner.js";
import { STORE_UNAVAILABLE } from "../store/log-rules.js";
import { type Lease, LeaseConflict, type RunStore, type RunSummary, StoreError } from "../store/types.js";
import { asError } from "../thrown.js";
import { runChild } from "./child-run.js";
import type { Agent } from "./config/agent.js";
import { GuardrailTripped } from "./config/guardrail.js";
import { assertRunInput, inputMessages, isTranscript, type RunInput } from "./config/run-input.js";
import type { RunOptions } from "./config/run-options.js";
import { acquireBriefly } from "./durability/brief-lease.js";
import { closeStoredRun } from "./durability/close-run.js";
import { EventWriter } from "./durability/event-writer.js";
import { type AgentsByName, recoverableRuns } from "./durability/recover.js";
import {
  loadRun,
  resumeLoop,
  resumesAfterFailure,
  sessionEnds,
  sessionHistory,
  sessionOwner,
  storedResult,
} from "./durability/resume.js";
import { runLoop } from "./engine/loop.js";
import { RunHandle } from "./handle.js";
import { keepRunShapes } from "./shapes.js";
import { ActiveRun } from "./state/active-run.js";
import { EventQueue } from "./state/event-queue.js";
import type { LeaseWait } from "./state/event-sink.js";
import type { RunResult } from "./state/result.js";
import { openTracing } from "./tracing/run-tracing.js";

/**
 * Starts runs. `stream()` returns a handle at once; `run()` is `stream()` drained.
 *
 * @example
 * const result = await Runner.run(agent, "What is 2 + 2?", { deps: { db } });
 * console.log(result.output, result.stopReason);
 */
export const Runner = {
  /**
   * Runs an agent to the end and returns its result. Rejects on `UserError`, on a
   * `ProviderError` after retries, or an internal fault; every other stop resolves.
   * Nobody can answer an approval here: calls that would ask are denied unless the agent's
   * `approvalHandler` decides them (or, with a store, the run parks until `Runner.decide`).
   */
  run<Deps, Output>(
    agent: Agent<Deps, Output>,
    input: RunInput,
    ...rest: RunArgs<Deps>
  ): Promise<RunResult<Output>> {
    const options: RunOptions<Deps> = rest[0] ?? {};
    // Not an async function: the run's own promise is returned as it is (no wrapper, no extra
    // ticks); what would throw here rejects it instead, as from an async function.
    try {
      assertRunInput(input, options);
      return start(agent, options, false, (run) => fresh(run, input)).result;
    } catch (error) {
      return Promise.reject(error);
    }
  },

  /**
   * Starts a run and returns its handle before any event is emitted; the run begins on the
   * next tick and the handle buffers events until they are read.
   */
  stream<Deps, Output>(
    agent: Agent<Deps, Output>,
    input: RunInput,
    ...rest: RunArgs<Deps>
  ): RunHandle<Output> {
    const options: RunOptions<Deps> = rest[0] ?? {};
    assertRunInput(input, options);
    return handleOf(start(agent, options, true, (run) => fresh(run, input)));
  },

  /**
   * Continues a stored run — after a crash, a restart, a store outage, or an approval decided
   * with `Runner.decide` — from its event log. The handle emits only new events (seq
   * continues). A run that had already finished resolves with its stored result and emits
   * nothing. A run whose process died on this machine is taken over at once; while another
   * live process drives it, the handle rejects with `LeaseConflict`, or first waits up to
   * `waitForLeaseMs` for that process to finish or die.
   *
   * @example
   * const handle = Runner.resume(agent, runId, { store, waitForLeaseMs: 30_000 });
   * const result = await handle.result();
   */
  resume<Deps, Output>(
    agent: Agent<Deps, Output>,
    runId: string,
    options: ResumeOptions<Deps> & DepsRequired<Deps>,
  ): RunHandle<Output> {
    if (!options.store) throw new UserError("Runner.resume needs the run's { store }");
    const { waitForLeaseMs, ...runOptions } = options;
    if (waitForLeaseMs !== undefined && !(Number.isFinite(waitForLeaseMs) && waitForLeaseMs >= 0)) {
      throw new UserError(
        `Runner.resume: waitForLeaseMs must be a number of ms of at least 0 (got ${String(waitForLeaseMs)})`,
      );
    }
    // A run the store does not hold yet is not resumed, and its lease is not touched: taking it
    // would refuse the process that is about to start that very run.
    const lease: DriveLease = {
      waitMs: waitForLeaseMs ?? 0,
      mustExist: async (run) => {
        const summary = await patiently(run, `reading run ${runId}`, () => options.store.getRun(runId));
        if (summary === undefined) throw new UserError(`the store has no run ${runId}`);
        const unfinished = summary.status !== "completed" && summary.status !== "failed";
        if (
          summary.sessionId !== undefined &&
          !summary.parentRunId &&
          (unfinished || summary.failureKind === STORE_UNAVAILABLE)
        )
          await holdSession(run, summary.sessionId);
      },
    };
    const started = start(
      agent,
      { ...runOptions, runId },
      true,
      (run) => resumeStored(run, options.store, agent),
      lease,
    );
    return handleOf(started);
  },

  /**
   * For a supervisor restarting a process: resumes every stored run that is unfinished and not
   * being driven — its process died (on this machine, or its lease expired), or its store
   * failed for a while — plus parked runs whose every pending approval has been decided.
   * Runs of agents missing from `agents` and child runs (driven by their parent) are left
   * alone. Returns the handles of the runs it resumed; a run another process takes first
   * rejects with `LeaseConflict`.
   *
   * @example
   * const handles = await Runner.recover(store, { billing, support });
   * await Promise.allSettled(handles.map((h) => h.result()));
   */
  async recover(
    store: RunStore,
    agents: AgentsByName,
    options: Omit<ResumeOptions<any>, "store"> = {},
  ): Promise<RunHandle<any>[]> {
    if (!store) throw new UserError("Runner.recover needs a store");
    const found = await recoverableRuns(store, agents);
    return found.map(({ runId, agent }) => Runner.resume(agent, runId, { ...options, store }));
  },

  /**
   * Stores an approval decision for a parked run, from any process. Then `Runner.resume`
   * continues the run with it. A call that is not waiting for approval is a `UserError`.
   *
   * @example
   * await Runner.decide(store, runId, callId, { approved: false, reason: "over the limit" });
   */
  async decide(
    store: RunStore,
    runId: string,
    callId: string,
    decision: boolean | { approved: boolean; reason?: string },
  ): Promise<void> {
    const { approved, reason } =
      typeof decision === "boolean" ? { approved: decision, reason: undefined } : decision;
    const lease = await acquireBriefly(store, runId);
    try {
      const state = await loadRun(store, runId);
      const open = state.openTurn;
      const call = open?.calls.find((c) => c.id === callId);
      if (
        !open ||
        !call ||
        !open.asked.has(callId) ||
        open.decisions.has(callId) ||
        open.completed.has(callId)
      ) {
        throw new UserError(`run ${runId} has no call ${callId} waiting for approval`);
      }
      const event = {
        type: "approval_resolved",
        call,
        decision: approved ? "approved" : "denied",
        by: "decide",
        ...(reason !== undefined && { reason }),
        runId,
        seq: state.lastSeq + 1,
        at: Date.now(),
        agent: state.agent ?? "",
      } as RunEvent;
      await store.append(lease, [event]);
    } finally {
      await store.releaseLease(lease).catch(() => {});
    }
  },
};

/**
 * `deps` required, when the agent says its tools need them (`new Agent<Deps>`, with a `Deps`
 * that does not admit `undefined`): a run without them would fail in the first tool that reads
 * `ctx.deps`, so it does not compile.
 */
export type DepsRequired<Deps> = undefined extends Deps ? unknown : { deps: Deps };

/**
 * `Runner.run`'s and `Runner.stream`'s options after the input: optional, or required (with
 * `deps`) when the agent's `Deps` needs them.
 *
 * @example
 * const shop = new Agent<{ db: Db }>({ name: "shop", tools: [myOrders] });
 * await Runner.run(shop, "my orders?", { deps: { db } }); // without deps: a compile error
 */
export type RunArgs<Deps> = undefined extends Deps
  ? [options?: RunOptions<Deps>]
  : [options: RunOptions<Deps> & DepsRequired<Deps>];

/** What `Runner.resume` accepts: run options with the run's store, and how long to wait for its lease. */
export type ResumeOptions<Deps = unknown> = RunOptions<Deps> & {
  store: RunStore;
  /** How long to wait while another live process holds the run's lease. Default 0: `LeaseConflict` at once. */
  waitForLeaseMs?: number;
};

/**
 * How long a stopped (cancelled or failed) stored run may take to store its last events before
 * its handle settles anyway: a store that stopped answering must not keep `result()` pending.
 */
export const STORE_GRACE_MS = 2_000;

/** What a run does once it holds its lease (`lease` is the one taken, with a store). */
type Body = (run: ActiveRun, lease?: Lease) => Promise<RunResult<any> | { finished: RunResult<any> }>;

/** Continues the stored run `run.runId`, or settles with its stored result when it had finished. */
async function resumeStored(
  run: ActiveRun,
  store: RunStore,
  agent: Agent<any, any>,
): Promise<RunResult<any> | { finished: RunResult<any> }> {
  const state = await patiently(run, `reading run ${run.runId}`, () => loadRun(store, run.runId));
  if (state.status !== "running" && !resumesAfterFailure(state))
    return { finished: storedResult(state, agent) };
  return resumeLoop(run, state);
}

/**
 * Starts the run `options.runId`, or resumes it when the store holds it already: the driver of
 * a job that may be delivered again (a DBOS workflow recovered on another worker). Whether the
 * run is stored comes with its lease, so a first delivery costs no extra round trip.
 *
 * @example
 * const handle = startOrResume(agent, "Refund order A123", { store, runId: "refund-A123" });
 */
export function startOrResume<Deps, Output>(
  agent: Agent<Deps, Output>,
  input: RunInput,
  options: ResumeOptions<Deps> & { runId: string },
): RunHandle<Output> {
  const { waitForLeaseMs, ...runOptions } = options;
  assertRunInput(input, runOptions);
  const { store, runId } = options;
  const started = start(
    agent,
    runOptions,
    true,
    async (run, lease) => {
      const stored =
        lease?.stored ??
        (await patiently(run, `reading run ${runId}`, () => store.getRun(runId))) !== undefined;
      return stored ? resumeStored(run, store, agent) : fresh(run, input);
    },
    { waitMs: waitForLeaseMs ?? 0 },
  );
  return handleOf(started);
}

/** A fresh run: with a store and a known session, its conversation continues from the store. */
function fresh(run: ActiveRun, input: RunInput): Promise<RunResult<any>> {
  const { store, sessionId } = run.options;
  if (!store || sessionId === undefined || run.parent) return runLoop(run, input);
  if (!isTranscript(input)) return continueSession(run, store, sessionId, input);
  return givenTranscript(run, store, sessionId, input);
}

/**
 * A whole transcript as input is used as given, not appended to the session's history — but
 * the run is still stored in the session, so it must be its owner's like any other.
 */
async function givenTranscript(
  run: ActiveRun,
  store: RunStore,
  sessionId: string,
  input: RunInput,
): Promise<RunResult<any>> {
  const { started, userId } = await patiently(run, `reading session ${sessionId}`, () =>
    sessionOwner(store, sessionId),
  );
  if (started) assertSessionUser(run, sessionId, userId);
  return runLoop(run, input);
}

/** One user's conversation never reaches another user's run (nor one started without a user). */
function assertSessionUser(run: ActiveRun, sessionId: string, owner: string | undefined): void {
  if (owner !== run.userId)
    throw new UserError(
      `session ${sessionId} belongs to another user: a run may continue only a session its userId started`,
    );
}

/**
 * A session continues from its latest run, so two runs of one session at once would each add to
 * the conversation they read, and the next run would go on from one of them: the other's
 * exchange would be lost to the model. A session's run holds the session's lease (beside its
 * own, renewed with it) while it runs; another run of the session meanwhile is a `UserError`.
 */
async function continueSession(
  run: ActiveRun,
  store: RunStore,
  sessionId: string,
  input: RunInput,
): Promise<RunResult<any>> {
  const key = sessionLeaseKey(sessionId);
  await takeSession(run, store, sessionId, key);
  // Given back with the run's own lease, just before it (see `releaseLeases`).
  sessionLeases.set(run, key);
  // One owner for every attempt: a close the store failed half-way leaves a lease of that owner.
  const owner = leaseOwner();
  const runs = await patiently(run, `closing the abandoned run of session ${sessionId}`, () =>
    closeAbandoned(store, sessionId, run.runId, owner),
  );
  return continueFromHistory(run, store, sessionId, input, runs);
}

/** How long a new run of a session waits for the run that just ended to give the session back. */
const SESSION_HANDOVER_MS = 3_000;

/**
 * Takes the session's lease. A run's end is stored a round trip before its driver gives the
 * session back: a process that saw the end in the store (another server tailing the run, a
 * worker) and starts the next message at once would find the session held. When the holder
 * drives a run of the session that has ended, the new run waits a moment for it to let go; any
 * other holder (a run in progress, one starting) refuses it at once.
 */
async function takeSession(run: ActiveRun, store: RunStore, sessionId: string, key: string): Promise<void> {
  const sink = run.events.sink!;
  const signal = run.control.signal;
  try {
    await sink.acquire(key, { signal });
    return;
  } catch (error) {
    if (!(error instanceof LeaseConflict)) throw error;
    const runs = await store.listRuns({ sessionId }).catch(() => undefined);
    const holding = holdingRun(runs, error.owner);
    if (!holding || !lettingGo(holding)) throw await sessionHeld(store, sessionId, error, runs);
  }
  try {
    await sink.acquire(key, { waitMs: SESSION_HANDOVER_MS, signal });
  } catch (error) {
    if (!(error instanceof LeaseConflict)) throw error;
    throw await sessionHeld(store, sessionId, error);
  }
}

/** The session's latest run whose own lease `owner` holds: the run its session's holder drives. */
function holdingRun(runs: readonly RunSummary[] | undefined, owner: string): RunSummary | undefined {
  return runs?.findLast((r) => !r.parentRunId && r.leaseOwner === owner);
}

/** A held run that has ended (not one its store stopped): its driver is giving its leases back. */
function lettingGo(run: RunSummary): boolean {
  return run.status !== "running" && run.failureKind !== STORE_UNAVAILABLE;
}

/**
 * Why the session's lease is held by another driver, as far as the store tells: a run of the
 * session it holds as running, or — when none is — a run starting, or one that stopped (its
 * store failed under it) whose process has not given the session back yet. The last is not "a
 * run in progress": it lets go once its store answers again, and at the lease's expiry anyway.
 */
async function sessionHeld(
  store: RunStore,
  sessionId: string,
  conflict: LeaseConflict,
  listed?: readonly RunSummary[],
): Promise<UserError> {
  const held = `lease owner ${conflict.owner}, until ${new Date(conflict.expiresAt).toISOString()} unless renewed`;
  const runs = listed ?? (await store.listRuns({ sessionId }).catch(() => undefined));
  const holding = holdingRun(runs, conflict.owner);
  if (holding?.status === "running")
    return new UserError(
      `session ${sessionId} has a run in progress as far as the store knows (${holding.runId}, ${held}): ` +
        "wait for it to end (or steer it with inject()) before starting another; a run stopped by its store " +
        "is given back by its process once the store answers (and the hold lapses at its expiry in any case)",
    );
  if (holding && lettingGo(holding))
    return new UserError(
      `session ${sessionId} is still held by the driver of its run ${holding.runId}, which has ended (${held}) ` +
        `and did not give the session back within ${SESSION_HANDOVER_MS} ms: its process may have stopped ` +
        "before it could; the hold lapses at its expiry",
    );
  const state = runs === undefined ? "" : " with no run in progress in the store";
  return new UserError(
    `session ${sessionId} is held by another driver (${held})${state}: a run starting, or one that stopped ` +
      "without giving the session back yet (its store failed under it; it does once the store answers); wait for it to let go",
  );
}

/**
 * The session's latest run, unfinished although nobody holds its session (its process died, or
 * its store stopped it), is closed before the session goes on: resumed later (`Runner.recover`),
 * it would run on beside the new run and add to a conversation that had moved past it. Its calls
 * without a result get one (`interrupted` if they had started), which the new run's model reads;
 * its sub-agents' runs, left unfinished with it, are closed too. A parked run stays parked: it
 * does not hold its session, and its approval can still be decided.
 */
async function closeAbandoned(
  store: RunStore,
  sessionId: string,
  runId: string,
  owner: string,
): Promise<readonly RunSummary[] | undefined> {
  // Its ends only (the first run names the session's owner): a chat of thousands of runs must
  // not list them all for each message.
  const runs = await store.listRuns(sessionEnds(sessionId));
  const latest = runs.findLast((r) => !r.parentRunId && r.runId !== runId);
  // Nothing closed: the listing is still the session's, and its history is read from it.
  if (!latest || !(latest.status === "running" || latest.failureKind === STORE_UNAVAILABLE)) return runs;
  const why = "its process stopped, and a new message in its session went on without it";
  try {
    for (const child of await store.listRuns({ sessionId })) {
      if (child.parentRunId === latest.runId && child.status === "running")
        await closeStoredRun(store, child.runId, why, owner);
    }
    await closeStoredRun(store, latest.runId, why, owner);
    return undefined;
  } catch (error) {
    if (!(error instanceof LeaseConflict)) throw error;
    throw new UserError(
      `session ${sessionId} has a run in progress (${latest.runId}, held by lease owner ${error.owner} until ${new Date(error.expiresAt).toISOString()} unless renewed: ` +
        "being resumed elsewhere, or stopped there without giving it back): wait for it to end before starting another",
    );
  }
}

/**
 * A resumed run of a session holds its session as a fresh one does: a new run of the session
 * meanwhile would fork the conversation, and one already running refuses this resume.
 */
async function holdSession(run: ActiveRun, sessionId: string): Promise<void> {
  const key = sessionLeaseKey(sessionId);
  try {
    await run.events.sink!.acquire(key, { signal: run.control.signal });
  } catch (error) {
    if (!(error instanceof LeaseConflict)) throw error;
    throw new UserError(
      `session ${sessionId} has another run in progress: run ${run.runId} can be resumed once it ends`,
    );
  }
  sessionLeases.set(run, key);
}

/** The session lease a run holds, given back when its own is. */
const sessionLeases = new WeakMap<ActiveRun, string>();

/**
 * Gives back the run's lease, and first its session's when it holds one: while the session is
 * held, the run's own lease still names its driver, so a process that finds the session held
 * can tell a run that has just ended (and is letting go) from one starting (see `takeSession`).
 */
async function releaseLeases(run: ActiveRun): Promise<void> {
  const sink = run.events.sink!;
  const session = sessionLeases.get(run);
  if (session !== undefined) {
    sessionLeases.delete(run);
    await sink.release(session);
  }
  await sink.release(run.runId);
}

/** The key of a session's lease in the store's leases (beside the runs' own). */
function sessionLeaseKey(sessionId: string): string {
  return `quiver.session:${sessionId}`;
}

async function continueFromHistory(
  run: ActiveRun,
  store: RunStore,
  sessionId: string,
  input: RunInput,
  runs?: readonly RunSummary[],
): Promise<RunResult<any>> {
  const {
    messages: history,
    started,
    userId,
    state,
  } = await patiently(run, `reading session ${sessionId}`, () => sessionHistory(store, sessionId, runs));
  if (!started) return runLoop(run, input);
  assertSessionUser(run, sessionId, userId);
  // The session's state goes on too, unless the caller gave the run one.
  if (state !== undefined && run.options.state === undefined) run.state.restore(state);
  if (!history.length) return runLoop(run, input);
  return runLoop(run, [...history, ...inputMessages(input)], history.length);
}

/**
 * `attempt` — a store operation of the run's start, before anything of the run is stored —
 * waited for through a store that fails for a while, as the run's appends are (`storeWaitMs`).
 */
function patiently<T>(run: ActiveRun, what: string, attempt: () => Promise<T>): Promise<T> {
  return run.events.sink!.whileStoreFails(what, attempt, run.control.signal);
}

/** A started run: its state, its event buffer and its outcome. */
type Started<Output> = { run: ActiveRun; queue: EventQueue; result: Promise<RunResult<Output>> };

function handleOf<Output>({ run, queue, result }: Started<Output>): RunHandle<Output> {
  return new RunHandle<Output>(run, queue, result);
}

function start<Deps, Output>(
  agent: Agent<Deps, Output>,
  options: RunOptions<Deps>,
  hasChannel: boolean,
  body: Body,
  lease: DriveLease = {},
): Started<Output> {
  keepRunShapes();
  const queue = new EventQueue();
  // Runner.run() has no reader: its events go to the store (if any), never to a buffer.
  if (!hasChannel) queue.detach();
  // The writer stops the run when its store fails; the run exists by the time it writes.
  let run: ActiveRun | undefined;
  const sink = options.store
    ? new EventWriter(
        queue,
        options.store,
        (error) => run?.control.abort(error),
        options.leaseTtlMs,
        options.storeWaitMs,
      )
    : undefined;
  run = new ActiveRun(agent, options, { queue, sink, trace: openTracing, childRuns: runChild });
  run.control.hasChannel = hasChannel;
  const result = new Promise<RunResult<Output>>((resolve, reject) => {
    let settled = false;
    let grace: NodeJS.Timeout | undefined;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(grace);
      // Its maxDurationMs timer keeps the process alive while the run is under way, not after.
      run.limits.clearDeadline();
      outcome();
    };
    const fail = (failure: Error) =>
      settle(() => {
        queue.end(failure, true);
        reject(failure);
      });
    if (run.events.store) {
      // Once the run stops, its last events get STORE_GRACE_MS to be stored; a store that does
      // not answer by then no longer holds the handle (the run goes on settling behind it).
      // Only the store: a run held up by anything else is checked again later.
      const onStop = () => {
        grace = setTimeout(function check() {
          if (run.events.sink!.waitingOnStore) fail(storeStalled(run));
          else grace = setTimeout(check, STORE_GRACE_MS / 4).unref();
        }, STORE_GRACE_MS);
        grace.unref?.();
      };
      if (run.control.signal.aborted) onStop();
      else run.control.signal.addEventListener("abort", onStop, { once: true });
    }
    // The run starts once the caller's synchronous code is done (it can still attach to the
    // handle or cancel first), without waiting a whole event-loop turn as setImmediate would.
    queueMicrotask(() => {
      // Only a stored run waits for a lease (and so needs the run's signal).
      drive(run, body, run.events.store ? { ...lease, signal: run.control.signal } : lease).then(
        (value) =>
          settle(() => {
            queue.end();
            resolve(value as RunResult<Output>);
          }),
        fail,
      );
    });
  });
  return { run, queue, result };
}

/** The error a stopped run's handle settles with when its store did not take its last events in time. */
function storeStalled(run: ActiveRun): Error {
  const reason = run.control.stopper.reason;
  if (reason instanceof StoreError) return reason;
  const why = reason instanceof Error ? reason.message : "it was stopped";
  return new StoreError(
    `run ${run.runId} stopped (${why}), but its store did not confirm the last events within ${STORE_GRACE_MS} ms; ` +
      "the stored log ends where the store stopped answering, and the run stays unfinished there until resumed",
    { runId: run.runId, retryable: true },
  );
}

/** Holds the run's lease (with a store) while the body runs; a failure becomes `run_failed`. */
/** How a run waits for its lease, and (for a resume) what must hold before it takes one. */
/** `mustExist` runs before the run's own lease is taken (a refusal there stores nothing). */
type DriveLease = LeaseWait & { mustExist?: (run: ActiveRun) => Promise<void> };

function drive(run: ActiveRun, body: Body, lease: DriveLease): Promise<RunResult<any>> {
  if (run.events.store) return driveLeased(run, body, lease);
  // No store, no lease: one reaction instead of an async frame around the body.
  let running: ReturnType<Body>;
  try {
    running = body(run);
  } catch (error) {
    running = Promise.reject(error);
  }
  return running.then(unwrap, (error) => {
    throw runFailed(run, error);
  });
}

async function driveLeased(run: ActiveRun, body: Body, lease: DriveLease): Promise<RunResult<any>> {
  const sink = run.events.sink!;
  let leased = false;
  try {
    if (lease.mustExist) await lease.mustExist(run);
    // A cancel ends a wait for the lease (a store that fails for a while, another holder).
    const taken = await sink.acquire(run.runId, { ...lease, signal: lease.signal ?? run.control.signal });
    leased = true;
    const outcome = unwrap(await body(run, taken));
    leased = false;
    await releaseLeases(run);
    // The caller hears how the run ended only once the store holds that end: a store that
    // failed meanwhile fails the run (resumable from what it holds), whatever the loop concluded.
    if (sink.failure) throw sink.failure;
    return outcome;
  } catch (error) {
    throw runFailed(run, error);
  } finally {
    if (leased) await releaseLeases(run);
    else {
      // Its session was taken, its own lease not: the session is given back alone.
      const session = sessionLeases.get(run);
      sessionLeases.delete(run);
      if (session !== undefined) await sink.release(session).catch(() => {});
    }
  }
}

function unwrap(outcome: RunResult<any> | { finished: RunResult<any> }): RunResult<any> {
  return "finished" in outcome ? outcome.finished : outcome;
}

/** Emits `run_failed` for what stopped the run, and returns it as an Error to throw. */
function runFailed(run: ActiveRun, error: unknown): Error {
  const failure = asError(error);
  run.events.emit({
    type: "run_failed",
    name: failure.name,
    message: failure.message,
    kind: failureKind(failure),
  });
  return failure;
}

function failureKind(error: Error): RunFailedKind {
  if (error instanceof UserError) return "user_error";
  if (error instanceof ProviderError) return "provider_error";
  if (error instanceof LeaseConflict) return "lease_conflict";
  // The store failed, not the run: it stays resumable once the store works again.
  if (error instanceof StoreError) return error.retryable ? STORE_UNAVAILABLE : "store_error";
  if (error instanceof GuardrailTripped) return "guardrail_tripped";
  if (error.name === "OutputValidationError") return "output_invalid";
  return "internal";
}
