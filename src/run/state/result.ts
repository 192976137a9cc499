import type { CallError, StopReason } from "../../contract/events.js";
import type { Message, ToolCall, Usage } from "../../model/types.js";
import type { Agent } from "../config/agent.js";

/** One call and what came of it. `output` is exactly what the model saw. */
export type ToolCallRecord = {
  call: ToolCall;
  ok: boolean;
  output: string;
  /** The raw return value; absent when the output was truncated or the record came from a log. */
  value?: unknown;
  truncated?: { originalChars: number };
  error?: CallError;
};

/** What a finished run returns. */
export type RunResult<T = string> = {
  runId: string;
  output: T;
  /** The whole transcript, always valid input for the next run. */
  messages: Message[];
  toolCalls: ToolCallRecord[];
  usage: Usage;
  stopReason: StopReason;
  lastAgent: Agent<any, any>;
  /** With `stopReason: "awaiting_approval"`: the calls the parked run waits on (decide them, then resume). */
  pending?: ToolCall[];
  /** The shared state the run ended with (`ctx.state`), when it has one. */
  state?: unknown;
};

export function emptyUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
}

/** Adds one turn's usage into a running total (in place). */
export function addUsage(total: Usage, delta: Partial<Usage>): void {
  total.inputTokens += delta.inputTokens ?? 0;
  total.outputTokens += delta.outputTokens ?? 0;
  total.totalTokens += delta.totalTokens ?? (delta.inputTokens ?? 0) + (delta.outputTokens ?? 0);
  if (delta.cachedInputTokens !== undefined)
    total.cachedInputTokens = (total.cachedInputTokens ?? 0) + delta.cachedInputTokens;
  if (delta.reasoningTokens !== undefined)
    total.reasoningTokens = (total.reasoningTokens ?? 0) + delta.reasoningTokens;
  if (delta.costUsd !== undefined) total.costUsd = (total.costUsd ?? 0) + delta.costUsd;
}
