import { isAborted, type Stopper, sleep } from "../../abort.js";
import type { RunContext } from "../../contract/run-context.js";
import {
  BudgetExceeded,
  InvalidToolArguments,
  RunCancelled,
  ToolError,
  type ToolErrorKind,
} from "../../errors.js";
import type { ToolCall } from "../../model/types.js";
import { isInstance } from "../../thrown.js";
import type { Tool } from "../../tool/tool.js";
import type { RetryBackoff } from "../../tool/types.js";
import { runInWorker } from "../../tool/worker.js";
import { GuardrailTripped } from "../config/guardrail.js";
import type { ActiveRun } from "../state/active-run.js";
import { CallContext } from "./call-context.js";
import { enterRunContext, leaveRunContext } from "./call-scope.js";
import { toolSemaphore } from "./semaphore.js";
import { messageOf } from "./tool-result.js";
import { HostCallError } from "./toolset.js";

/** How the attempts of one call ended. */
export type AttemptsOutcome =
  | { kind: "value"; value: unknown; ctx: RunContext }
  | { kind: "error"; errorKind: ToolErrorKind; message: string; hint?: string }
  /** The call's signal aborted (run cancelled or out of time, a sibling failed, a tool threw `RunCancelled`). */
  | { kind: "cancelled" }
  /** A budget owned by this run or an ancestor ran out inside the tool. */
  | { kind: "budget"; error: BudgetExceeded };

export type AttemptSettings = {
  retries: number;
  timeoutMs?: number;
  backoff?: RetryBackoff;
  turn: number;
  /** Its signal aborts when this call must stop: the run stopped, or `cancelSiblingsOnError` fired. */
  stopper: Stopper;
};

const DEFAULT_BACKOFF: Required<RetryBackoff> = { initialMs: 200, factor: 2, maxMs: 5_000, jitter: true };

class AttemptTimeout extends Error {
  override name = "TimeoutError";
}

/** Told once how a call's attempts ended. */
export interface AttemptsSink {
  attemptsEnded(outcome: AttemptsOutcome): void;
  /**
   * Why the call must not start after all, once a wait for its tool's permit ends: a message
   * arrived, the run's budget ran out (calls not started are skipped, DESIGN's steering).
   */
  stopsBeforeStart?(): string | undefined;
}

/**
 * Runs one validated call: retries with backoff around a per-attempt timeout around the
 * policies around `execute`. Invalid arguments, cancellation and budget are never retried.
 * Reports as soon as the call's signal aborts, even if the tool ignores it.
 *
 * The outcome goes to `sink` (exactly once, maybe before this returns), not into a promise:
 * a call without retries costs the tool's own promise and one reaction on it. The work is
 * done by class methods, not closures made per call: a closure's optimized code is dropped by
 * every full GC once no instance of it is alive, so a run after a quiet spell (a cold heap)
 * would compile its hot path again.
 */
export function runAttempts(
  run: ActiveRun,
  tool: Tool,
  call: ToolCall,
  args: unknown,
  settings: AttemptSettings,
  sink: AttemptsSink,
): void {
  // An error outcome keeps its internal `retryable` flag; sinks read only the fields they know.
  if (settings.retries === 0) new Attempt(run, tool, call, args, 1, settings, sink).begin();
  else new Retries(run, tool, call, args, settings, sink).next();
}

/** Attempts one after another, with backoff between them, until one needs no retry. */
class Retries implements AttemptsSink {
  #attempt = 0;
  readonly #backoff: Required<RetryBackoff>;

  constructor(
    readonly run: ActiveRun,
    readonly tool: Tool,
    readonly call: ToolCall,
    readonly args: unknown,
    readonly settings: AttemptSettings,
    readonly sink: AttemptsSink,
  ) {
    this.#backoff = { ...DEFAULT_BACKOFF, ...settings.backoff };
  }

  next(): void {
    this.#attempt++;
    new Attempt(this.run, this.tool, this.call, this.args, this.#attempt, this.settings, this).begin();
  }

  attemptsEnded(outcome: AttemptsOutcome): void {
    const attempt = this.#attempt;
    if (
      outcome.kind !== "error" ||
      !(outcome as OneAttempt & { kind: "error" }).retryable ||
      attempt > this.settings.retries
    ) {
      this.sink.attemptsEnded(outcome);
      return;
    }
    const delayMs = backoffDelay(this.#backoff, attempt);
    this.run.events.emit({
      type: "tool_call_retry",
      call: this.call,
      attempt: attempt + 1,
      delayMs,
      error: { kind: outcome.errorKind, message: outcome.message },
    });
    sleep(delayMs, this.settings.stopper.signal).then(
      () => this.next(),
      () => this.sink.attemptsEnded(CANCELLED),
    );
  }
}

function backoffDelay(backoff: Required<RetryBackoff>, attempt: number): number {
  const base = Math.min(backoff.maxMs, backoff.initialMs * backoff.factor ** (attempt - 1));
  // Full jitter keeps many runs retrying the same service from retrying in lockstep.
  return Math.round(backoff.jitter ? base / 2 + Math.random() * (base / 2) : base);
}

type OneAttempt =
  | Exclude<AttemptsOutcome, { kind: "error" }>
  /** `bug`: the thrown error is a bug in the tool's code (see `programmingError`), described. */
  | (Extract<AttemptsOutcome, { kind: "error" }> & { retryable: boolean; bug?: string });

const CANCELLED: OneAttempt = { kind: "cancelled" };

/**
 * One attempt, reported once: the tool's value or error, a timeout, or cancelled when the
 * call's stopper fires, whichever comes first. A tool that goes on after a timeout or an abort
 * keeps its context (and its permit) until it really ends.
 */
class Attempt {
  readonly ctx: CallContext;
  #permit: (() => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** When the timed attempt began (ms); 0 without a timeout. */
  #timedFrom = 0;
  #reported = false;
  /** Watched on the call's stopper while the tool runs. */
  #onStop: (() => void) | undefined;

  constructor(
    readonly run: ActiveRun,
    readonly tool: Tool,
    readonly call: ToolCall,
    readonly args: unknown,
    attempt: number,
    readonly settings: AttemptSettings,
    readonly sink: AttemptsSink,
  ) {
    this.ctx = new CallContext(run, settings.stopper, call, attempt, settings.turn);
  }

  /** A permit when the tool limits its concurrency, then `tool_call_started`, then the tool. */
  begin(): void {
    const { stopper } = this.settings;
    if (stopper.aborted) {
      this.#report(CANCELLED);
      return;
    }
    const { tool } = this;
    if (tool.concurrency === undefined) {
      this.#started();
      return;
    }
    toolSemaphore(tool, tool.concurrency)
      .acquire(stopper.signal)
      .then(
        (permit) => {
          this.#permit = permit;
          // The permit came in the same tick as a stop (a sibling's failure cancelled this call):
          // it never starts, or its tool_call_started would follow its cancelled result.
          if (stopper.aborted) {
            this.#ended(CANCELLED);
            return;
          }
          // Only a first attempt had not started: a retry's call is running already.
          const why = this.ctx.attempt === 1 ? this.sink.stopsBeforeStart?.() : undefined;
          if (why === undefined) this.#started();
          else
            this.#ended({
              kind: "error",
              errorKind: "skipped",
              message: `${this.tool.name} did not run: ${why}`,
              retryable: false,
            });
        },
        () => this.#report(CANCELLED),
      );
  }

  /** Write-ahead: with a store, `tool_call_started` is stored before the tool runs, so a call without one provably never ran. */
  #started(): void {
    const { run } = this;
    let stored: Promise<void> | undefined;
    try {
      run.events.emit({
        type: "tool_call_started",
        call: this.call,
        attempt: this.ctx.attempt,
        runId: "",
        seq: 0,
        at: 0,
        agent: "",
      });
      stored = run.events.flushed();
    } catch (error) {
      this.#failed(error);
      return;
    }
    if (!stored) {
      this.#run();
      return;
    }
    stored.then(
      () => this.#run(),
      (error) => this.#failed(error),
    );
  }

  #run(): void {
    const { stopper } = this.settings;
    if (stopper.aborted) {
      this.#ended(CANCELLED);
      return;
    }
    this.#onStop = this.#stopped.bind(this);
    stopper.watch(this.#onStop);
    const ms = this.settings.timeoutMs;
    if (ms !== undefined && ms > 0) {
      this.#timer = setTimeout(this.#timedOut.bind(this, ms), ms);
      this.#timedFrom = Date.now();
    }
    const tracing = this.run.tracing;
    let work: Promise<unknown>;
    try {
      // Traced: the call's execute_tool span is the active span inside the tool.
      work = tracing
        ? enterRunContext(
            this.ctx,
            (attempt) => tracing.inCall(attempt.ctx.toolCallId, () => runTool(attempt)),
            this,
          )
        : enterRunContext(this.ctx, runTool, this);
    } catch (error) {
      this.#release();
      this.#failed(error);
      return;
    }
    work.then(this.#succeeded.bind(this), this.#threw.bind(this));
  }

  #succeeded(value: unknown): void {
    leaveRunContext(this.#keepsContext());
    this.#release();
    this.#report(isAborted(value) ? CANCELLED : { kind: "value", value, ctx: this.ctx });
  }

  #threw(error: unknown): void {
    leaveRunContext(this.#keepsContext());
    this.#release();
    const outcome = classify(this.run, error, this.settings.stopper);
    if (outcome.kind === "error" && outcome.bug !== undefined && !this.#reported) {
      // The model reads the error as any other; the developer would not see it at all.
      this.run.events.emit({
        type: "warning",
        code: "tool_bug",
        message: `${this.tool.name} threw ${outcome.bug} — a bug in the tool's code, not retried (the model was told the call failed)`,
      });
    }
    this.#report(outcome);
  }

  /** Whether the run context stays tracked once this call has settled (see call-scope.ts). */
  #keepsContext(): boolean {
    // Records hold the calls of earlier turns only: the loop adds a turn's once it has ended.
    return !this.run.control.closed && this.run.records.length > 0;
  }

  #stopped(): void {
    clearTimeout(this.#timer);
    // After the stopper's other listeners: the attempt's own signal (which reporting unlinks) aborts too.
    queueMicrotask(() => this.#report(CANCELLED));
  }

  #timedOut(ms: number): void {
    if (this.#onStop) this.settings.stopper.unwatch(this.#onStop);
    const error = new AttemptTimeout(`${this.tool.name} timed out after ${ms} ms`);
    // Reported before the signal aborts, so a tool that rejects the moment its signal aborts
    // still reads as a timeout, not as its own error.
    this.#report(classify(this.run, error, this.settings.stopper));
    this.ctx.abort(error);
  }

  /** The tool's work really ended (or never started): its timer, watch and permit go. */
  #release(): void {
    if (this.#timedFrom && !this.#reported) this.#overran();
    clearTimeout(this.#timer);
    if (this.#onStop) this.settings.stopper.unwatch(this.#onStop);
    this.#permit?.();
    this.#permit = undefined;
  }

  /**
   * Ended past its timeout before the timer could fire: the event loop was blocked (a tool that
   * computes without ever awaiting), which no timer can interrupt. The result stands — its work
   * is done — and a warning says how to get a timeout that holds.
   */
  #overran(): void {
    const ms = this.settings.timeoutMs!;
    const took = Date.now() - this.#timedFrom;
    if (took <= ms) return;
    this.run.events.emit({
      type: "warning",
      code: "timeout_blocked",
      message: `${this.tool.name} ran ${took} ms, past its ${ms} ms timeout, without letting the timer fire (the event loop was blocked): a timeout cannot stop code that never awaits; give the tool isolate: "worker", or await between steps`,
    });
  }

  /** Failed before the tool ran. */
  #failed(error: unknown): void {
    this.#ended(classify(this.run, error, this.settings.stopper));
  }

  /** Ended before the tool ran: the permit goes with the report. */
  #ended(outcome: OneAttempt): void {
    this.#permit?.();
    this.#permit = undefined;
    this.#report(outcome);
  }

  #report(outcome: OneAttempt): void {
    if (this.#reported) return;
    this.#reported = true;
    this.ctx.release();
    this.sink.attemptsEnded(outcome);
  }
}

/** An idle attempt and its settings (see shapes.ts), kept so their hidden classes outlive a full GC. */
export function attemptShapes(run: ActiveRun, tool: Tool, call: ToolCall): unknown[] {
  const settings: AttemptSettings = { retries: 0, turn: 1, stopper: run.control.stopper };
  const sink: AttemptsSink = { attemptsEnded() {} };
  return [new Attempt(run, tool, call, {}, 1, settings, sink), settings];
}

/** The attempt's tool, through its policies, inside the attempt's run context. */
function runTool(attempt: Attempt): Promise<unknown> {
  return invoke(attempt.tool, attempt.args, attempt.args, attempt.ctx, 0);
}

/**
 * Policies (first = outermost) around `execute`, one step at a time: `invoke(args, ctx)` handed
 * to policy `i` runs policy `i + 1`, and after the last one `execute`. Arguments a policy
 * changed are validated again before `execute`.
 */
function invoke(
  tool: Tool,
  validated: unknown,
  args: unknown,
  ctx: RunContext,
  index: number,
): Promise<unknown> {
  const policies = tool.policies;
  if (policies && index < policies.length) {
    const next = (nextArgs: unknown, nextCtx: RunContext) =>
      invoke(tool, validated, nextArgs, nextCtx, index + 1);
    return Promise.resolve().then(() => policies[index]!(next, args, ctx));
  }
  return execute(tool, validated, args, ctx);
}

function execute(tool: Tool, validated: unknown, args: unknown, ctx: RunContext): Promise<unknown> {
  if (args !== validated) return revalidateAndExecute(tool, args, ctx);
  if (tool.isolate === "worker") return runInWorker(tool.executeSource, args, ctx);
  // Not an async function: a plain call saves a promise and a tick per call. A sync execute's
  // throw still becomes a rejection.
  try {
    const value = tool.execute(args, ctx);
    return value instanceof Promise ? value : Promise.resolve(value);
  } catch (error) {
    return Promise.reject(error);
  }
}

async function revalidateAndExecute(tool: Tool, args: unknown, ctx: RunContext): Promise<unknown> {
  const check = await tool.validateArguments(args);
  if (!check.ok) throw new InvalidToolArguments(tool.name, check.issues);
  return execute(tool, check.value, check.value, ctx);
}

function classify(run: ActiveRun, error: unknown, call: Stopper): OneAttempt {
  try {
    return classifyKnown(run, error, call);
  } catch {
    // A hostile thrown value (a Proxy whose traps throw) defeated even the checks above: it is
    // still the tool's failure, described as well as it can be.
    return { kind: "error", errorKind: "tool_error", message: messageOf(error), retryable: true };
  }
}

function classifyKnown(run: ActiveRun, error: unknown, call: Stopper): OneAttempt {
  if (isInstance(error, RunCancelled)) {
    run.control.abort(error);
    return { kind: "cancelled" };
  }
  if (call.aborted) return { kind: "cancelled" };
  if (isInstance(error, BudgetExceeded)) {
    if (run.limits.owns(error)) return { kind: "budget", error };
    // A child run's own budget: a recoverable failure of the delegation.
    return { kind: "error", errorKind: "budget", message: error.message, retryable: false };
  }
  if (isInstance(error, InvalidToolArguments)) {
    return {
      kind: "error",
      errorKind: "invalid_arguments",
      message: error.message,
      hint: error.hint!,
      retryable: false,
    };
  }
  if (isInstance(error, AttemptTimeout)) {
    return {
      kind: "error",
      errorKind: "timeout",
      message: error.message,
      hint: "The call took too long; try a smaller request or a different approach.",
      retryable: true,
    };
  }
  // A guardrail of a child run (an agent used as a tool) refused its input or output.
  if (isInstance(error, GuardrailTripped))
    return { kind: "error", errorKind: "guardrail", message: error.message, retryable: false };
  if (isInstance(error, HostCallError))
    return { kind: "error", errorKind: "host_error", message: error.message, retryable: true };
  const hint = isInstance(error, ToolError) ? readHint(error) : undefined;
  const bug = programmingError(error);
  return {
    kind: "error",
    errorKind: "tool_error",
    message: messageOf(error),
    ...(hint !== undefined && { hint }),
    retryable: !(isInstance(error, ToolError) && (error as ToolError).retry === false) && bug === undefined,
    ...(bug !== undefined && { bug }),
  };
}

/** What V8 says of code that cannot work: the same call would fail the same way again. */
const BUG_MESSAGE =
  /is not a function|is not a constructor|is not iterable|Cannot (?:read|set) properties of|Cannot destructure|Assignment to constant/;

/**
 * `ReferenceError: x is not defined at file:line`, for an error that is a bug in the code that
 * threw it (a `ReferenceError`, or a `TypeError` V8 raised for a wrong value), else undefined.
 * A `TypeError` with a `cause` is a library's report (`fetch failed`), not a bug.
 */
function programmingError(error: unknown): string | undefined {
  try {
    return bugReport(error);
  } catch {
    // A hostile thrown value (a Proxy whose traps throw, a getter that throws) is no V8 bug report.
    return undefined;
  }
}

function bugReport(error: unknown): string | undefined {
  if (!(error instanceof Error) || error.cause !== undefined) return undefined;
  const bug =
    error.name === "ReferenceError" || (error.name === "TypeError" && BUG_MESSAGE.test(error.message));
  if (!bug) return undefined;
  const frame = error.stack
    ?.split("\n")
    .map((line) => line.trim())
    .find((line) => line.startsWith("at ") && !line.includes("node:"));
  return `${error.name}: ${error.message}${frame ? ` ${frame}` : ""}`;
}

function readHint(error: ToolError): string | undefined {
  try {
    return typeof error.hint === "string" ? error.hint : undefined;
  } catch {
    return undefined;
  }
}
