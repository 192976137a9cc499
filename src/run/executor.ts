import { type Aborted, isAborted, Stopper } from "../abort.js";
import { BudgetExceeded, InvalidToolArguments } from "../errors.js";
import type { ToolCall } from "../model/types.js";
import { StoreError } from "../store/types.js";
import type { Tool } from "../tool/tool.js";
import type { ActiveRun } from "./active-run.js";
import { approveCall } from "./approval-flow.js";
import type { ApprovalOutcome } from "./approvals.js";
import { type AttemptSettings, type AttemptsOutcome, runAttempts } from "./attempts.js";
import type { EventOf } from "./events.js";
import { type Handoff, HandoffTool } from "./handoff.js";
import { recallNote, resultArtifactKey } from "./recall.js";
import type { ToolCallRecord } from "./result.js";
import {
  type CallResult,
  DEFAULT_MAX_IMAGE_BYTES,
  DEFAULT_MAX_TOOL_OUTPUT_CHARS,
  errorResult,
  type RenderSettings,
  successResult,
} from "./tool-result.js";
import type { Toolset } from "./toolset.js";

/** A call the model requested, with its JSON parse failure if any. */
export type RequestedCall = { call: ToolCall; parseError?: string; repairs?: string[] };

/** What one turn's calls came to. `results` is in request order. */
export type TurnExecution = {
  results: CallResult[];
  /** The run must stop after this turn: cancelled, or a budget (own or an ancestor's) ran out. */
  stop?: { reason: "cancelled" } | { reason: "budget"; error: BudgetExceeded };
  /** A tool marked `endsTurn` succeeded. */
  endedBy?: Tool;
  /** A handoff succeeded: the run continues with its target. */
  handoff?: { handoff: Handoff; call: ToolCall };
  /** A stored run parked on an approval: these calls have no result yet; `results` is incomplete. */
  parked?: ToolCall[];
};

/** What a resumed run already knows about a turn it is finishing (from its log). */
export type PriorTurn = {
  /** Results already stored, by call id: never run again. */
  results: Map<string, CallResult>;
  /** Calls that had started (and may have run) without a stored result. */
  started: Set<string>;
  /** Stored approval decisions, by call id. */
  decisions: Map<string, { approved: boolean; by: string; reason?: string }>;
  /** Calls whose tool message is already in the transcript (a crash while they were appended). */
  appended?: Set<string>;
};

/**
 * Runs one turn's calls as DESIGN.md pins it: preflight serially in request order (lookup,
 * JSON, tool-call budget, arguments, permissions and approval), each call starting as soon as
 * its preflight passes; a `parallel: false` tool (and every handoff) waits for in-flight calls,
 * runs alone, then later calls proceed. Events come in completion order; results are returned
 * in request order, and every requested call gets one.
 */
export async function executeTurn(
  run: ActiveRun,
  toolset: Toolset,
  requested: RequestedCall[],
  prior?: PriorTurn,
): Promise<TurnExecution> {
  const results: Array<CallResult | undefined> = new Array(requested.length);
  const running = new Map<number, Stopper>();
  // Calls running now; `idle` resolves when the count drops to zero (no Promise.all per wait).
  let inFlight = 0;
  let idleWaiters: Array<() => void> = [];
  /** A call left the in-flight count: everyone waiting is told; those waiting for idle check again. */
  const settled = () => {
    inFlight--;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const wake of waiters) wake();
  };
  /** Resolves when some running call ends (or the run stops: then to the Aborted marker). */
  const callEnded = () => run.stopper.wait((wake) => idleWaiters.push(wake));
  const started = new Set<number>();
  const execution: TurnExecution = { results: [] };
  const config = run.agent.config;
  const turn = run.turn;
  /** Why calls that never started were skipped, once preflight stops early. */
  let skipReason: string | undefined;
  let handoffAttempted = false;

  const finish = (
    index: number,
    result: CallResult,
    durationMs: number,
    value?: unknown,
    synthesised = false,
  ) => {
    // After a stop, a late completion is dropped: the call already has its synthesised result.
    if (results[index] || (run.stopper.aborted && !synthesised)) return;
    results[index] = result;
    const { record } = result;
    if (!synthesised && carriesPeerText(record) && toolset.get(record.call.name)?.untrustedOutput) {
      result.message.untrusted = true;
    }
    const event: EventOf<"tool_call_completed"> = {
      type: "tool_call_completed",
      call: record.call,
      ok: record.ok,
      output: record.output,
      durationMs,
      runId: "",
      seq: 0,
      at: 0,
      agent: "",
    };
    // Assigned, not spread in: this runs once per call.
    if (value !== undefined) event.result = value;
    if (record.error) event.error = record.error;
    if (record.truncated) event.truncated = record.truncated;
    if (result.details !== undefined) event.details = result.details;
    if (typeof result.message.content !== "string") event.content = result.message.content;
    run.emit(event);
  };

  const cancelSiblings = (failed: ToolCall) => {
    for (const [index, stopper] of running) {
      if (requested[index]!.call.id === failed.id) continue;
      stopper.abort(new Error(`a sibling call (${failed.name}) failed`));
      const { call } = requested[index]!;
      finish(
        index,
        errorResult(
          call,
          "cancelled",
          `${call.name} was cancelled because ${failed.name} failed in the same turn`,
        ),
        0,
      );
    }
  };

  /**
   * Starts a call and counts it in flight until its result is in (and stored, when the run
   * has a store). Never throws: an unexpected failure after the call stops the run instead.
   */
  const start = (index: number, tool: Tool, args: unknown): void => {
    started.add(index);
    inFlight++;
    const { call } = requested[index]!;
    // A call follows the run's signal, unless siblings may cancel it: then it gets its own.
    let stopper = run.stopper;
    let unlink: (() => void) | undefined;
    if (config.cancelSiblingsOnError) {
      const own = new Stopper();
      const onRunAbort = () => own.abort(run.stopper.reason);
      run.stopper.watch(onRunAbort);
      running.set(index, own);
      stopper = own;
      unlink = () => run.stopper.unwatch(onRunAbort);
    }
    const startedAt = performance.now();
    const timeoutMs = tool.timeoutMs ?? config.defaultToolTimeoutMs;
    const settings: AttemptSettings = {
      retries: tool.retries ?? config.defaultToolRetries ?? 0,
      turn,
      stopper,
    };
    if (timeoutMs !== undefined) settings.timeoutMs = timeoutMs;
    if (tool.retryBackoff) settings.backoff = tool.retryBackoff;
    const conclude = (outcome: AttemptsOutcome): Promise<void> | undefined => {
      running.delete(index);
      unlink?.();
      const ms = Math.round(performance.now() - startedAt);
      switch (outcome.kind) {
        case "value": {
          const render: RenderSettings = {
            maxOutputChars: tool.maxOutputChars ?? config.maxToolOutputChars ?? DEFAULT_MAX_TOOL_OUTPUT_CHARS,
            maxImageBytes: config.maxImageBytes ?? DEFAULT_MAX_IMAGE_BYTES,
          };
          if (config.toolResultRenderer) render.agentRenderer = config.toolResultRenderer;
          if (run.store) render.truncationNote = (head: number) => recallNote(call.id, head);
          let result = successResult(tool, call, outcome.value, outcome.ctx, render);
          const succeed = () => {
            finish(index, result, ms, outcome.value);
            if (!result.record.ok) {
              if (config.cancelSiblingsOnError) cancelSiblings(call);
              return;
            }
            if (tool.untrustedOutput && !run.tainted) markTainted(run, `${tool.name} output`, call);
            if (tool.endsTurn && !execution.endedBy) execution.endedBy = tool;
            if (tool instanceof HandoffTool) execution.handoff = { handoff: tool.handoff, call };
          };
          if (result.fullText === undefined || !run.store) {
            succeed();
            return undefined;
          }
          // Kept before the model sees the truncated text, so the recall it offers works.
          return run.store
            .putArtifact(run.runId, resultArtifactKey(call.id), result.fullText)
            .then(succeed, (error) => {
              const failure =
                error instanceof StoreError
                  ? error
                  : new StoreError(`could not store the full output of ${call.id}: ${String(error)}`, {
                      runId: run.runId,
                      cause: error,
                    });
              // The call did complete: its result is recorded as such (without the recall offer,
              // whose text was not stored) before the store failure stops the run.
              result = successResult(tool, call, outcome.value, outcome.ctx, {
                ...render,
                truncationNote: undefined,
              });
              succeed();
              run.abort(failure);
            });
        }
        case "error":
          finish(index, errorResult(call, outcome.errorKind, outcome.message, outcome.hint), ms);
          // An untrusted tool's own error text (an MCP `isError` result, a server's error
          // message) reaches the model just like its output does.
          if (
            tool.untrustedOutput &&
            !run.tainted &&
            (outcome.errorKind === "tool_error" || outcome.errorKind === "host_error")
          ) {
            markTainted(run, `${tool.name} error`, call);
          }
          if (config.cancelSiblingsOnError) cancelSiblings(call);
          return;
        case "budget":
          finish(index, errorResult(call, "budget", outcome.error.message), ms);
          execution.stop ??= { reason: "budget", error: outcome.error };
          skipReason ??= "the run's budget ran out";
          return;
        case "cancelled":
          return;
      }
    };
    // Concluding and leaving the in-flight count happen in the one report of the outcome.
    runAttempts(run, tool, call, args, settings, (outcome) => {
      let pending: Promise<void> | undefined;
      try {
        pending = conclude(outcome);
      } catch (error) {
        run.abort(error);
      }
      if (!pending) return settled();
      pending.then(settled, (error) => {
        run.abort(error);
        settled();
      });
    });
  };

  const limit = config.maxConcurrentToolCalls ?? Number.POSITIVE_INFINITY;
  /** Resolves once no call is running (at once if none is), or to `Aborted` when the run stops first. */
  const idle = (): Promise<undefined | Aborted> | undefined => {
    if (inFlight === 0) return undefined;
    return run.stopper.wait((wake) => {
      const check = () => {
        if (inFlight === 0) wake();
        else idleWaiters.push(check);
      };
      idleWaiters.push(check);
    });
  };
  /** Checked before each call's preflight: the reasons the rest of the turn must not start. */
  const mustStop = (): string | undefined => {
    if (run.stopper.aborted) return "the run stopped";
    if (skipReason) return skipReason;
    if (run.inbox.length > 0) return "a new user message arrived";
    return undefined;
  };

  for (let index = 0; index < requested.length; index++) {
    const { call, parseError } = requested[index]!;
    const stored = prior?.results.get(call.id);
    if (stored) {
      // Completed before a restart: its result stands, and it is never run again.
      results[index] = stored;
      continue;
    }
    skipReason = mustStop();
    if (skipReason) break;
    const resumedStart = prior?.started.has(call.id) ?? false;
    const decided = prior?.decisions.get(call.id);
    const overBudget = resumedStart || decided ? undefined : run.countToolCall();
    if (overBudget) {
      execution.stop = { reason: "budget", error: overBudget };
      skipReason = `the run's budget ran out (${overBudget.limit})`;
      break;
    }
    const tool = toolset.get(call.name);
    if (!tool) {
      finish(index, unknownTool(call, toolset), 0);
      continue;
    }
    if (parseError !== undefined) {
      const message = `the arguments for ${call.name} are not valid JSON (${parseError})`;
      finish(
        index,
        errorResult(call, "malformed_json", message, "Send the arguments as one JSON object."),
        0,
      );
      continue;
    }
    const parsed = tool.parseArguments(call.args);
    const validation = parsed instanceof Promise ? await parsed : parsed;
    if (!validation.ok) {
      const error = new InvalidToolArguments(tool.name, validation.issues);
      finish(index, errorResult(call, "invalid_arguments", error.message, error.hint), 0);
      continue;
    }
    const isHandoff = tool instanceof HandoffTool;
    if (isHandoff && handoffAttempted) {
      finish(index, errorResult(call, "tool_error", handoffRefused(call)), 0);
      continue;
    }
    if (resumedStart && !tool.idempotent) {
      // It may or may not have taken effect: running it again could do it twice.
      const message = `${call.name} was interrupted by a restart before it finished; it was not run again because it is not marked idempotent`;
      finish(
        index,
        errorResult(call, "interrupted", message, "Check whether it took effect before calling it again."),
        0,
      );
      continue;
    }
    // A call that had started was approved then (or needed no approval); a stored decision stands.
    let approval: ApprovalOutcome | undefined;
    if (resumedStart) approval = undefined;
    else if (decided) approval = { ...decided, by: "decide" };
    else {
      const pending = approveCall(run, tool, call, validation.value);
      approval = pending instanceof Promise ? await pending : pending;
    }
    if (run.stopper.aborted) break;
    if (approval?.parked) {
      execution.parked = []; // filled in below, once the calls already running have finished
      break;
    }
    if (approval && !approval.approved) {
      finish(index, deniedResult(call, approval), 0);
      continue;
    }
    if (isHandoff) handoffAttempted = true;
    if (tool.parallel === false || isHandoff) {
      // A run that stops ends its calls at once, so a wait may end idle rather than aborted.
      const calm = idle();
      if (calm) await calm;
      if (run.stopper.aborted) break;
      start(index, tool, validation.value);
      // It runs alone: the turn is idle again once it has ended.
      const alone = idle();
      if (alone) await alone;
      if (run.stopper.aborted) break;
      if (execution.handoff)
        skipReason = `the conversation was transferred to ${execution.handoff.handoff.target.name}`;
      continue;
    }
    while (inFlight >= limit) if (isAborted(await callEnded())) break;
    if (run.stopper.aborted) break;
    start(index, tool, validation.value);
  }
  const calm = idle();
  if (calm) await calm;
  if (execution.parked && !run.stopper.aborted) {
    // Calls still without a result wait for the resumed run; the transcript gets this turn's
    // tool messages only once every call has one.
    execution.parked = requested.filter((_, i) => !results[i]).map((r) => r.call);
    execution.results = results.filter((r): r is CallResult => r !== undefined);
    return execution;
  }

  if (run.stopper.aborted) {
    const reason = run.stopper.reason;
    execution.stop =
      reason instanceof BudgetExceeded && run.owns(reason)
        ? { reason: "budget", error: reason }
        : { reason: "cancelled" };
  }
  // Every requested call gets a result, so the transcript stays valid input for the next run.
  const stoppedBy = execution.stop?.reason === "budget" ? "budget" : "cancelled";
  for (const [index, { call }] of requested.entries()) {
    if (results[index]) continue;
    const laterHandoff = execution.handoff && toolset.get(call.name) instanceof HandoffTool;
    const result = started.has(index)
      ? errorResult(
          call,
          stoppedBy,
          `${call.name} was stopped before it finished: ${stoppedBy === "budget" ? "the run's budget ran out" : "the run was cancelled"}`,
        )
      : laterHandoff
        ? errorResult(call, "tool_error", handoffRefused(call))
        : errorResult(
            call,
            "skipped",
            `${call.name} did not run: ${skipReason ?? mustStop() ?? "the run stopped"}`,
          );
    finish(index, result, 0, undefined, true);
  }
  execution.results = results as CallResult[];
  return execution;
}

/** Records that untrusted output entered the run (and every run above it). */
/** A success, or a failure whose text came from the tool (its error, its host's error). */
function carriesPeerText(record: ToolCallRecord): boolean {
  return record.ok || record.error?.kind === "tool_error" || record.error?.kind === "host_error";
}

export function markTainted(run: ActiveRun, source: string, call?: ToolCall): void {
  for (let r: ActiveRun | undefined = run; r && !r.tainted; r = r.parent?.run) {
    r.tainted = source;
    r.emit({ type: "run_tainted", source, ...(call && { call }) });
  }
}

function handoffRefused(call: ToolCall): string {
  return `${call.name} was not attempted: only the first handoff of a turn is, and an earlier one was requested`;
}

function deniedResult(call: ToolCall, approval: ApprovalOutcome): CallResult {
  const why = approval.reason ? `: ${approval.reason}` : "";
  return errorResult(
    call,
    "denied",
    `${call.name} was not approved${why}`,
    "Do not repeat this call. Continue without it, or ask the user how to proceed.",
  );
}

function unknownTool(call: ToolCall, toolset: Toolset): CallResult {
  const names = [...toolset.tools].map((t) => t.name);
  return errorResult(
    call,
    "unknown_tool",
    `there is no tool named "${call.name}"`,
    names.length ? `Available tools: ${names.join(", ")}.` : "No tools are available in this conversation.",
  );
}
