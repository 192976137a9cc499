import type { ToolErrorKind } from "../errors.js";
import type { ContentBlock, FinishReason, Message, ToolCall, Usage } from "../model/types.js";
import type { GuardrailStage } from "./guardrails.js";

/** Why a run stopped without failing. */
export type StopReason =
  | "completed"
  | "ends_turn"
  | "budget"
  | "cancelled"
  | "max_turns"
  /** Stored runs only: a call waits for a decision (`Runner.decide`), then `Runner.resume`. */
  | "awaiting_approval";

/** Fields every event carries. `seq` increases by one per run; `at` is epoch ms. */
export type EventBase = {
  runId: string;
  seq: number;
  at: number;
  /** The name of the agent the event belongs to. */
  agent: string;
  /** Agent names from the root run down, on events of child runs. */
  path?: string[];
  /** On events of child runs: the run, and the call of it, that started this one. */
  parentRunId?: string;
  parentCallId?: string;
};

/** A failed call's error as observers and `ToolCallRecord.error` see it. */
export type CallError = {
  /** Why the call failed (`timeout`, `denied`, `tool_error`…): switch on it. */
  kind: ToolErrorKind;
  /** The error text the model read. */
  message: string;
};

/**
 * Why a run failed, as `run_failed.kind` (and a stored run's `failureKind`) says it:
 * `store_unavailable` is the one a run survives (resume it once the store answers again).
 */
export type RunFailedKind =
  | "user_error"
  | "provider_error"
  | "output_invalid"
  | "guardrail_tripped"
  | "store_error"
  | "store_unavailable"
  | "lease_conflict"
  | "internal";

type Body =
  /** `traceparent`: the run's `invoke_agent` span (W3C trace context) when the run is traced. */
  | {
      type: "run_started";
      input: Message[];
      sessionId?: string;
      userId?: string;
      parentCallId?: string;
      traceparent?: string;
      /** The run's shared state as it started (`RunOptions.state`, or its session's), when it has one. */
      state?: unknown;
      /**
       * In a session: how many of `input`'s first messages are the conversation so far (read
       * from the store); the rest are what this run was given. `input.slice(history)` is the
       * new message.
       */
      history?: number;
    }
  /** `model`: the name of the model asked this turn. */
  | { type: "turn_started"; turn: number; model?: string }
  | { type: "text_delta"; delta: string }
  | { type: "reasoning_delta"; delta: string }
  /**
   * A message appended to the transcript. `queuedSeq`: it was sent with `inject()` or `followUp()`,
   * stored then as the `message_queued` event of that seq, and reaches the model now.
   */
  | { type: "message"; message: Message; queuedSeq?: number }
  /**
   * `handle.inject()` (`delivery: "inject"`, before the next model request) or `handle.followUp()`
   * (`"followUp"`, when the run would otherwise stop) accepted a message. Stored at once, so a
   * run resumed after a crash still delivers it; its `message` event follows when it is delivered.
   */
  | { type: "message_queued"; message: Message; delivery: "inject" | "followUp" }
  /** `repairs`: what the provider fixed in malformed argument JSON before it could be parsed. */
  | { type: "tool_call_requested"; call: ToolCall; index: number; repairs?: string[] }
  /** `callId`: the call's run-unique id, claimed at its first delta (the id its later events carry). */
  | { type: "tool_call_input_delta"; index: number; callId: string; name?: string; delta: string }
  | {
      type: "approval_required";
      call: ToolCall;
      reason?: string;
      /** What the call will do, in words, when its tool says (the workspace: "Edit src/a.ts …"). */
      description?: string;
      /** More for the prompt when its tool gives it (the workspace: `{ path, diff }` for edits). */
      details?: unknown;
      /** Approve the call. Call it before pulling the next event. (Non-enumerable: never serialised.) */
      readonly approve: () => void;
      /** Deny the call; the model sees `reason`. Call it before pulling the next event. */
      readonly reject: (reason?: string) => void;
    }
  | {
      type: "approval_resolved";
      call: ToolCall;
      decision: "approved" | "denied";
      /** "stream", "handler", "channel", "permissions", "timeout", "cancelled", "error" or "no_channel". */
      by: string;
      reason?: string;
    }
  /** Untrusted output (a web page, an MCP result) entered the run: destructive tools now ask. */
  | { type: "run_tainted"; source: string; call?: ToolCall }
  | { type: "tool_call_started"; call: ToolCall; attempt: number }
  | { type: "tool_call_update"; call: ToolCall; partial: unknown }
  /** The run's shared state, whole, after a tool replaced it (`ctx.setState`); `call` is that tool's call. */
  | { type: "state_updated"; state: unknown; call?: ToolCall }
  | { type: "tool_call_retry"; call: ToolCall; attempt: number; delayMs: number; error: CallError }
  | {
      type: "tool_call_completed";
      call: ToolCall;
      ok: boolean;
      /** Exactly the text the model sees. */
      output: string;
      /** The raw return value: for live observers only, never persisted. */
      result?: unknown;
      error?: CallError;
      truncated?: { originalChars: number };
      details?: unknown;
      /** The tool message's content when it is more than text (images), so a log rebuilds it exactly. */
      content?: ContentBlock[];
      durationMs: number;
    }
  /** `transcript` is present when the handoff's `inputFilter` rewrote what the target sees. */
  | { type: "handoff"; from: string; to: string; call?: ToolCall; transcript?: Message[] }
  /**
   * Tokens one model answer spent (`model`: the model that answered, after any fallback; the
   * summarizer's for a compaction summary). `source` is set when the tokens were spent by a
   * child run (they count here too).
   */
  | { type: "usage"; usage: Partial<Usage>; total: Usage; model?: string; source?: string }
  | { type: "warning"; message: string; code?: string }
  /**
   * The model's view of the transcript changed (the transcript itself never does): `elided`
   * results now show as one-line stubs, and with `summary` the transcript's first
   * `summary.messages` messages show as one summary message. Replay applies these in order.
   */
  | {
      type: "compaction";
      elided: Array<{ callId: string; name: string; index: number; chars: number }>;
      summary?: { text: string; messages: number };
      /** Estimated input tokens of the request before and after the change. */
      tokensBefore: number;
      tokensAfter: number;
      maxInputTokens: number;
    }
  /**
   * `finish` and `usage` (the turn's own tokens) when the model's answer completed; `model` when
   * it came from another model than the one `turn_started` names (a fallback chain moved on).
   */
  | { type: "turn_completed"; turn: number; finish?: FinishReason; usage?: Partial<Usage>; model?: string }
  /** The turn's model failed (`reason`) and the next model of its fallback chain answers instead; discard what the turn streamed so far. */
  | { type: "model_fallback"; from: string; to: string; reason: string; turn: number }
  /** A guardrail's check passed; logged, so a resumed run never checks it again. `callId` for a tool's guardrails. */
  | {
      type: "guardrail_passed";
      guardrail: string;
      stage: GuardrailStage;
      callId?: string;
      durationMs: number;
    }
  /**
   * A guardrail tripped: on `input` or `output` the run fails next (`GuardrailTripped`); on
   * `tool_input` the call is not run, on `tool_output` its result is withheld (the model sees why).
   */
  | {
      type: "guardrail_tripped";
      guardrail: string;
      stage: GuardrailStage;
      reason: string;
      info?: unknown;
      callId?: string;
      durationMs: number;
    }
  | { type: "run_completed"; output: unknown; stopReason: StopReason; usage: Usage }
  /** A stored run released from memory while calls wait for approval; `Runner.resume` continues it. */
  | { type: "run_parked"; pending: ToolCall[] }
  /** A stored run picked up again (after a crash, a restart, or a decision). */
  | { type: "run_resumed"; fromSeq: number; traceparent?: string }
  /** `name` and `message` of the error the run rejects with; `kind` classifies it. */
  | { type: "run_failed"; name: string; message: string; kind: RunFailedKind };

type WithBase<B> = B extends unknown ? EventBase & B : never;

/** Every event a run emits: one discriminated union, switch on `type`. */
export type RunEvent = WithBase<Body>;
/** Every event `type` (`"run_started"`, `"text_delta"`, `"tool_call_completed"`…). */
export type RunEventType = RunEvent["type"];
/** The event of one `type`. */
export type EventOf<T extends RunEventType> = Extract<RunEvent, { type: T }>;
/** An event as the loop creates it, before the base fields are stamped on (and before control methods are attached). */
export type EventBody = Body extends infer B
  ? B extends { type: "approval_required" }
    ? Omit<B, "approve" | "reject">
    : B
  : never;
