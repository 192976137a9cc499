import type { RunEvent } from "../../contract/events.js";
import type { TracerLike } from "../../contract/tracer.js";
import type { Model, ModelRequest } from "../../model/types.js";
import type { ModelTurn } from "./model-answer.js";

/**
 * What the run asks of its tracing (the tracing layer's `RunTracing` implements it): it sees every
 * event, wraps each model turn and each call, and tells a child run where to nest.
 */
export interface RunTracer {
  readonly tracer: TracerLike;
  readonly captureContent: boolean;
  /** Sees every event the run emits, after its base is stamped and before anyone else sees it. */
  observe(event: RunEvent): void;
  /**
   * A resumed run's span links to the trace its `run_started` recorded; the approvals decided
   * while it was parked (in the log, not seen by this tracer) go on their calls' spans.
   */
  linkTo(
    traceparent: string | undefined,
    decided?: ReadonlyMap<string, { approved: boolean; by: string; reason?: string }>,
  ): void;
  /** The span of one model turn, if tracing still works. */
  startChat(model: Model, request: ModelRequest): ChatTracer | undefined;
  /** Calls `fn` with the call's `execute_tool` span active. */
  inCall<T>(callId: string, fn: () => T): T;
  /** The trace context of a call's span: where a child run started by that call nests. */
  callContext(callId: string): unknown;
}

/** The span of one model turn. */
export interface ChatTracer {
  within<T>(fn: () => T): T;
  end(turn: ModelTurn): void;
  fail(error: unknown): void;
  abandon(): void;
  /**
   * A fallback chain moved on (`to` answers now, after `reason`): this span ends as failed and
   * the turn goes on in a new one that names `to`, so tokens and cost land on the model that spent them.
   */
  fellBack(to: string, reason: string): ChatTracer;
}
