import { type Event as AgUiEvent, EventType, type Interrupt } from "@ag-ui/core";
import type { RunEvent, ToolCall } from "../index.js";

/** What a run waits for when an AG-UI response ends before it is over. */
export type Waits = {
  /** Approvals and `ask_human` questions: the response ends with an interrupt outcome. */
  interrupts: Interrupt[];
  /** Calls of the client's own tools: the client answers them with `tool` messages. */
  clientCalls: string[];
};

/**
 * Turns a run's events into AG-UI events, keeping the invariants `@ag-ui/client` verifies: text
 * and reasoning sit inside start/end pairs, each tool call is started, given its arguments and
 * ended before its result, steps (one per model turn) are closed before the run finishes, and
 * nothing follows RUN_FINISHED or RUN_ERROR.
 *
 * One Quiver run may span several AG-UI runs (requests): a response ends where the run waits for
 * a person or the client (`blocked()`), and the next request's response continues from there
 * after `prime()` has replayed what was already sent. Ids derive from the run's events (run id
 * and seq), so a replay names every message as the first pass did. Events of child runs (agents
 * used as tools) are not shown: their parent's call and its result are.
 */
export class AgUiTranslator {
  readonly #runId: string;
  readonly #threadId: string;
  readonly #aguiRunId: string;
  readonly #clientTools: ReadonlySet<string>;
  #text: string | undefined;
  #reasoning: string | undefined;
  #step: string | undefined;
  /** The assistant message the current turn's tool calls belong to. */
  #parent: string | undefined;
  /** The text and reasoning messages of the current turn: a fallback or a restart discards them. */
  #turnMessages: string[] = [];
  readonly #shown = new Set<string>();
  /** Client-tool calls whose result came from the client (it has it already). */
  readonly #answered = new Set<string>();
  #finished = false;

  constructor(runId: string, threadId: string, aguiRunId: string, clientTools: ReadonlySet<string>) {
    this.#runId = runId;
    this.#threadId = threadId;
    this.#aguiRunId = aguiRunId;
    this.#clientTools = clientTools;
  }

  /** True once RUN_FINISHED or RUN_ERROR was produced: nothing may follow. */
  get finished(): boolean {
    return this.#finished;
  }

  /** Closes the turn's open messages and returns their ids: what was streamed is void. */
  #discardTurn(out: AgUiEvent[]): string[] {
    this.#closeParts(out);
    const ids = this.#turnMessages;
    this.#turnMessages = [];
    if (ids.includes(this.#parent ?? "")) this.#parent = undefined;
    return ids;
  }

  translate(event: RunEvent, out: AgUiEvent[]): void {
    if (this.#finished || event.runId !== this.#runId) return;
    switch (event.type) {
      // The state the run started from (the client's, as stored) and every change to it, whole.
      case "run_started":
        if (hasState(event.state)) out.push({ type: EventType.STATE_SNAPSHOT, snapshot: event.state });
        return;
      case "state_updated":
        out.push({ type: EventType.STATE_SNAPSHOT, snapshot: event.state });
        return;
      case "turn_started":
        this.#closeParts(out);
        this.#closeStep(out);
        this.#step = `turn ${event.turn}`;
        out.push({ type: EventType.STEP_STARTED, stepName: this.#step });
        this.#parent = undefined;
        this.#turnMessages = [];
        return;
      case "text_delta":
        if (event.delta === "") return;
        this.#closeReasoning(out);
        if (this.#text === undefined) {
          this.#text = `${this.#runId}-${event.seq}`;
          this.#parent = this.#text;
          this.#turnMessages.push(this.#text);
          out.push({ type: EventType.TEXT_MESSAGE_START, messageId: this.#text, role: "assistant" });
        }
        out.push({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: this.#text, delta: event.delta });
        return;
      case "reasoning_delta":
        if (event.delta === "") return;
        this.#closeText(out);
        if (this.#reasoning === undefined) {
          this.#reasoning = `${this.#runId}-${event.seq}`;
          this.#turnMessages.push(this.#reasoning);
          out.push({ type: EventType.REASONING_START, messageId: this.#reasoning });
          out.push({
            type: EventType.REASONING_MESSAGE_START,
            messageId: this.#reasoning,
            role: "reasoning",
          });
        }
        out.push({
          type: EventType.REASONING_MESSAGE_CONTENT,
          messageId: this.#reasoning,
          delta: event.delta,
        });
        return;
      case "tool_call_requested":
      case "approval_required":
        this.#showCall(event.call, event.seq, out);
        return;
      case "approval_resolved":
        if (event.decision === "approved" && this.#clientTools.has(event.call.name))
          this.#answered.add(event.call.id);
        return;
      case "tool_call_completed": {
        const id = event.call.id;
        // The client ran it and holds the result already: sending it back would repeat it.
        if (this.#answered.has(id)) return;
        this.#showCall(event.call, event.seq, out);
        this.#closeParts(out);
        out.push({
          type: EventType.TOOL_CALL_RESULT,
          messageId: `${this.#runId}-result-${id}`,
          toolCallId: id,
          content: event.output,
          role: "tool",
        });
        return;
      }
      case "warning": {
        // A provider's restart discards what the turn streamed: the client is told which messages.
        const discarded = event.code === "model_reset" ? this.#discardTurn(out) : undefined;
        out.push({
          type: EventType.CUSTOM,
          name: "quiver.warning",
          value: {
            message: event.message,
            ...(event.code && { code: event.code }),
            ...(discarded && { discardedMessageIds: discarded }),
          },
        });
        return;
      }
      // AG-UI cannot retract a message: the event names the ones the failed model streamed.
      case "model_fallback":
        out.push({
          type: EventType.CUSTOM,
          name: "quiver.model_fallback",
          value: {
            from: event.from,
            to: event.to,
            reason: event.reason,
            turn: event.turn,
            discardedMessageIds: this.#discardTurn(out),
          },
        });
        return;
      case "run_completed":
        if (event.stopReason === "awaiting_approval") return;
        this.#finish(
          out,
          event.stopReason === "cancelled" ? { type: "cancelled" } : { type: "success" },
          event.output,
          event.stopReason,
        );
        return;
      case "run_failed":
        this.#closeParts(out);
        out.push({ type: EventType.RUN_ERROR, message: `${event.name}: ${event.message}`, code: event.kind });
        this.#finished = true;
        return;
    }
  }

  /** Ends a response where the run waits: approvals and questions interrupt, client calls are pending. */
  blocked(out: AgUiEvent[], waits: Waits): void {
    if (this.#finished) return;
    if (waits.interrupts.length > 0) this.#finish(out, { type: "interrupt", interrupts: waits.interrupts });
    else this.#finish(out, { type: "success", pendingToolCallIds: waits.clientCalls });
  }

  /** Replays what an earlier response sent, producing nothing, so a continuation refers to the same ids. */
  prime(events: readonly RunEvent[]): void {
    const discard: AgUiEvent[] = [];
    for (const event of events) this.translate(event, discard);
    this.#text = undefined;
    this.#reasoning = undefined;
    this.#step = undefined;
    this.#finished = false;
  }

  /** Ends a response whose run is over without its final event in view (loaded, or not driven here). */
  end(out: AgUiEvent[], status: "failed" | "detached" | "completed"): void {
    if (this.#finished) return;
    if (status === "failed") {
      this.#closeParts(out);
      out.push({ type: EventType.RUN_ERROR, message: "the run failed" });
      this.#finished = true;
      return;
    }
    this.#finish(out, { type: "success" }, undefined, status === "detached" ? "detached" : undefined);
  }

  #finish(
    out: AgUiEvent[],
    outcome: NonNullable<Extract<AgUiEvent, { type: EventType.RUN_FINISHED }>["outcome"]>,
    result?: unknown,
    stopReason?: string,
  ): void {
    this.#closeParts(out);
    this.#closeStep(out);
    out.push({
      type: EventType.RUN_FINISHED,
      threadId: this.#threadId,
      runId: this.#aguiRunId,
      outcome,
      ...(result !== undefined && { result }),
      metadata: { quiver: { runId: this.#runId, ...(stopReason !== undefined && { stopReason }) } },
    });
    this.#finished = true;
  }

  #showCall(call: ToolCall, seq: number, out: AgUiEvent[]): void {
    if (this.#shown.has(call.id)) return;
    this.#shown.add(call.id);
    this.#closeParts(out);
    this.#parent ??= `${this.#runId}-${seq}`;
    out.push({
      type: EventType.TOOL_CALL_START,
      toolCallId: call.id,
      toolCallName: call.name,
      parentMessageId: this.#parent,
    });
    out.push({ type: EventType.TOOL_CALL_ARGS, toolCallId: call.id, delta: JSON.stringify(call.args ?? {}) });
    out.push({ type: EventType.TOOL_CALL_END, toolCallId: call.id });
  }

  #closeStep(out: AgUiEvent[]): void {
    if (this.#step === undefined) return;
    out.push({ type: EventType.STEP_FINISHED, stepName: this.#step });
    this.#step = undefined;
  }

  #closeParts(out: AgUiEvent[]): void {
    this.#closeText(out);
    this.#closeReasoning(out);
  }

  #closeText(out: AgUiEvent[]): void {
    if (this.#text === undefined) return;
    out.push({ type: EventType.TEXT_MESSAGE_END, messageId: this.#text });
    this.#text = undefined;
  }

  #closeReasoning(out: AgUiEvent[]): void {
    if (this.#reasoning === undefined) return;
    out.push({ type: EventType.REASONING_MESSAGE_END, messageId: this.#reasoning });
    out.push({ type: EventType.REASONING_END, messageId: this.#reasoning });
    this.#reasoning = undefined;
  }
}

/**
 * Whether a state says anything: `undefined` and `{}` (what a client that keeps no state sends)
 * are not worth a snapshot; a change to `{}` is still sent as `state_updated`.
 */
export function hasState(state: unknown): boolean {
  if (state === undefined) return false;
  if (typeof state !== "object" || state === null || Array.isArray(state)) return true;
  for (const _ in state) return true;
  return false;
}
