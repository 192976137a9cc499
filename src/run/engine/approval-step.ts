import type { ApprovalAnswer, ApprovalOutcome } from "../../contract/approvals.js";
import type { Permissions } from "../../contract/permissions.js";
import type { RunContext } from "../../contract/run-context.js";
import type { ToolCall } from "../../model/types.js";
import type { Tool } from "../../tool/tool.js";
import { StandardPermissions } from "../config/permissions.js";
import type { ActiveRun } from "../state/active-run.js";
import { messageOf } from "./tool-result.js";

export const DEFAULT_APPROVAL_TIMEOUT_MS = 600_000;
const DEFAULT_PERMISSIONS = new StandardPermissions();

/**
 * Step 3 of a call's preflight: permissions, then `needsApproval`, then (if anyone must be
 * asked) the pinned approval algorithm. Resolves to `undefined` when the call may run
 * without asking, else to the decision. Always fails closed.
 */
export function approveCall(
  run: ActiveRun,
  tool: Tool,
  call: ToolCall,
  args: unknown,
): ApprovalOutcome | undefined | Promise<ApprovalOutcome | undefined> {
  // The common case — standard rules, a tool that is neither destructive nor gated — decides
  // without building a context or awaiting anything.
  if (!run.agent.config.permissions && !tool.destructive && !tool.needsApproval) return undefined;
  return checkAndAsk(run, tool, call, args);
}

async function checkAndAsk(
  run: ActiveRun,
  tool: Tool,
  call: ToolCall,
  args: unknown,
): Promise<ApprovalOutcome | undefined> {
  const config = run.agent.config;
  const ctx = preflightContext(run, call);
  const permissions: Permissions = config.permissions ?? DEFAULT_PERMISSIONS;
  let askReason: string | undefined;
  try {
    const decision = await permissions.check(
      {
        name: tool.name,
        destructive: tool.destructive ?? false,
        readOnly: tool.readOnly ?? false,
        editTool: tool.editsFiles ?? false,
        ...(tool.permissionRule && { rule: (a: unknown) => tool.permissionRule!(a) }),
      },
      args,
      ctx,
    );
    if (decision.behavior === "deny")
      return deniedUnasked(run, call, { approved: false, by: "permissions", reason: decision.reason });
    if (decision.behavior === "ask") askReason = decision.reason;
  } catch (error) {
    return deniedUnasked(run, call, {
      approved: false,
      by: "error",
      reason: `the permission check failed: ${messageOf(error)}`,
    });
  }
  const bypass = permissions instanceof StandardPermissions && permissions.mode === "bypass";
  // A run above this one may have read untrusted text since this one started (a sibling call).
  const tainted = askReason === undefined && tool.destructive ? taintOf(run) : undefined;
  if (tainted && !bypass && (config.taintPolicy ?? "ask") === "ask") {
    askReason = `${tool.name} is destructive and this run has read untrusted content (${tainted})`;
  }
  try {
    const needs =
      typeof tool.needsApproval === "function"
        ? await tool.needsApproval(args, ctx)
        : tool.needsApproval === true;
    if (needs)
      askReason = askReason ? `${askReason}; ${tool.name} needs approval` : `${tool.name} needs approval`;
  } catch (error) {
    return deniedUnasked(run, call, {
      approved: false,
      by: "error",
      reason: `the approval check of ${tool.name} failed: ${messageOf(error)}`,
    });
  }
  if (askReason === undefined) return undefined;
  return ask(
    run,
    call,
    askReason,
    ctx,
    tool.describeCall ? await describeCall(tool.describeCall, args, ctx) : undefined,
  );
}

/**
 * A call denied before anyone was asked (a deny rule, a permission check or a `needsApproval`
 * predicate that threw): `approval_resolved` still records who denied it and why.
 */
function deniedUnasked(run: ActiveRun, call: ToolCall, outcome: ApprovalOutcome): ApprovalOutcome {
  run.events.emit({
    type: "approval_resolved",
    call,
    decision: "denied",
    by: outcome.by,
    ...(outcome.reason !== undefined && { reason: outcome.reason }),
  });
  return outcome;
}

type Prompt = { description: string; details?: unknown };

/** What the tool says about the call for the prompt; a failing description never blocks the question. */
async function describeCall(
  describe: (args: unknown, ctx: RunContext) => Prompt | Promise<Prompt>,
  args: unknown,
  ctx: RunContext,
): Promise<Prompt | undefined> {
  try {
    const prompt = await describe(args, ctx);
    return typeof prompt?.description === "string" ? prompt : undefined;
  } catch {
    return undefined;
  }
}

async function ask(
  run: ActiveRun,
  call: ToolCall,
  reason: string,
  ctx: RunContext,
  prompt?: Prompt,
): Promise<ApprovalOutcome> {
  const config = run.agent.config;
  const { decision, settle } = run.approvals.wait(call, run.runId);
  const event = run.events.emit({
    type: "approval_required",
    call,
    reason,
    ...(prompt && { description: prompt.description }),
    ...(prompt?.details !== undefined && { details: prompt.details }),
  });
  // Control methods are non-enumerable: the event stays a plain JSON record.
  Object.defineProperties(event, {
    approve: { value: () => void settle({ approved: true, by: "stream" }), enumerable: false },
    reject: {
      value: (why?: string) =>
        void settle({ approved: false, by: "stream", ...(why !== undefined && { reason: why }) }),
      enumerable: false,
    },
  });
  // Stored before anyone waits on it, so a decision can come from another process.
  const stored = run.events.flushed();
  if (stored) await stored;
  const timeoutMs = config.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
  const timer = setTimeout(
    () => settle({ approved: false, by: "timeout", reason: `nobody decided within ${timeoutMs} ms` }),
    timeoutMs,
  );
  const onAbort = () => settle({ approved: false, by: "cancelled", reason: "the run was cancelled" });
  run.control.signal.addEventListener("abort", onAbort, { once: true });
  if (run.control.signal.aborted) onAbort();
  let settled = false;
  void decision.then(() => {
    settled = true;
  });
  try {
    // 1. The stream consumer may decide before it pulls the next event.
    if (run.control.hasChannel) await Promise.race([decision, run.events.whenPassed(event)]);
    if (!settled) {
      // 2. Pulling on without deciding passes the decision to the agent's handler (the channel
      //    or a timeout may still decide first).
      const handler = approvalHandlerFor(run);
      const answer = handler
        ? await Promise.race([callHandler(handler, call, ctx), decision.then(() => "decided" as const)])
        : ("unanswered" as const);
      if (answer === "decided") {
        // settled meanwhile
      } else if (answer === "allow") settle({ approved: true, by: "handler" });
      else if (answer === "deny") settle({ approved: false, by: "handler" });
      else if (answer === "ask" || answer === "unanswered") {
        // 3. A stored run does not hold a process hostage: it parks, and a decision stored later
        //    (Runner.decide) lets Runner.resume continue it — across any number of restarts.
        //    A child run (an agent used as a tool) does not park: its parent would take the
        //    parked child for a finished call and go on without the approved work ever running.
        //    It waits like a run without a store, answered through the root handle.
        if (run.events.store && !run.parent) settle({ approved: false, by: "parked", parked: true });
        else if (answer === "unanswered" || !run.control.hasChannel) {
          // Nobody will answer: deny now and say how to answer, instead of a silent
          // `approvalTimeoutMs` wait. Only an explicit "ask" waits for `handle.approvals`.
          run.events.emit({ type: "warning", code: "approval_unanswered", message: unansweredMessage(call) });
          settle({
            approved: false,
            by: "no_channel",
            reason: `nobody answered the approval of ${call.name}, so it was denied`,
          });
        }
      } else settle({ approved: false, by: "error", reason: answer.error });
    }
    const outcome = await decision;
    if (outcome.parked) return outcome;
    run.events.emit({
      type: "approval_resolved",
      call,
      decision: outcome.approved ? "approved" : "denied",
      by: outcome.by,
      ...(outcome.reason !== undefined && { reason: outcome.reason }),
    });
    return outcome;
  } finally {
    clearTimeout(timer);
    run.control.signal.removeEventListener("abort", onAbort);
  }
}

function unansweredMessage(call: ToolCall): string {
  return (
    `${call.name} (call ${call.id}) needed approval and nobody answered, so it was denied. ` +
    "Answer in one of three ways: call ev.approve() or ev.reject() on the approval_required event before " +
    "pulling the next one; give the agent an approvalHandler that returns true or false; or give it " +
    'approvalHandler: () => "ask" and decide with handle.approvals.approve(callId) / reject(callId). ' +
    "A run with a store parks instead, to be decided later."
  );
}

type Handler = (call: ToolCall, ctx: RunContext) => ApprovalAnswer | Promise<ApprovalAnswer>;

/** A child run uses its own agent's handler, else the nearest ancestor's. */
function approvalHandlerFor(run: ActiveRun): Handler | undefined {
  for (let r: ActiveRun | undefined = run; r; r = r.parent?.run) {
    if (r.agent.config.approvalHandler) return r.agent.config.approvalHandler as Handler;
  }
  return undefined;
}

async function callHandler(
  handler: Handler,
  call: ToolCall,
  ctx: RunContext,
): Promise<"allow" | "deny" | "ask" | { error: string }> {
  try {
    const answer: unknown = await handler(call, ctx);
    if (answer === true || answer === "allow") return "allow";
    if (answer === false || answer === "deny") return "deny";
    if (answer === "ask") return "ask";
    return {
      error: `the approval handler answered ${JSON.stringify(answer)}, which is not true, false, "allow", "deny" or "ask"`,
    };
  } catch (error) {
    return { error: `the approval handler failed: ${messageOf(error)}` };
  }
}

function preflightContext(run: ActiveRun, call: ToolCall): RunContext {
  return {
    ...run.baseContext(),
    turn: run.turn,
    signal: run.control.signal,
    toolCallId: call.id,
    attempt: 0,
    idempotencyKey: `${run.runId}:${call.id}`,
    update: () => {},
  };
}

/** What untrusted text this run, or a run it works for, has read. */
function taintOf(run: ActiveRun): string | undefined {
  for (let r: ActiveRun | undefined = run; r; r = r.parent?.run) if (r.tainted) return r.tainted;
  return undefined;
}
