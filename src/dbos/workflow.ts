/**
 * The one DBOS workflow, `quiver.run`: a loop of two step kinds over Quiver's event log.
 *
 * - `drive` starts or resumes the Quiver run on the store until it completes, fails, is
 *   cancelled or parks, and returns a small summary (never the transcript: DBOS checkpoints
 *   step outputs, and the log already holds everything).
 * - `decide` stores one approval decision received with `DBOS.recv`.
 *
 * A tool call is deliberately not a DBOS step: DBOS replays steps by position (concurrent calls
 * reorder under replay) and runs steps at least once, so a half-finished non-idempotent call
 * would run twice. Quiver's log already knows which calls completed and which started without
 * finishing, and its resume never re-runs either.
 */
import { DBOS } from "@dbos-inc/dbos-sdk";
import { UserError } from "../errors.js";
import type { ToolCall } from "../model/types.js";
import type { RunOptions } from "../run/active-run.js";
import type { Agent } from "../run/agent.js";
import type { StopReason } from "../run/events.js";
import type { RunHandle } from "../run/handle.js";
import type { RunInput } from "../run/loop.js";
import type { AgentsByName } from "../run/recover.js";
import { replay } from "../run/replay.js";
import { Runner } from "../run/runner.js";
import { LeaseConflict, type RunStore, StoreError } from "../store/types.js";

/** The name the workflow is registered under; a web tier enqueues it by this name. */
export const WORKFLOW_NAME = "quiver.run";
/** The `DBOS.recv` topic of approval decisions. */
export const DECISION_TOPIC = "quiver:decision";

/** What `quiver.run` is started with: the run's agent (by name), its input and its session. */
export type DurableRunRequest = { agent: string; input: RunInput; sessionId?: string };

/** An approval decision as sent to a parked run's workflow. */
export type DecisionMessage = { callId: string; approved: boolean; reason?: string };

/**
 * How a durable run ended, as its workflow returns it: the stop reason and the output (as
 * JSON), plus the calls a parked run waits on. The transcript stays in the store
 * (`store.read(runId)`, `Runner.resume(agent, runId, { store })` for the full `RunResult`).
 */
export type DurableRunResult = {
  runId: string;
  stopReason: StopReason;
  output: unknown;
  pending?: Array<Pick<ToolCall, "id" | "name" | "args">>;
};

/** What the steps need from the `durableRuns` that registered them. */
export type WorkflowContext = {
  store: RunStore;
  agents: AgentsByName;
  leaseMs: number;
  decisionPollMs: number;
  runOptions: Omit<RunOptions<any>, "store" | "runId" | "sessionId" | "signal" | "leaseTtlMs">;
};

/**
 * How often, while parked with no message, the workflow looks in the store for decisions made
 * around it (`Runner.decide` on the store directly).
 */
const PARKED_CHECK_SECONDS = 60;

/** Registers `quiver.run` with DBOS (before `DBOS.launch()`) and returns the registered function. */
export function registerRunWorkflow(
  context: WorkflowContext,
): (request: DurableRunRequest) => Promise<DurableRunResult> {
  async function quiverRun(request: DurableRunRequest): Promise<DurableRunResult> {
    const runId = DBOS.workflowID;
    if (runId === undefined) throw new UserError("quiver.run must run as a DBOS workflow");
    for (;;) {
      const driven = await DBOS.runStep(() => drive(context, runId, request), {
        name: "drive",
        // A lease still held by a worker on another machine that died expires within leaseMs;
        // a store that failed for a moment is worth another try. Anything else fails the run.
        retriesAllowed: true,
        maxAttempts: 6,
        intervalSeconds: Math.max(1, Math.ceil(context.leaseMs / 4_000)),
        backoffRate: 1.5,
        shouldRetry: (error) =>
          error instanceof LeaseConflict || (error instanceof StoreError && error.retryable),
      });
      if (driven.stopReason !== "awaiting_approval") return driven;
      const waiting = new Set((driven.pending ?? []).map((call) => call.id));
      while (waiting.size > 0) {
        // Polled every decisionPollMs rather than DBOS's default 10 s, so a cancel is noticed soon.
        const message = await DBOS.recv<DecisionMessage>(DECISION_TOPIC, {
          timeoutSeconds: PARKED_CHECK_SECONDS,
          pollingIntervalMs: context.decisionPollMs,
        });
        if (message === null) {
          const undecided = await DBOS.runStep(() => undecidedCalls(context.store, runId), { name: "check" });
          for (const id of [...waiting]) if (!undecided.includes(id)) waiting.delete(id);
          continue;
        }
        const applied = await DBOS.runStep(() => decide(context.store, runId, message), { name: "decide" });
        if (applied) waiting.delete(message.callId);
      }
    }
  }
  return DBOS.registerWorkflow(quiverRun, { name: WORKFLOW_NAME, maxRecoveryAttempts: 1_000 });
}

/**
 * Starts the run (nothing stored yet) or resumes it from its log, and drives it until it stops.
 * The step's cancel signal is the run's signal: `DBOS.cancelWorkflow` ends it as a normal
 * cancelled run.
 */
async function drive(
  context: WorkflowContext,
  runId: string,
  request: DurableRunRequest,
): Promise<DurableRunResult> {
  const agent = agentNamed(context.agents, request.agent);
  const signal = DBOS.stepStatus?.cancelSignal;
  const options = {
    ...context.runOptions,
    store: context.store,
    leaseTtlMs: context.leaseMs,
    ...(signal !== undefined && { signal }),
  };
  const known = await context.store.getRun(runId);
  const handle: RunHandle<unknown> =
    known === undefined
      ? Runner.stream(agent, request.input, {
          ...options,
          runId,
          ...(request.sessionId !== undefined && { sessionId: request.sessionId }),
        })
      : Runner.resume(agent, runId, { ...options, waitForLeaseMs: context.leaseMs + 2_000 });
  // Nobody watches here: pulling every event passes approvals on to the agent's handler, and a
  // stored run parks when nobody decides. The iteration's own failure is the result's.
  try {
    for await (const _ of handle) {
    }
  } catch {}
  const result = await handle.result();
  return {
    runId,
    stopReason: result.stopReason,
    output: toJson(result.output),
    ...(result.pending && {
      pending: result.pending.map((call) => ({ id: call.id, name: call.name, args: call.args })),
    }),
  };
}

/** Stores one decision; false when the call no longer waits for one (decided already, say). */
async function decide(store: RunStore, runId: string, message: DecisionMessage): Promise<boolean> {
  try {
    await Runner.decide(store, runId, message.callId, {
      approved: message.approved,
      ...(message.reason !== undefined && { reason: message.reason }),
    });
    return true;
  } catch (error) {
    if (error instanceof UserError) return false;
    throw error;
  }
}

/** The ids of the calls a parked run still waits on, from its log. */
export async function undecidedCalls(store: RunStore, runId: string): Promise<string[]> {
  const open = replay(await store.read(runId)).openTurn;
  if (!open) return [];
  return [...open.asked].filter((id) => !open.decisions.has(id) && !open.completed.has(id));
}

export function agentNamed(agents: AgentsByName, name: string): Agent<any, any> {
  const agent =
    agents instanceof Map
      ? agents.get(name)
      : Object.hasOwn(agents, name)
        ? (agents as Record<string, Agent<any, any>>)[name]
        : undefined;
  if (agent === undefined) {
    throw new UserError(
      `no agent named ${JSON.stringify(name)} in this worker's durableRuns({ agents }); every worker must know every agent it may be sent`,
    );
  }
  return agent;
}

/** A value as JSON would carry it (DBOS stores step outputs as JSON). */
function toJson(value: unknown): unknown {
  return value === undefined ? null : JSON.parse(JSON.stringify(value));
}
