import { isAborted, raceAbort } from "../abort.js";
import { type BudgetExceeded, InvalidToolArguments } from "../errors.js";
import type { ToolCall } from "../model/types.js";
import type { Tool } from "../tool/tool.js";
import type { ActiveRun } from "./active-run.js";
import { approveCall } from "./approval-flow.js";
import type { ApprovalOutcome } from "./approvals.js";
import { runAttempts } from "./attempts.js";
import {
  type CallResult,
  DEFAULT_MAX_IMAGE_BYTES,
  DEFAULT_MAX_TOOL_OUTPUT_CHARS,
  errorResult,
  successResult,
} from "./tool-result.js";
import type { Toolset } from "./toolset.js";

/** A call the model requested, with its JSON parse failure if any. */
export type RequestedCall = { call: ToolCall; parseError?: string };

/** What one turn's calls came to. `results` is in request order. */
export type TurnExecution = {
  results: CallResult[];
  /** The run must stop after this turn (cancelled, or its own budget ran out inside a tool). */
  stop?: { reason: "cancelled" } | { reason: "budget"; error: BudgetExceeded };
  /** A tool marked `endsTurn` succeeded. */
  endedBy?: Tool;
};

/**
 * Runs one turn's calls as DESIGN.md pins it: preflight serially in request order (lookup,
 * JSON, arguments; approvals and budgets plug in here), each call starting as soon as its
 * preflight passes; a `parallel: false` tool waits for in-flight calls, runs alone, then later
 * calls proceed. Events come in completion order; results are returned in request order.
 */
export async function executeTurn(
  run: ActiveRun,
  toolset: Toolset,
  requested: RequestedCall[],
): Promise<TurnExecution> {
  const results: Array<CallResult | undefined> = new Array(requested.length);
  const started = new Set<number>();
  const inFlight = new Set<Promise<void>>();
  const execution: TurnExecution = { results: [] };
  const config = run.agent.config;
  const turn = run.turn;

  const finish = (
    index: number,
    result: CallResult,
    durationMs: number,
    value?: unknown,
    synthesised = false,
  ) => {
    // After a cancel, a late completion is dropped: the call already has its `cancelled` result.
    if (results[index] || (run.signal.aborted && !synthesised)) return;
    results[index] = result;
    const { record } = result;
    run.emit({
      type: "tool_call_completed",
      call: record.call,
      ok: record.ok,
      output: record.output,
      ...(value !== undefined && { result: value }),
      ...(record.error && { error: record.error }),
      ...(record.truncated && { truncated: record.truncated }),
      ...(result.details !== undefined && { details: result.details }),
      durationMs,
    });
  };

  const start = (index: number, tool: Tool, args: unknown): Promise<void> => {
    started.add(index);
    const { call } = requested[index]!;
    const startedAt = performance.now();
    return runAttempts(run, tool, call, args, {
      retries: tool.retries ?? config.defaultToolRetries ?? 0,
      ...((tool.timeoutMs ?? config.defaultToolTimeoutMs) !== undefined && {
        timeoutMs: tool.timeoutMs ?? config.defaultToolTimeoutMs!,
      }),
      ...(tool.retryBackoff && { backoff: tool.retryBackoff }),
      turn,
    }).then((outcome) => {
      const ms = Math.round(performance.now() - startedAt);
      switch (outcome.kind) {
        case "value": {
          const result = successResult(tool, call, outcome.value, outcome.ctx, {
            maxOutputChars: tool.maxOutputChars ?? config.maxToolOutputChars ?? DEFAULT_MAX_TOOL_OUTPUT_CHARS,
            maxImageBytes: config.maxImageBytes ?? DEFAULT_MAX_IMAGE_BYTES,
            ...(config.toolResultRenderer && { agentRenderer: config.toolResultRenderer }),
          });
          finish(index, result, ms, outcome.value);
          if (result.record.ok && tool.untrustedOutput && !run.tainted) {
            run.tainted = `${tool.name} output`;
            run.emit({ type: "run_tainted", source: run.tainted, call });
          }
          if (result.record.ok && tool.endsTurn && !execution.endedBy) execution.endedBy = tool;
          return;
        }
        case "error":
          finish(index, errorResult(call, outcome.errorKind, outcome.message, outcome.hint), ms);
          return;
        case "budget":
          finish(index, errorResult(call, "budget", outcome.error.message), ms);
          execution.stop ??= { reason: "budget", error: outcome.error };
          return;
        case "cancelled":
          return;
      }
    });
  };

  const limit = config.maxConcurrentToolCalls ?? Number.POSITIVE_INFINITY;
  const track = (promise: Promise<void>) => {
    inFlight.add(promise);
    void promise.finally(() => inFlight.delete(promise));
  };
  const waitFor = async (promises: Promise<unknown>): Promise<boolean> =>
    !isAborted(await raceAbort(promises, run.signal));

  for (const [index, { call, parseError }] of requested.entries()) {
    if (run.signal.aborted || execution.stop) break;
    const tool = toolset.get(call.name);
    if (!tool) {
      finish(index, unknownTool(call, toolset), 0);
      continue;
    }
    if (parseError !== undefined) {
      finish(
        index,
        errorResult(
          call,
          "malformed_json",
          `the arguments for ${call.name} are not valid JSON (${parseError})`,
          "Send the arguments as one JSON object.",
        ),
        0,
      );
      continue;
    }
    const validation = await tool.parseArguments(call.args);
    if (!validation.ok) {
      const error = new InvalidToolArguments(tool.name, validation.issues);
      finish(index, errorResult(call, "invalid_arguments", error.message, error.hint), 0);
      continue;
    }
    const approval = await approveCall(run, tool, call, validation.value);
    if (run.signal.aborted) break;
    if (approval && !approval.approved) {
      finish(index, deniedResult(call, approval), 0);
      continue;
    }
    if (tool.parallel === false) {
      if (!(await waitFor(Promise.all(inFlight)))) break;
      if (!(await waitFor(start(index, tool, validation.value)))) break;
      continue;
    }
    while (inFlight.size >= limit) if (!(await waitFor(Promise.race(inFlight)))) break;
    if (run.signal.aborted) break;
    track(start(index, tool, validation.value));
  }
  await waitFor(Promise.all(inFlight));

  if (run.signal.aborted) execution.stop = { reason: "cancelled" };
  // Every requested call gets a result, so the transcript stays valid input for the next run.
  for (const [index, { call }] of requested.entries()) {
    if (results[index]) continue;
    const result = started.has(index)
      ? errorResult(call, "cancelled", `${call.name} was cancelled before it finished: the run stopped`)
      : errorResult(call, "skipped", `${call.name} did not run: the run stopped before it started`);
    finish(index, result, 0, undefined, true);
  }
  execution.results = results as CallResult[];
  return execution;
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
