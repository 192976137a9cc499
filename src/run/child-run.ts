import type { RunContext } from "../contract/run-context.js";
import { BudgetExceeded, ToolError } from "../errors.js";
import { toJsonText } from "../plain-json.js";
import type { RunStore } from "../store/types.js";
import { asError } from "../thrown.js";
import type { ChildRunRequest } from "./config/agent.js";
import { DEFAULT_MAX_TURNS } from "./config/run-options.js";
import { type RunState, replay } from "./durability/replay.js";
import { resumeLoop, resumesAfterFailure } from "./durability/resume.js";
import { runLoop } from "./engine/loop.js";
import { markTainted } from "./engine/taint.js";
import { ActiveRun } from "./state/active-run.js";
import { openTracing } from "./tracing/run-tracing.js";

/**
 * Runs an agent as a child run of `parent` for one of its calls (`agent.asTool()`): its own
 * `runId`, the parent's event stream, store and approval channel, its usage counted toward
 * every ancestor's budget, cancelled with the call. Its final output is the call's result; a
 * stop that is not an answer becomes an error the parent's model can act on.
 */
export async function runChild(
  parent: ActiveRun,
  request: ChildRunRequest,
  ctx: RunContext,
): Promise<string> {
  const { agent, input, budget, maxTurns } = request;
  const sink = parent.events.sink;
  const store = sink?.store;
  // Stored, a child run's id follows from its call: a parent resumed after a crash that runs the
  // call again (an idempotent agent tool) finds the child's log and goes on from it — the
  // child's completed calls are not run again, and their idempotency keys stay the same.
  const stored = store
    ? await storedChild(store, `${parent.runId}.${ctx.toolCallId}`, ctx.attempt)
    : undefined;
  if (stored?.finished !== undefined) {
    if (stored.tainted)
      taintedByChild(parent, ctx.toolCallId, `${agent.name} (a sub-agent) read ${stored.tainted}`);
    return stored.finished;
  }
  const options = {
    deps: parent.options.deps,
    ...(parent.options.sessionId !== undefined && { sessionId: parent.options.sessionId }),
    ...(parent.options.userId !== undefined && { userId: parent.options.userId }),
    maxTurns: maxTurns ?? DEFAULT_MAX_TURNS,
    ...(budget && { budget }),
    signal: ctx.signal,
    ...(stored && { runId: stored.runId }),
  };
  const child = new ActiveRun(
    agent,
    options,
    { queue: parent.events.queue, sink, trace: openTracing, childRuns: parent.childRuns },
    { run: parent, callId: ctx.toolCallId },
  );
  let result: Awaited<ReturnType<typeof runLoop>>;
  if (store) await sink!.acquire(child.runId);
  try {
    result = stored?.state ? await resumeLoop(child, stored.state) : await runLoop(child, input);
  } catch (error) {
    const failure = asError(error);
    child.events.emit({ type: "run_failed", name: failure.name, message: failure.message, kind: "internal" });
    throw error;
  } finally {
    if (sink?.store) await sink.release(child.runId);
  }
  // The store failed under the child: the parent's run fails with it (its writer is the same).
  if (sink?.failure) throw sink.failure;
  if (child.tainted)
    taintedByChild(parent, ctx.toolCallId, `${agent.name} (a sub-agent) read ${child.tainted}`);
  switch (result.stopReason) {
    case "completed":
    case "ends_turn":
      return typeof result.output === "string" ? result.output : toJsonText(result.output);
    case "budget": {
      const error = child.limits.stop!;
      // An ancestor's budget stops the ancestors too; the child's own is the parent's to handle.
      if (parent.limits.owns(error)) throw error;
      throw new BudgetExceeded(
        child.runId,
        error.limit,
        `${agent.name} ran out of its budget (${error.message})`,
      );
    }
    case "max_turns":
      throw new ToolError(`${agent.name} did not finish within ${child.limits.maxTurns} turns`, {
        hint: "Give it a narrower task, or do the rest yourself.",
      });
    default:
      // "cancelled" (a child never parks: it waits for its approvals like a run without a store).
      if (ctx.signal.aborted) throw ctx.signal.reason;
      throw new ToolError(`${agent.name} was cancelled before it finished`);
  }
}

/**
 * A sub-agent read untrusted text: its caller is tainted, and the call's result (the sub-agent's
 * answer, which may repeat it) is marked untrusted in the caller's transcript.
 */
function taintedByChild(parent: ActiveRun, callId: string, source: string): void {
  markTainted(parent, source);
  parent.untrustedCalls = (parent.untrustedCalls ?? new Set()).add(callId);
}

/**
 * The stored child run of this call: its id (`<parent>.<call>`, `.<attempt>` after the first
 * attempt), and, when the store holds it, its state to go on from — or, when it had completed,
 * the answer it gave. A child that ended otherwise (failed, cancelled) starts over under the next
 * free id.
 */
async function storedChild(
  store: RunStore,
  base: string,
  attempt: number,
): Promise<{ runId: string; state?: RunState; finished?: string; tainted?: string }> {
  for (let n = attempt; ; n++) {
    const runId = n === 1 ? base : `${base}.${n}`;
    const events = await store.read(runId);
    if (events.length === 0) return { runId };
    const state = replay(events);
    if (state.status === "running" || resumesAfterFailure(state)) return { runId, state };
    if (
      state.status === "completed" &&
      (state.stopReason === "completed" || state.stopReason === "ends_turn")
    )
      return {
        runId,
        finished: typeof state.output === "string" ? state.output : toJsonText(state.output),
        ...(state.tainted !== undefined && { tainted: state.tainted }),
      };
  }
}
