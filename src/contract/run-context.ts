import type { Message, Usage } from "../model/types.js";

/**
 * The live, per-run handle a tool receives as `execute`'s second argument and can read
 * anywhere inside its call with `getRunContext()`. One object per call attempt.
 */
export interface RunContext<Deps = unknown> {
  readonly runId: string;
  readonly parentRunId?: string;
  readonly parentCallId?: string;
  /** Names of the agents from the root run down to this one (`["root", "researcher"]`). */
  readonly path: readonly string[];
  readonly sessionId?: string;
  readonly userId?: string;
  readonly deps: Deps;
  /** The name of the agent running this call. */
  readonly agent: string;
  /** The turn number (1-based) whose model response requested this call. */
  readonly turn: number;
  /** The transcript so far. Read-only: the runner owns it. */
  readonly transcript: readonly Message[];
  /** The run's usage so far. */
  readonly usage: Readonly<Usage>;
  /** Aborted when this attempt times out or the run is cancelled. Pass it to fetch and friends. */
  readonly signal: AbortSignal;
  /** The call's id, unique within the run. */
  readonly toolCallId: string;
  /** 1 for the first attempt, 2 for the first retry… */
  readonly attempt: number;
  /** `runId:toolCallId`: stable across retries and resumes, for exactly-once side effects. */
  readonly idempotencyKey: string;
  /** Report progress; observers see it as a `tool_call_update` event. */
  update(partial: unknown): void;
}
