import { ProviderError, UserError } from "../errors.js";
import { LeaseConflict, type RunStore, StoreError } from "../store/types.js";
import { ActiveRun, type RunOptions } from "./active-run.js";
import type { Agent } from "./agent.js";
import { EventQueue } from "./event-queue.js";
import { leaseOwner } from "./event-writer.js";
import type { RunEvent } from "./events.js";
import { RunHandle } from "./handle.js";
import { inputMessages, type RunInput, runLoop } from "./loop.js";
import type { RunResult } from "./result.js";
import { loadRun, loadSession, resumeLoop, storedResult } from "./resume.js";
import { assertRunInput } from "./run-input.js";

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
  async run<Deps, Output>(
    agent: Agent<Deps, Output>,
    input: RunInput,
    options: RunOptions<Deps> = {},
  ): Promise<RunResult<Output>> {
    assertRunInput(input, options);
    return start(agent, options, false, (run) => fresh(run, input)).result();
  },

  /**
   * Starts a run and returns its handle before any event is emitted; the run begins on the
   * next tick and the handle buffers events until they are read.
   */
  stream<Deps, Output>(
    agent: Agent<Deps, Output>,
    input: RunInput,
    options: RunOptions<Deps> = {},
  ): RunHandle<Output> {
    assertRunInput(input, options);
    return start(agent, options, true, (run) => fresh(run, input));
  },

  /**
   * Continues a stored run — after a crash, a restart, or an approval decided with
   * `Runner.decide` — from its event log. The handle emits only new events (seq continues). A
   * run that had already finished resolves with its stored result and emits nothing.
   *
   * @example
   * const handle = Runner.resume(agent, runId, { store });
   * const result = await handle.result();
   */
  resume<Deps, Output>(
    agent: Agent<Deps, Output>,
    runId: string,
    options: RunOptions<Deps> & { store: RunStore },
  ): RunHandle<Output> {
    if (!options.store) throw new UserError("Runner.resume needs the run's { store }");
    return start(agent, { ...options, runId }, true, async (run) => {
      const state = await loadRun(options.store, runId);
      if (state.status !== "running") return { finished: storedResult(state, agent) };
      return resumeLoop(run, state);
    });
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
    const lease = await store.acquireLease(runId, leaseOwner(), 10_000);
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

type Body = (run: ActiveRun) => Promise<RunResult<any> | { finished: RunResult<any> }>;

/** A fresh run: with a store and a known session, its conversation continues from the store. */
async function fresh(run: ActiveRun, input: RunInput): Promise<RunResult<any>> {
  const { store, sessionId } = run.options;
  if (store && sessionId !== undefined && !Array.isArray(input) && !run.parent) {
    const history = await loadSession(store, sessionId);
    if (history.length) return runLoop(run, [...history, ...inputMessages(input)]);
  }
  return runLoop(run, input);
}

function start<Deps, Output>(
  agent: Agent<Deps, Output>,
  options: RunOptions<Deps>,
  hasChannel: boolean,
  body: Body,
): RunHandle<Output> {
  const queue = new EventQueue();
  // Runner.run() has no reader: its events go to the store (if any), never to a buffer.
  if (!hasChannel) queue.detach();
  const run = new ActiveRun(agent, options, queue);
  run.hasChannel = hasChannel;
  const result = new Promise<RunResult<Output>>((resolve, reject) => {
    setImmediate(() => {
      drive(run, body).then(
        (value) => {
          queue.end();
          resolve(value as RunResult<Output>);
        },
        (failure: Error) => {
          queue.end(failure, true);
          reject(failure);
        },
      );
    });
  });
  return new RunHandle<Output>(run, queue, result);
}

/** Holds the run's lease (with a store) while the body runs; a failure becomes `run_failed`. */
async function drive(run: ActiveRun, body: Body): Promise<RunResult<any>> {
  let leased = false;
  try {
    if (run.store) {
      await run.writer.acquire(run.runId);
      leased = true;
    }
    const outcome = await body(run);
    return "finished" in outcome ? outcome.finished : outcome;
  } catch (error) {
    const failure = error instanceof Error ? error : new Error(String(error));
    run.emit({
      type: "run_failed",
      name: failure.name,
      message: failure.message,
      kind: failureKind(failure),
    });
    throw failure;
  } finally {
    if (leased) await run.writer.release(run.runId);
  }
}

function failureKind(error: Error): string {
  if (error instanceof UserError) return "user_error";
  if (error instanceof ProviderError) return "provider_error";
  if (error instanceof LeaseConflict) return "lease_conflict";
  if (error instanceof StoreError) return "store_error";
  if (error.name === "OutputValidationError") return "output_invalid";
  return "internal";
}
