import { UserError } from "../../errors.js";
import type { Model } from "../../model/types.js";

/**
 * Keeps a long conversation inside the model's context window without losing any of it: the
 * transcript, the log and `result.messages` keep everything; only what the model is shown
 * changes (see docs/compaction.md).
 */
export interface CompactionOptions {
  /** The most input tokens one request may carry: system prompt, tool definitions and messages. */
  maxInputTokens: number;
  /**
   * The last turns that are never summarised (a turn: the user's message, the model's reply, its
   * tool results). Their results become stubs only when nothing older is left to elide; the
   * latest turn is always shown whole. Default 4.
   */
  keepRecentTurns?: number;
  /**
   * Writes the summary that replaces the oldest turns once eliding tool results is not enough: a
   * `Model`, or `"provider:model-id"` (a small, cheap model does this well).
   */
  summarize?: Model | string;
}

/** Settings checked and defaulted. */
export type Compaction = { maxInputTokens: number; keepRecentTurns: number; summarize?: Model };

export const DEFAULT_KEEP_RECENT_TURNS = 4;

/** Checks an agent's `compaction` setting (a bad one is a `UserError` naming the agent) and resolves its summarizer. */
export async function resolveCompaction(
  options: CompactionOptions | undefined,
  agent: string,
  resolveModel: (id: string) => Promise<Model>,
): Promise<Compaction | undefined> {
  if (options === undefined) return undefined;
  if (options === null || typeof options !== "object")
    throw new UserError(
      `agent "${agent}": compaction must be an object: { maxInputTokens, keepRecentTurns?, summarize? }`,
    );
  const { maxInputTokens, keepRecentTurns = DEFAULT_KEEP_RECENT_TURNS, summarize } = options;
  if (!Number.isInteger(maxInputTokens) || maxInputTokens < 1) {
    throw new UserError(
      `agent "${agent}": compaction.maxInputTokens must be a positive integer (the model's input limit in tokens), got ${String(maxInputTokens)}`,
    );
  }
  if (!Number.isInteger(keepRecentTurns) || keepRecentTurns < 1) {
    throw new UserError(
      `agent "${agent}": compaction.keepRecentTurns must be an integer of at least 1, got ${String(keepRecentTurns)}`,
    );
  }
  if (summarize === undefined) return { maxInputTokens, keepRecentTurns };
  if (typeof summarize === "string")
    return { maxInputTokens, keepRecentTurns, summarize: await resolveModel(summarize) };
  if (typeof summarize?.stream !== "function") {
    throw new UserError(
      `agent "${agent}": compaction.summarize must be a Model (an object with stream()) or "provider:model-id"`,
    );
  }
  return { maxInputTokens, keepRecentTurns, summarize };
}
