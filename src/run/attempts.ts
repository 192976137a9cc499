import { isAborted, type Stopper, sleep } from "../abort.js";
import {
  BudgetExceeded,
  InvalidToolArguments,
  RunCancelled,
  ToolError,
  type ToolErrorKind,
} from "../errors.js";
import type { ToolCall } from "../model/types.js";
import { isInstance } from "../thrown.js";
import type { Tool } from "../tool/tool.js";
import type { RetryBackoff } from "../tool/types.js";
import { runInWorker } from "../tool/worker.js";
import type { ActiveRun } from "./active-run.js";
import { CallContext } from "./call-context.js";
import { enterRunContext, leaveRunContext, type RunContext } from "./context.js";
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

/** The run a tool call belongs to, for code that starts child runs from inside a call (agents as tools). */
export function runOf(ctx: RunContext): ActiveRun | undefined {
  return CallContext.runOf(ctx);
}

class AttemptTimeout extends Error {
  override name = "TimeoutError";
}

/**
 * Runs one validated call: retries with backoff around a per-attempt timeout around the
 * policies around `execute`. Invalid arguments, cancellation and budget are never retried.
 * Reports as soon as the call's signal aborts, even if the tool ignores it.
 *
 * The outcome goes to `report` (exactly once, maybe before this returns), not into a promise:
 * a call without retries then costs the tool's own promise and one reaction on it.
 */
export function runAttempts(
  run: ActiveRun,
  tool: Tool,
  call: ToolCall,
  args: unknown,
  settings: AttemptSettings,
  report: (outcome: AttemptsOutcome) => void,
): void {
  // An error outcome keeps its internal `retryable` flag; callers read only the fields they know.
  if (settings.retries === 0) runOneAttempt(run, tool, call, args, 1, settings, report);
  else void retrying(run, tool, call, args, settings).then(report);
}

async function retrying(
  run: ActiveRun,
  tool: Tool,
  call: ToolCall,
  args: unknown,
  settings: AttemptSettings,
): Promise<AttemptsOutcome> {
  const backoff = { ...DEFAULT_BACKOFF, ...settings.backoff };
  for (let attempt = 1; ; attempt++) {
    const outcome = await new Promise<OneAttempt>((resolve) =>
      runOneAttempt(run, tool, call, args, attempt, settings, resolve),
    );
    if (outcome.kind !== "error" || !outcome.retryable || attempt > settings.retries) return outcome;
    const delayMs = backoffDelay(backoff, attempt);
    run.emit({
      type: "tool_call_retry",
      call,
      attempt: attempt + 1,
      delayMs,
      error: { kind: outcome.errorKind, message: outcome.message },
    });
    try {
      await sleep(delayMs, settings.stopper.signal);
    } catch {
      return { kind: "cancelled" };
    }
  }
}

function backoffDelay(backoff: Required<RetryBackoff>, attempt: number): number {
  const base = Math.min(backoff.maxMs, backoff.initialMs * backoff.factor ** (attempt - 1));
  // Full jitter keeps many runs retrying the same service from retrying in lockstep.
  return Math.round(backoff.jitter ? base / 2 + Math.random() * (base / 2) : base);
}

type OneAttempt =
  | Exclude<AttemptsOutcome, { kind: "error" }>
  | (Extract<AttemptsOutcome, { kind: "error" }> & { retryable: boolean });

const CANCELLED: OneAttempt = { kind: "cancelled" };

/** One attempt: a permit when the tool limits its concurrency, then `startAttempt`. */
function runOneAttempt(
  run: ActiveRun,
  tool: Tool,
  call: ToolCall,
  args: unknown,
  attempt: number,
  settings: AttemptSettings,
  report: (outcome: OneAttempt) => void,
): void {
  const callStopper = settings.stopper;
  if (callStopper.aborted) {
    report(CANCELLED);
    return;
  }
  const ctx = new CallContext(run, callStopper, call, attempt, settings.turn);
  const end = (outcome: OneAttempt) => {
    ctx.release();
    report(outcome);
  };
  if (tool.concurrency === undefined) {
    startAttempt(run, tool, call, args, ctx, settings, undefined, end);
    return;
  }
  toolSemaphore(tool, tool.concurrency)
    .acquire(callStopper.signal)
    .then(
      (permit) => startAttempt(run, tool, call, args, ctx, settings, permit, end),
      () => end(CANCELLED),
    );
}

/**
 * `tool_call_started`, stored before the tool runs when the run has a store (write-ahead: a
 * call with no stored `tool_call_started` provably never ran), then the attempt itself.
 */
function startAttempt(
  run: ActiveRun,
  tool: Tool,
  call: ToolCall,
  args: unknown,
  ctx: CallContext,
  settings: AttemptSettings,
  permit: (() => void) | undefined,
  end: (outcome: OneAttempt) => void,
): void {
  const { stopper } = settings;
  let stored: Promise<void> | undefined;
  try {
    run.emit({ type: "tool_call_started", call, attempt: ctx.attempt, runId: "", seq: 0, at: 0, agent: "" });
    stored = run.flushed();
  } catch (error) {
    permit?.();
    end(classify(run, error, stopper));
    return;
  }
  if (!stored) {
    attemptOnce(run, tool, args, ctx, settings, permit, end);
    return;
  }
  stored.then(
    () => {
      if (!stopper.aborted) {
        attemptOnce(run, tool, args, ctx, settings, permit, end);
        return;
      }
      permit?.();
      end(CANCELLED);
    },
    (error) => {
      permit?.();
      end(classify(run, error, stopper));
    },
  );
}

/**
 * One attempt, reported once: the tool's value or error, a timeout, or cancelled when the
 * call's stopper fires, whichever comes first. A tool that goes on after a timeout or an abort
 * keeps its context (and its permit) until it really ends.
 */
function attemptOnce(
  run: ActiveRun,
  tool: Tool,
  args: unknown,
  ctx: CallContext,
  settings: AttemptSettings,
  permit: (() => void) | undefined,
  end: (outcome: OneAttempt) => void,
): void {
  const { stopper } = settings;
  if (stopper.aborted) {
    permit?.();
    end(CANCELLED);
    return;
  }
  let reported = false;
  const settle = (outcome: OneAttempt) => {
    if (reported) return;
    reported = true;
    end(outcome);
  };
  let timer: NodeJS.Timeout | undefined;
  const stop = () => {
    clearTimeout(timer);
    // After the stopper's other listeners: the attempt's own signal (which `end` unlinks) aborts too.
    queueMicrotask(() => settle(CANCELLED));
  };
  stopper.watch(stop);
  const ms = settings.timeoutMs;
  if (ms !== undefined && ms > 0) {
    timer = setTimeout(() => {
      stopper.unwatch(stop);
      const error = new AttemptTimeout(`${tool.name} timed out after ${ms} ms`);
      // Reported before the signal aborts, so a tool that rejects the moment its signal
      // aborts still reads as a timeout, not as its own error.
      settle(classify(run, error, stopper));
      ctx.abort(error);
    }, ms);
  }
  const ended = () => {
    clearTimeout(timer);
    stopper.unwatch(stop);
    permit?.();
  };
  const tracing = run.tracing;
  let work: Promise<unknown>;
  try {
    // Traced: the call's execute_tool span is the active span inside the tool.
    work = enterRunContext(
      ctx,
      tracing
        ? () => tracing.inCall(ctx.toolCallId, () => invoke(tool, args, args, ctx, 0))
        : () => invoke(tool, args, args, ctx, 0),
    );
  } catch (error) {
    ended();
    settle(classify(run, error, stopper));
    return;
  }
  work.then(
    (value) => {
      leaveRunContext(!run.closed);
      ended();
      settle(isAborted(value) ? CANCELLED : { kind: "value", value, ctx });
    },
    (error) => {
      leaveRunContext(!run.closed);
      ended();
      settle(classify(run, error, stopper));
    },
  );
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
    run.abort(error);
    return { kind: "cancelled" };
  }
  if (call.aborted) return { kind: "cancelled" };
  if (isInstance(error, BudgetExceeded)) {
    if (run.owns(error)) return { kind: "budget", error };
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
  if (isInstance(error, HostCallError))
    return { kind: "error", errorKind: "host_error", message: error.message, retryable: true };
  const hint = isInstance(error, ToolError) ? readHint(error) : undefined;
  return {
    kind: "error",
    errorKind: "tool_error",
    message: messageOf(error),
    ...(hint !== undefined && { hint }),
    retryable: true,
  };
}

function readHint(error: ToolError): string | undefined {
  try {
    return typeof error.hint === "string" ? error.hint : undefined;
  } catch {
    return undefined;
  }
}
