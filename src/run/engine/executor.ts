import { type Aborted, isAborted, Stopper } from "../../abort.js";
import type { ApprovalOutcome } from "../../contract/approvals.js";
import type { EventOf } from "../../contract/events.js";
import type { Guardrail } from "../../contract/guardrails.js";
import { BudgetExceeded, InvalidToolArguments } from "../../errors.js";
import type { ToolCall } from "../../model/types.js";
import { toJsonText } from "../../plain-json.js";
import { StoreError } from "../../store/types.js";
import type { Tool } from "../../tool/tool.js";
import type { AgentConfig, Handoff } from "../config/agent.js";
import type { GuardrailTripped } from "../config/guardrail.js";
import { resultArtifactKey } from "../conversation/recall.js";
import type { ActiveRun } from "../state/active-run.js";
import type { ToolCallRecord } from "../state/result.js";
import { approveCall } from "./approval-step.js";
import { type AttemptSettings, type AttemptsOutcome, type AttemptsSink, runAttempts } from "./attempts.js";
import { runGuardrails } from "./guardrail-checks.js";
import { HandoffTool } from "./handoff-tool.js";
import { markTainted } from "./taint.js";
import {
  type CallResult,
  DEFAULT_MAX_IMAGE_BYTES,
  DEFAULT_MAX_TOOL_OUTPUT_CHARS,
  errorResult,
  messageOf,
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
export function executeTurn(
  run: ActiveRun,
  toolset: Toolset,
  requested: RequestedCall[],
  prior?: PriorTurn,
): Promise<TurnExecution> {
  return new TurnCalls(run, toolset, requested, prior).execute();
}

/** What one call's preflight tells the loop: go on with the next call, or start no more. */
type Step = typeof NEXT | typeof STOP;
const NEXT = 0;
const STOP = 1;

/**
 * One turn's calls while they run. Its steps are methods, not closures made per turn or per
 * call: a closure's optimized code is dropped by every full GC once no instance of it is
 * alive, so after a quiet spell (a cold heap) the hot path would be compiled again.
 */
class TurnCalls {
  readonly results: Array<CallResult | undefined>;
  /** Calls with their own stopper (`cancelSiblingsOnError`), by index. */
  running: Map<number, Stopper> | undefined;
  /** Which calls were started, by index (an array: a Set per turn costs more than it saves). */
  readonly started: boolean[];
  readonly execution: TurnExecution = { results: [] };
  readonly config: Readonly<AgentConfig<any, any>>;
  readonly turn: number;
  /** Calls running now. */
  inFlight = 0;
  /** The one wait in progress (the preflight loop waits for one thing at a time). */
  #waiter: { wake: () => void; untilIdle: boolean } | undefined;
  /** Why calls that never started were skipped, once preflight stops early. */
  skipReason: string | undefined;
  /** The call whose approval the preflight is waiting for (-1: none). */
  asking = -1;
  #handoffAttempted = false;
  /** The turn's promise, while it waits for its last calls (`#whenDone`). */
  #done: { resolve: (execution: TurnExecution) => void; reject: (error: unknown) => void } | undefined;
  #onStop: (() => void) | undefined;

  constructor(
    readonly run: ActiveRun,
    readonly toolset: Toolset,
    readonly requested: RequestedCall[],
    readonly prior: PriorTurn | undefined,
  ) {
    this.results = new Array(requested.length);
    this.started = new Array(requested.length);
    this.config = run.agent.config;
    this.turn = run.turn;
  }

  /**
   * Preflights the calls in request order, then resolves once none is running. Without a wait
   * in the preflight (the common case) this is one promise for the whole turn: the last call to
   * settle resolves it.
   */
  execute(): Promise<TurnExecution> {
    const preflight = this.#preflight(0);
    return preflight ? preflight.then(() => this.#whenDone()) : this.#whenDone();
  }

  /** The calls from `from` on; a promise only once one of them has to wait. */
  #preflight(from: number): Promise<void> | undefined {
    for (let index = from; index < this.requested.length; index++) {
      const step = this.#preflightCall(index);
      if (step === STOP) return undefined;
      if (step !== NEXT) return step.then((next) => (next === STOP ? undefined : this.#preflight(index + 1)));
    }
    return undefined;
  }

  /** One call's preflight up to its arguments: lookup, JSON, budget, then validation. */
  #preflightCall(index: number): Step | Promise<Step> {
    const { run, prior, toolset, results, execution } = this;
    const { call, parseError } = this.requested[index]!;
    const stored = prior?.results.get(call.id);
    if (stored) {
      // Completed before a restart: its result stands, and it is never run again.
      results[index] = stored;
      return NEXT;
    }
    const resumedStart = prior?.started.has(call.id) ?? false;
    // A call that had started before a restart was running when a message stored since arrived:
    // it goes on, as running calls do live.
    this.skipReason = this.mustStop(call.id);
    if (this.skipReason) return STOP;
    const decided = prior?.decisions.get(call.id);
    const overBudget = resumedStart || decided ? undefined : run.limits.countToolCall();
    if (overBudget) {
      execution.stop = { reason: "budget", error: overBudget };
      this.skipReason = `the run's budget ran out (${overBudget.limit})`;
      return STOP;
    }
    const tool = toolset.get(call.name);
    if (!tool) {
      this.finish(index, unknownTool(call, toolset), 0);
      return NEXT;
    }
    if (parseError !== undefined) {
      const message = `the arguments for ${call.name} are not valid JSON (${parseError})`;
      this.finish(
        index,
        errorResult(call, "malformed_json", message, "Send the arguments as one JSON object."),
        0,
      );
      return NEXT;
    }
    const parsed = tool.parseArguments(call.args);
    if (parsed instanceof Promise)
      return parsed.then((validation) => this.#validated(index, tool, validation, resumedStart, decided));
    return this.#validated(index, tool, parsed, resumedStart, decided);
  }

  /** Validated arguments: handoff and restart rules, then approval. */
  #validated(
    index: number,
    tool: Tool,
    validation: Awaited<ReturnType<Tool["parseArguments"]>>,
    resumedStart: boolean,
    decided: PriorTurn["decisions"] extends Map<string, infer D> ? D | undefined : never,
  ): Step | Promise<Step> {
    const { call } = this.requested[index]!;
    if (!validation.ok) {
      const error = new InvalidToolArguments(tool.name, validation.issues);
      this.finish(index, errorResult(call, "invalid_arguments", error.message, error.hint), 0);
      return NEXT;
    }
    const isHandoff = tool instanceof HandoffTool;
    if (isHandoff && this.#handoffAttempted) {
      this.finish(index, errorResult(call, "tool_error", handoffRefused(call)), 0);
      return NEXT;
    }
    if (resumedStart && !tool.idempotent) {
      // It may or may not have taken effect: running it again could do it twice.
      const message = `${call.name} was interrupted by a restart before it finished; it was not run again because it is not marked idempotent`;
      this.finish(
        index,
        errorResult(call, "interrupted", message, "Check whether it took effect before calling it again."),
        0,
      );
      return NEXT;
    }
    // A call that had started was approved then (or needed no approval); a stored decision stands.
    if (resumedStart) return this.#approved(index, tool, validation.value, isHandoff, undefined);
    if (decided)
      return this.#approved(index, tool, validation.value, isHandoff, { ...decided, by: "decide" });
    const pending = approveCall(this.run, tool, call, validation.value);
    if (pending instanceof Promise) {
      // Waiting for a decision: a stop meanwhile denies it (see #conclude).
      this.asking = index;
      return pending.then((approval) => {
        // Denied by the stop itself: #conclude gives it its denied result.
        if (approval?.by !== "cancelled") this.asking = -1;
        return this.#approved(index, tool, validation.value, isHandoff, approval);
      });
    }
    return this.#approved(index, tool, validation.value, isHandoff, pending);
  }

  /** Approved (or not asked): starts the call, alone when it must be. */
  #approved(
    index: number,
    tool: Tool,
    args: unknown,
    isHandoff: boolean,
    approval: ApprovalOutcome | undefined,
  ): Step | Promise<Step> {
    const { run, execution } = this;
    if (run.control.stopper.aborted) return STOP;
    if (approval?.parked) {
      execution.parked = []; // filled in below, once the calls already running have finished
      return STOP;
    }
    if (approval && !approval.approved) {
      this.finish(index, deniedResult(this.requested[index]!.call, approval), 0);
      return NEXT;
    }
    // An approval (or an async validation) may have taken a while: a message meanwhile skips it.
    if (this.#stopsBeforeStart(index)) return STOP;
    if (isHandoff) this.#handoffAttempted = true;
    if (tool.parallel === false || isHandoff) return this.#startAlone(index, tool, args);
    if (this.inFlight >= (this.config.maxConcurrentToolCalls ?? Number.POSITIVE_INFINITY))
      return this.#startBelowLimit(index, tool, args);
    this.start(index, tool, args);
    return NEXT;
  }

  /** A `parallel: false` tool or a handoff: waits for the calls in flight, then runs alone. */
  async #startAlone(index: number, tool: Tool, args: unknown): Promise<Step> {
    const { run, execution } = this;
    // A run that stops ends its calls at once, so a wait may end idle rather than aborted.
    const calm = this.idle();
    if (calm) await calm;
    if (this.#stopsBeforeStart(index)) return STOP;
    this.start(index, tool, args);
    // It runs alone: the turn is idle again once it has ended.
    const alone = this.idle();
    if (alone) await alone;
    if (run.control.stopper.aborted) return STOP;
    if (execution.handoff)
      this.skipReason = `the conversation was transferred to ${execution.handoff.handoff.target.name}`;
    return NEXT;
  }

  /** `maxConcurrentToolCalls` reached: starts the call once one in flight has ended. */
  async #startBelowLimit(index: number, tool: Tool, args: unknown): Promise<Step> {
    const limit = this.config.maxConcurrentToolCalls ?? Number.POSITIVE_INFINITY;
    while (this.inFlight >= limit) if (isAborted(await this.callEnded())) return STOP;
    if (this.#stopsBeforeStart(index)) return STOP;
    this.start(index, tool, args);
    return NEXT;
  }

  /**
   * After a wait (an approval, a barrier, a free slot), whether the call must not start after
   * all: the run stopped, or a message arrived meanwhile (steering skips every call that has
   * not started, whatever held it back).
   */
  #stopsBeforeStart(index: number): boolean {
    if (this.run.control.stopper.aborted) return true;
    this.skipReason ??= this.mustStop(this.requested[index]!.call.id);
    return this.skipReason !== undefined;
  }

  /** Resolves with the turn's outcome once no call is running, or soon after the run stops. */
  #whenDone(): Promise<TurnExecution> {
    const { stopper } = this.run.control;
    if (this.inFlight === 0 || stopper.aborted) return Promise.resolve(this.#conclude());
    // One executor for every turn, not a closure per turn: V8 keeps the optimized code of a
    // closure only while one that ran it lives, and every full GC between runs dropped it.
    const done = new Promise<TurnExecution>(captureResolvers);
    this.#done = captured!;
    captured = undefined;
    this.#onStop = this.#stopped.bind(this);
    stopper.watch(this.#onStop);
    return done;
  }

  #stopped(): void {
    // After the stopper's other listeners (the calls' own), as an awaited wait would.
    queueMicrotask(() => this.#end());
  }

  /** Settles `#whenDone`'s promise, once. */
  #end(): void {
    const done = this.#done;
    if (!done) return;
    this.#done = undefined;
    if (this.#onStop) this.run.control.stopper.unwatch(this.#onStop);
    try {
      done.resolve(this.#conclude());
    } catch (error) {
      done.reject(error);
    }
  }

  /** The turn's outcome once its calls are done (or the run stopped). */
  #conclude(): TurnExecution {
    const { run, requested, results, execution } = this;
    if (execution.parked && !run.control.stopper.aborted) {
      // Calls still without a result wait for the resumed run; the transcript gets this turn's
      // tool messages only once every call has one.
      execution.parked = requested.filter((_, i) => !results[i]).map((r) => r.call);
      execution.results = results.filter((r): r is CallResult => r !== undefined);
      return execution;
    }

    if (run.control.stopper.aborted) {
      const reason = run.control.stopper.reason;
      execution.stop =
        reason instanceof BudgetExceeded && run.limits.owns(reason)
          ? { reason: "budget", error: reason }
          : { reason: "cancelled" };
    }
    // Every requested call gets a result, so the transcript stays valid input for the next run.
    const stoppedBy = execution.stop?.reason === "budget" ? "budget" : "cancelled";
    const why = stoppedBy === "budget" ? "the run's budget ran out" : "the run was cancelled";
    for (const [index, { call }] of requested.entries()) {
      if (results[index]) continue;
      const laterHandoff = execution.handoff && this.toolset.get(call.name) instanceof HandoffTool;
      // Its approval was still awaited: the stop is its "no" (approvals fail closed).
      const result =
        index === this.asking
          ? deniedResult(call, { approved: false, by: "cancelled", reason: why })
          : this.started[index]
            ? errorResult(call, stoppedBy, `${call.name} was stopped before it finished: ${why}`)
            : laterHandoff
              ? errorResult(call, "skipped", handoffRefused(call))
              : errorResult(
                  call,
                  "skipped",
                  `${call.name} did not run: ${this.skipReason ?? this.mustStop() ?? "the run stopped"}`,
                );
      this.finish(index, result, 0, undefined, true);
    }
    execution.results = results as CallResult[];
    return execution;
  }

  /**
   * Checked before each call's preflight: the reasons the rest of the turn must not start. A
   * message does not stop `callId` if it had started before a restart (it was running live).
   */
  mustStop(callId?: string): string | undefined {
    const { run } = this;
    if (run.control.stopper.aborted) return "the run stopped";
    if (this.skipReason) return this.skipReason;
    if (run.mailbox.inbox.length > 0 && !(callId !== undefined && this.prior?.started.has(callId)))
      return "a new user message arrived";
    return undefined;
  }

  /** Resolves once no call is running (at once if none is), or to `Aborted` when the run stops first. */
  idle(): Promise<undefined | Aborted> | undefined {
    if (this.inFlight === 0) return undefined;
    return this.run.control.stopper.wait((wake) => {
      this.#waiter = { wake, untilIdle: true };
    });
  }

  /** Resolves when some running call ends (or the run stops: then to the Aborted marker). */
  callEnded(): Promise<undefined | Aborted> {
    return this.run.control.stopper.wait((wake) => {
      this.#waiter = { wake, untilIdle: false };
    });
  }

  /** A call left the in-flight count: the wait in progress is told, if it was waiting for this. */
  settled(): void {
    this.inFlight--;
    const waiter = this.#waiter;
    if (waiter && (!waiter.untilIdle || this.inFlight === 0)) {
      this.#waiter = undefined;
      waiter.wake();
    }
    if (this.inFlight === 0) this.#end();
  }

  /** A call's result is in: recorded once, and announced as `tool_call_completed`. */
  finish(index: number, result: CallResult, durationMs: number, value?: unknown, synthesised = false): void {
    const { run, results } = this;
    // After a stop, a late completion is dropped: the call already has its synthesised result.
    if (results[index] || (run.control.stopper.aborted && !synthesised)) return;
    results[index] = result;
    const { record } = result;
    if (
      !synthesised &&
      carriesPeerText(record) &&
      (this.toolset.get(record.call.name)?.untrustedOutput || run.untrustedCalls?.has(record.call.id))
    ) {
      result.message.untrusted = true;
    }
    // A success's `result` is in the literal, not added after: an added field makes a hidden
    // class that dies with the last event, and a full GC then throws away code that used it.
    const event: EventOf<"tool_call_completed"> =
      value === undefined
        ? {
            type: "tool_call_completed",
            call: record.call,
            ok: record.ok,
            output: record.output,
            durationMs,
            runId: "",
            seq: 0,
            at: 0,
            agent: "",
          }
        : {
            type: "tool_call_completed",
            call: record.call,
            ok: record.ok,
            output: record.output,
            durationMs,
            result: value,
            runId: "",
            seq: 0,
            at: 0,
            agent: "",
          };
    // Assigned, not spread in: this runs once per call.
    if (record.error) event.error = record.error;
    if (record.truncated) event.truncated = record.truncated;
    if (result.details !== undefined) event.details = result.details;
    if (typeof result.message.content !== "string") event.content = result.message.content;
    run.events.emit(event);
  }

  cancelSiblings(failed: ToolCall): void {
    const { requested } = this;
    if (!this.running) return;
    for (const [index, stopper] of this.running) {
      if (requested[index]!.call.id === failed.id) continue;
      stopper.abort(new Error(`a sibling call (${failed.name}) failed`));
      const { call } = requested[index]!;
      this.finish(
        index,
        errorResult(
          call,
          "cancelled",
          `${call.name} was cancelled because ${failed.name} failed in the same turn`,
        ),
        0,
      );
    }
  }

  /**
   * Starts a call and counts it in flight until its result is in (and stored, when the run
   * has a store). Never throws: an unexpected failure after the call stops the run instead.
   */
  start(index: number, tool: Tool, args: unknown): void {
    const { run, config } = this;
    this.started[index] = true;
    this.inFlight++;
    const { call } = this.requested[index]!;
    // A call follows the run's signal, unless siblings may cancel it: then it gets its own.
    let stopper = run.control.stopper;
    let unlink: (() => void) | undefined;
    if (config.cancelSiblingsOnError) {
      const own = new Stopper();
      const onRunAbort = () => own.abort(run.control.stopper.reason);
      run.control.stopper.watch(onRunAbort);
      this.running ??= new Map();
      this.running.set(index, own);
      stopper = own;
      unlink = () => run.control.stopper.unwatch(onRunAbort);
    }
    const timeoutMs = tool.timeoutMs ?? config.defaultToolTimeoutMs;
    const settings: AttemptSettings = {
      retries: tool.retries ?? config.defaultToolRetries ?? 0,
      turn: this.turn,
      stopper,
    };
    if (timeoutMs !== undefined) settings.timeoutMs = timeoutMs;
    if (tool.retryBackoff) settings.backoff = tool.retryBackoff;
    const running = new RunningCall(this, index, tool, call, unlink);
    if (tool.guardrails?.input?.length) running.guardThenRun(args, settings);
    else runAttempts(run, tool, call, args, settings, running);
  }
}

let captured: { resolve: (execution: TurnExecution) => void; reject: (error: unknown) => void } | undefined;

/** The executor of a turn's promise (`#whenDone`): it hands the resolvers over. */
function captureResolvers(
  resolve: (execution: TurnExecution) => void,
  reject: (error: unknown) => void,
): void {
  captured = { resolve, reject };
}

/** One started call of a turn: it hears how its attempts ended and concludes the call. */
class RunningCall implements AttemptsSink {
  readonly #startedAt = performance.now();

  constructor(
    readonly calls: TurnCalls,
    readonly index: number,
    readonly tool: Tool,
    readonly call: ToolCall,
    readonly unlink: (() => void) | undefined,
  ) {}

  /**
   * The tool's input guardrails first (they see the validated arguments, once for all attempts):
   * a trip is the call's result, an error the model reads, and the tool never starts.
   */
  guardThenRun(args: unknown, settings: AttemptSettings): void {
    const { calls, tool, call } = this;
    const subject = { stage: "tool_input" as const, text: toJsonText(args), call: { ...call, args } };
    runGuardrails(calls.run, tool.guardrails!.input!, subject, call.id).then(
      (tripped) => {
        if (tripped) this.attemptsEnded(guardrailRefusal(tool, tripped, "input"));
        else runAttempts(calls.run, tool, call, args, settings, this);
      },
      (error: unknown) =>
        this.attemptsEnded({ kind: "error", errorKind: "guardrail", message: messageOf(error) }),
    );
  }

  /** Why the call must not start after all, asked when it got its tool's permit (see AttemptsSink). */
  stopsBeforeStart(): string | undefined {
    return this.calls.mustStop(this.call.id);
  }

  /** Concluding and leaving the in-flight count happen in this one report of the outcome. */
  attemptsEnded(outcome: AttemptsOutcome): void {
    const { calls } = this;
    let pending: Promise<void> | undefined;
    try {
      pending = this.#conclude(outcome);
    } catch (error) {
      calls.run.control.abort(error);
    }
    if (!pending) {
      calls.settled();
      return;
    }
    pending.then(
      () => calls.settled(),
      (error) => {
        calls.run.control.abort(error);
        calls.settled();
      },
    );
  }

  #conclude(outcome: AttemptsOutcome): Promise<void> | undefined {
    const { calls, index, tool, call } = this;
    const { run, config } = calls;
    calls.running?.delete(index);
    this.unlink?.();
    const ms = Math.round(performance.now() - this.#startedAt);
    switch (outcome.kind) {
      case "value": {
        const guardrails = tool.guardrails?.output;
        if (guardrails?.length) return this.#guardOutput(guardrails, outcome, ms);
        return this.#concludeValue(outcome, ms);
      }
      case "error":
        calls.finish(index, errorResult(call, outcome.errorKind, outcome.message, outcome.hint), ms);
        // An untrusted tool's own error text (an MCP `isError` result, a server's error
        // message) reaches the model just like its output does.
        if (
          tool.untrustedOutput &&
          !run.tainted &&
          (outcome.errorKind === "tool_error" || outcome.errorKind === "host_error")
        ) {
          markTainted(run, `${tool.name} error`, call);
        }
        if (config.cancelSiblingsOnError) calls.cancelSiblings(call);
        return undefined;
      case "budget":
        calls.finish(index, errorResult(call, "budget", outcome.error.message), ms);
        calls.execution.stop ??= { reason: "budget", error: outcome.error };
        calls.skipReason ??= "the run's budget ran out";
        return undefined;
      case "cancelled":
        return undefined;
    }
  }

  /** A value: rendered (and, when it was cut, its full text kept for recall) and recorded. */
  #concludeValue(
    outcome: Extract<AttemptsOutcome, { kind: "value" }>,
    ms: number,
  ): Promise<void> | undefined {
    const { calls, tool, call } = this;
    const { run, config } = calls;
    const render: RenderSettings = {
      maxOutputChars: tool.maxOutputChars ?? config.maxToolOutputChars ?? DEFAULT_MAX_TOOL_OUTPUT_CHARS,
      maxImageBytes: config.maxImageBytes ?? DEFAULT_MAX_IMAGE_BYTES,
    };
    if (config.toolResultRenderer) render.agentRenderer = config.toolResultRenderer;
    if (run.events.store) render.recallCallId = call.id;
    const result = successResult(tool, call, outcome.value, outcome.ctx, render);
    if (result.fullText === undefined || !run.events.store) {
      this.#succeed(result, ms, outcome.value);
      return undefined;
    }
    // Kept before the model sees the truncated text, so the recall it offers works.
    return run.events.store.putArtifact(run.runId, resultArtifactKey(call.id), result.fullText).then(
      () => this.#succeed(result, ms, outcome.value),
      (error) => {
        const failure =
          error instanceof StoreError
            ? error
            : new StoreError(`could not store the full output of ${call.id}: ${String(error)}`, {
                runId: run.runId,
                cause: error,
              });
        // The call did complete: its result is recorded as such (without the recall offer,
        // whose text was not stored) before the store failure stops the run.
        const unrecalled = successResult(tool, call, outcome.value, outcome.ctx, {
          ...render,
          recallCallId: undefined,
        });
        this.#succeed(unrecalled, ms, outcome.value);
        run.control.abort(failure);
      },
    );
  }

  /**
   * The tool's output guardrails see what the model would read (and the raw value) before it
   * is recorded: a trip withholds it, and the model reads why instead.
   */
  #guardOutput(
    guardrails: ReadonlyArray<Guardrail<any>>,
    outcome: Extract<AttemptsOutcome, { kind: "value" }>,
    ms: number,
  ): Promise<void> {
    const { calls, tool, call, index } = this;
    let rendered: string;
    try {
      rendered = successResult(tool, call, outcome.value, outcome.ctx, {
        maxOutputChars: Number.POSITIVE_INFINITY,
        maxImageBytes: calls.config.maxImageBytes ?? DEFAULT_MAX_IMAGE_BYTES,
        ...(calls.config.toolResultRenderer && { agentRenderer: calls.config.toolResultRenderer }),
      }).record.output;
    } catch {
      rendered = "";
    }
    const subject = { stage: "tool_output" as const, text: rendered, value: outcome.value, call };
    return runGuardrails(calls.run, guardrails, subject, call.id).then((tripped) => {
      if (!tripped) return this.#concludeValue(outcome, ms);
      const refusal = guardrailRefusal(tool, tripped, "output");
      calls.finish(index, errorResult(call, "guardrail", refusal.message, refusal.hint), ms);
      return undefined;
    });
  }

  #succeed(result: CallResult, ms: number, value: unknown): void {
    const { calls, index, tool, call } = this;
    const { run, execution } = calls;
    // A truncated result drops its raw value everywhere, the live event too: the cap bounds
    // what a reader (and an unread stream's buffer) holds.
    calls.finish(index, result, ms, result.record.truncated ? undefined : value);
    if (!result.record.ok) {
      if (calls.config.cancelSiblingsOnError) calls.cancelSiblings(call);
      return;
    }
    if (tool.untrustedOutput && !run.tainted) markTainted(run, `${tool.name} output`, call);
    if (tool.endsTurn && !execution.endedBy) execution.endedBy = tool;
    if (tool instanceof HandoffTool) execution.handoff = { handoff: tool.handoff, call };
  }
}

/**
 * Idle objects of each shape a turn makes (see shapes.ts): a turn's calls, a running call and
 * the wait in progress, kept so their hidden classes outlive a full GC.
 */
export function turnShapes(run: ActiveRun, toolset: Toolset, tool: Tool): unknown[] {
  const call: ToolCall = { id: "shape", name: "shape", args: {} };
  const calls = new TurnCalls(run, toolset, [{ call }], undefined);
  return [calls, new RunningCall(calls, 0, tool, call, undefined), { wake: () => {}, untilIdle: true }];
}

/** A success, or a failure whose text came from the tool (its error, its host's error). */
function carriesPeerText(record: ToolCallRecord): boolean {
  return record.ok || record.error?.kind === "tool_error" || record.error?.kind === "host_error";
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

/** A tool guardrail's trip, as the error the model reads. */
function guardrailRefusal(
  tool: Tool,
  tripped: GuardrailTripped,
  stage: "input" | "output",
): { kind: "error"; errorKind: "guardrail"; message: string; hint: string } {
  return {
    kind: "error",
    errorKind: "guardrail",
    message:
      stage === "input"
        ? `${tool.name} was not run: guardrail "${tripped.guardrail}" refused the call (${tripped.reason})`
        : `the result of ${tool.name} was withheld: guardrail "${tripped.guardrail}" refused it (${tripped.reason})`,
    hint: "Do not repeat this call as it is. Continue without it, or ask the user how to proceed.",
  };
}
