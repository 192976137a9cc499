import type { CallError, StopReason } from "../../contract/events.js";
import type { Message, ToolCall, Usage } from "../../model/types.js";
import type { Agent } from "../config/agent.js";

/** One call and what came of it. `output` is exactly what the model saw. */
export type ToolCallRecord = {
  /** The call as the model requested it (`id` unique within the run). */
  call: ToolCall;
  /** Whether the call succeeded; `false` with `error` set. */
  ok: boolean;
  /** Exactly the text the model read (rendered, truncated, or the error message). */
  output: string;
  /** The raw return value; absent when the output was truncated or the record came from a log. */
  value?: unknown;
  /** Set when `output` was cut to the tool's `maxOutputChars`: the length before. */
  truncated?: { originalChars: number };
  /** Why the call failed (`kind`, `message`), when it did. */
  error?: CallError;
};

/** What a finished run returns. */
export type RunResult<T = string> = {
  /** The run's id (the `runId` option, else a fresh one); the key of its stored log. */
  runId: string;
  /** The final answer: the last assistant text, or the validated value with `outputType`. */
  output: T;
  /** The whole transcript, always valid input for the next run. */
  messages: Message[];
  /** Every call and what came of it, in request order, turn by turn. */
  toolCalls: ToolCallRecord[];
  /** Tokens (and cost, when known) across every turn of the run, child runs included. */
  usage: Usage;
  /** Why the run stopped: `completed`, `ends_turn`, `budget`, `cancelled`, `max_turns` or `awaiting_approval`. */
  stopReason: StopReason;
  /** The agent that answered last (another than the one started after a handoff). */
  lastAgent: Agent<any, any>;
  /** With `stopReason: "awaiting_approval"`: the calls the parked run waits on (decide them, then resume). */
  pending?: ToolCall[];
  /** The shared state the run ended with (`ctx.state`), when it has one. */
  state?: unknown;
};

/** A zero `Usage`, to add turns into. */
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
  if (delta.cacheWriteTokens !== undefined)
    total.cacheWriteTokens = (total.cacheWriteTokens ?? 0) + delta.cacheWriteTokens;
  if (delta.reasoningTokens !== undefined)
    total.reasoningTokens = (total.reasoningTokens ?? 0) + delta.reasoningTokens;
  if (delta.costUsd !== undefined) total.costUsd = (total.costUsd ?? 0) + delta.costUsd;
}
