/**
 * The one DBOS workflow, `quiver.run`: a loop of two step kinds over Quiver's event log.
 *
 * - `drive` starts or resumes the Quiver run on the store until it completes, fails, is
 *   cancelled or parks, and returns a small summary (never the transcript: DBOS checkpoints
 *   step outputs, and the log already holds everything).
 * - `decide` stores one approval decision received with `DBOS.recv` on `quiver:decision`;
 *   `answer` stores the approval of one `durableAskHuman` question received on `quiver:answer`,
 *   and the answer goes to the next `drive` (the tool returns it).
 *
 * A tool call is deliberately not a DBOS step: DBOS replays steps by position (concurrent calls
 * reorder under replay) and runs steps at least once, so a half-finished non-idempotent call
 * would run twice. Quiver's log already knows which calls completed and which started without
 * finishing, and its resume never re-runs either.
 *
 * The first `drive` of a run nothing has stored yet is not a step either (see `firstDrive`).
 */
import { DBOS } from "@dbos-inc/dbos-sdk";
import { sleep } from "../abort.js";
import type { StopReason } from "../contract/events.js";
import { UserError } from "../errors.js";
import type { ToolCall } from "../model/types.js";
import type { Agent } from "../run/config/agent.js";
import type { RunInput } from "../run/config/run-input.js";
import type { RunOptions } from "../run/config/run-options.js";
import type { AgentsByName } from "../run/durability/recover.js";
import { replay, undecidedIn } from "../run/durability/replay.js";
import type { RunHandle } from "../run/handle.js";
import { Runner, startOrResume } from "../run/runner.js";
import { LeaseConflict, type RunStore, StoreError } from "../store/types.js";
import { provideAnswers, questionCallIds } from "./ask-human.js";
import { watchCancel } from "./cancel-watch.js";

/** The name the workflow is registered under; a web tier enqueues it by this name. */
export const WORKFLOW_NAME = "quiver.run";
/** The `DBOS.recv` topic of approval decisions. */
export const DECISION_TOPIC = "quiver:decision";
/** The `DBOS.recv` topic of answers to `ask_human` questions (`durableAskHuman`). */
export const ANSWER_TOPIC = "quiver:answer";

/** What `quiver.run` is started with: the run's agent (by name), its input and its session. */
export type DurableRunRequest = { agent: string; input: RunInput; sessionId?: string };

/** An approval decision as sent to a parked run's workflow. */
export type DecisionMessage = { callId: string; approved: boolean; reason?: string };

/** An answer to a question a parked run asked, as sent to its workflow. */
export type AnswerMessage = { callId: string; answer: string };

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
/**
 * While a run waits on approvals and questions at once, the workflow listens on each topic in
 * turn for this long (a message on the other topic waits at most this for its turn; it is kept).
 */
const MIXED_WAIT_SECONDS = 5;

/**
 * What `drive` returns: the run's result, plus, when it parked, the calls it asked about (a
 * pending call after a barrier such as `ask_human` is asked only on the next drive) and which
 * of those are questions.
 */
type Driven = DurableRunResult & { asked?: string[]; questions?: string[] };

/** Registers `quiver.run` with DBOS (before `DBOS.launch()`) and returns the registered function. */
export function registerRunWorkflow(
  context: WorkflowContext,
): (request: DurableRunRequest) => Promise<DurableRunResult> {
  async function quiverRun(request: DurableRunRequest): Promise<DurableRunResult> {
    const runId = DBOS.workflowID;
    if (runId === undefined) throw new UserError("quiver.run must run as a DBOS workflow");
    // Rebuilt the same way when DBOS replays the workflow: received messages are checkpointed.
    const answers = new Map<string, string>();
    for (
      let driven = await firstDrive(context, runId, request, answers);
      ;
      driven = await driveStep(context, runId, request, answers)
    ) {
      if (driven.stopReason !== "awaiting_approval") {
        const { asked: _a, questions: _q, ...result } = driven;
        return result;
      }
      const waiting = new Set(driven.asked?.length ? driven.asked : (driven.pending ?? []).map((c) => c.id));
      const questions = new Set(driven.questions ?? []);
      let answersNext = false;
      while (waiting.size > 0) {
        const approvals = [...waiting].some((id) => !questions.has(id));
        const asks = [...waiting].some((id) => questions.has(id));
        const both = approvals && asks;
        // With both kinds waiting, each topic is listened on in turn.
        const topic = asks && (!approvals || answersNext) ? ANSWER_TOPIC : DECISION_TOPIC;
        if (both) answersNext = !answersNext;
        // Polled every decisionPollMs rather than DBOS's default 10 s, so a cancel is noticed soon.
        const message = await DBOS.recv<DecisionMessage | AnswerMessage>(topic, {
          timeoutSeconds: both ? MIXED_WAIT_SECONDS : PARKED_CHECK_SECONDS,
          pollingIntervalMs: context.decisionPollMs,
        });
        if (message === null) {
          // Once per round: a decision stored around the workflow (`Runner.decide` on the store).
          if (both && topic === DECISION_TOPIC) continue;
          const undecided = await DBOS.runStep(() => undecidedCalls(context.store, runId), { name: "check" });
          for (const id of [...waiting]) if (!undecided.includes(id)) waiting.delete(id);
          continue;
        }
        if (topic === ANSWER_TOPIC) {
          const answered = message as AnswerMessage;
          const applied = await DBOS.runStep(() => answer(context.store, runId, answered), {
            name: "answer",
          });
          if (applied) {
            answers.set(answered.callId, answered.answer);
            waiting.delete(answered.callId);
          }
        } else {
          const decided = message as DecisionMessage;
          const applied = await DBOS.runStep(() => decide(context.store, runId, decided), { name: "decide" });
          if (applied) waiting.delete(decided.callId);
        }
      }
    }
  }
  return DBOS.registerWorkflow(quiverRun, { name: WORKFLOW_NAME, maxRecoveryAttempts: 1_000 });
}

/**
 * The workflow's first `drive`. A run nothing has stored yet is driven outside a DBOS step: a
 * step costs two transactions of DBOS's own around it (about eight statements), a third of what a
 * five-call run sends, and the log already holds what the run did. Its outcome becomes the
 * `drive` step's checkpoint only when the workflow goes on after it (the run parked) or was
 * cancelled, so that DBOS then ends the workflow as cancelled, as it does a step's. A run that
 * is stored already takes the step: a workflow replayed after a crash gets its checkpointed
 * outcome, or drives the run on from its log. Nothing is checkpointed after this drive unless
 * its own outcome was checkpointed first, so a replay that re-drives the run (none was) has no
 * later checkpoints to read against a log gone further. Outside a step DBOS gives no cancel
 * signal: the workflow's status is looked up every `decisionPollMs` while the run goes on
 * (`watchCancel`).
 */
async function firstDrive(
  context: WorkflowContext,
  runId: string,
  request: DurableRunRequest,
  answers: ReadonlyMap<string, string>,
): Promise<Driven> {
  // A store that cannot answer now gets the step, whose drive waits for it (driveWithRetries).
  const stored = await context.store.getRun(runId).then(
    (run) => run !== undefined,
    () => true,
  );
  if (stored) return driveStep(context, runId, request, answers);
  const cancel = watchCancel(runId, context.decisionPollMs);
  let driven: Driven;
  try {
    driven = await driveWithRetries(context, runId, request, answers, cancel.signal);
  } finally {
    cancel.stop();
  }
  if (driven.stopReason !== "awaiting_approval" && !cancel.signal.aborted) return driven;
  return DBOS.runStep(async () => driven, { name: "drive" });
}

/** `drive` as the DBOS step of that name, with the step's cancel signal. */
function driveStep(
  context: WorkflowContext,
  runId: string,
  request: DurableRunRequest,
  answers: ReadonlyMap<string, string>,
): Promise<Driven> {
  return DBOS.runStep(
    () => driveWithRetries(context, runId, request, answers, DBOS.stepStatus?.cancelSignal),
    { name: "drive" },
  );
}

/**
 * `drive`, tried again while the run's lease is still held by a worker that died (it expires
 * within leaseMs) or the store failed for a moment; anything else fails the run at once. The
 * retries are ours, not DBOS's: its step retries read the workflow's status before every
 * attempt, one more round trip on every run that never needs one. A cancel (`signal`) during
 * the wait ends it.
 */
async function driveWithRetries(
  context: WorkflowContext,
  runId: string,
  request: DurableRunRequest,
  answers: ReadonlyMap<string, string>,
  signal: AbortSignal | undefined,
): Promise<Driven> {
  let waitMs = Math.max(1, Math.ceil(context.leaseMs / 4_000)) * 1_000;
  for (let attempt = 1; ; attempt++) {
    try {
      return await drive(context, runId, request, answers, signal);
    } catch (error) {
      const retryable = error instanceof LeaseConflict || (error instanceof StoreError && error.retryable);
      if (!retryable || attempt >= DRIVE_ATTEMPTS) throw error;
    }
    await sleep(waitMs, signal);
    waitMs *= 1.5;
  }
}

/** Attempts of `drive` before a held lease or a failing store fails the run. */
const DRIVE_ATTEMPTS = 6;

/**
 * Starts the run (nothing stored yet) or resumes it from its log, and drives it until it stops.
 * The cancel signal (the step's, or `watchCancel`'s) is the run's signal: `DBOS.cancelWorkflow`
 * ends it as a normal cancelled run.
 */
async function drive(
  context: WorkflowContext,
  runId: string,
  request: DurableRunRequest,
  answers: ReadonlyMap<string, string>,
  signal: AbortSignal | undefined,
): Promise<Driven> {
  const agent = agentNamed(context.agents, request.agent);
  const options = {
    ...context.runOptions,
    store: context.store,
    leaseTtlMs: context.leaseMs,
    ...(signal !== undefined && { signal }),
  };
  // A workflow recovered on another worker finds its run stored: it goes on from the log.
  const handle: RunHandle<unknown> = startOrResume(agent, request.input, {
    ...options,
    runId,
    ...(request.sessionId !== undefined && { sessionId: request.sessionId }),
    waitForLeaseMs: context.leaseMs + 2_000,
  });
  // Nobody watches here: pulling every event passes approvals on to the agent's handler, and a
  // stored run parks when nobody decides. The iteration's own failure is the result's.
  const withdraw = provideAnswers(runId, answers);
  let result: Awaited<ReturnType<RunHandle<unknown>["result"]>>;
  try {
    try {
      for await (const _ of handle) {
      }
    } catch {}
    result = await handle.result();
  } finally {
    withdraw();
  }
  const pending = result.pending?.map((call) => ({ id: call.id, name: call.name, args: call.args }));
  let waiting: { asked: string[]; questions: string[] } | undefined;
  if (pending) {
    const events = await context.store.read(runId);
    const questions = questionCallIds(events);
    const asked = undecidedIn(events);
    waiting = { asked, questions: asked.filter((id) => questions.has(id)) };
  }
  return {
    runId,
    stopReason: result.stopReason,
    output: toJson(result.output),
    ...(pending && { pending }),
    ...(waiting?.asked.length && { asked: waiting.asked }),
    ...(waiting?.questions.length && { questions: waiting.questions }),
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

/**
 * Stores the approval of one question (the answer itself goes to the next `drive`); false when
 * the call is not a question waiting. A question already approved by this step is true: the
 * step re-ran after a crash between its write and its checkpoint.
 */
async function answer(store: RunStore, runId: string, message: AnswerMessage): Promise<boolean> {
  const events = await store.read(runId);
  if (!questionCallIds(events).has(message.callId)) return false;
  const open = replay(events).openTurn;
  const decided = open?.decisions.get(message.callId);
  if (decided) return decided.approved && decided.by === "decide" && !open?.completed.has(message.callId);
  try {
    await Runner.decide(store, runId, message.callId, { approved: true, reason: "answered" });
    return true;
  } catch (error) {
    if (error instanceof UserError) return false;
    throw error;
  }
}

/** The ids of the calls a parked run still waits on, from its log. */
export async function undecidedCalls(store: RunStore, runId: string): Promise<string[]> {
  return undecidedIn(await store.read(runId));
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
