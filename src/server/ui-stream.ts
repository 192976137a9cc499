import type { RunEvent, StopReason, ToolCall } from "../index.js";

/** One chunk of the AI SDK's UI message stream (v1), limited to types ai 6 and ai 7 both accept. */
export type UIChunk = { type: string } & Record<string, unknown>;

/**
 * Turns a run's events into UI message stream chunks, keeping the invariants the AI SDK's
 * clients enforce: text and reasoning deltas sit inside a start/end pair, a tool's output or
 * approval request only follows its `tool-input-available`, steps open and close in pairs.
 *
 * A call's approval request is held back until the run actually waits for a person
 * (`blocked()`): an approval the agent's own handler settles a moment later never flashes
 * buttons. Facts the AI SDK has no chunk for (warnings, retries, handoffs, taint) become
 * `data-quiver-*` parts; usage and the stop reason go in the message metadata.
 */
export class UIStreamTranslator {
  readonly #rootRunId: string;
  #text: string | undefined;
  #reasoning: string | undefined;
  #partCounter = 0;
  #stepOpen = false;
  readonly #seen = new Set<string>();
  readonly #denied = new Set<string>();
  /** Calls that asked for approval and were neither decided nor announced yet. */
  readonly #asking = new Map<string, string | undefined>();
  readonly #announced = new Set<string>();
  #finished = false;

  constructor(rootRunId: string) {
    this.#rootRunId = rootRunId;
  }

  /** True once a `finish` (or `error`) chunk was produced: nothing may follow. */
  get finished(): boolean {
    return this.#finished;
  }

  /** The id a call has on the wire: a child run's calls are prefixed with the child's run id. */
  uiCallId(event: RunEvent, call: ToolCall): string {
    return event.runId === this.#rootRunId ? call.id : `${event.runId}/${call.id}`;
  }

  translate(event: RunEvent, out: UIChunk[]): void {
    if (this.#finished) return;
    const root = event.runId === this.#rootRunId;
    switch (event.type) {
      case "turn_started":
        if (!root) return;
        this.#closeParts(out);
        if (this.#stepOpen) out.push({ type: "finish-step" });
        out.push({ type: "start-step" });
        this.#stepOpen = true;
        return;
      case "text_delta":
        if (!root || event.delta === "") return;
        this.#openStep(out);
        this.#closeReasoning(out);
        if (this.#text === undefined) {
          this.#text = `text_${++this.#partCounter}`;
          out.push({ type: "text-start", id: this.#text });
        }
        out.push({ type: "text-delta", id: this.#text, delta: event.delta });
        return;
      case "reasoning_delta":
        if (!root || event.delta === "") return;
        this.#openStep(out);
        this.#closeText(out);
        if (this.#reasoning === undefined) {
          this.#reasoning = `reasoning_${++this.#partCounter}`;
          out.push({ type: "reasoning-start", id: this.#reasoning });
        }
        out.push({ type: "reasoning-delta", id: this.#reasoning, delta: event.delta });
        return;
      case "tool_call_requested":
        this.#showCall(event, event.call, out);
        return;
      case "approval_required":
        this.#showCall(event, event.call, out);
        this.#asking.set(this.uiCallId(event, event.call), event.reason);
        return;
      case "approval_resolved": {
        const id = this.uiCallId(event, event.call);
        this.#asking.delete(id);
        if (event.decision === "denied") {
          this.#showCall(event, event.call, out);
          this.#denied.add(id);
          out.push({ type: "tool-output-denied", toolCallId: id });
        }
        return;
      }
      case "tool_call_update": {
        const id = this.uiCallId(event, event.call);
        if (this.#denied.has(id)) return;
        this.#showCall(event, event.call, out);
        out.push({ type: "tool-output-available", toolCallId: id, output: event.partial, preliminary: true });
        return;
      }
      case "tool_call_completed": {
        const id = this.uiCallId(event, event.call);
        if (this.#denied.has(id)) return;
        this.#showCall(event, event.call, out);
        if (event.ok) out.push({ type: "tool-output-available", toolCallId: id, output: event.output });
        else
          out.push({
            type: "tool-output-error",
            toolCallId: id,
            errorText: event.error?.message ?? event.output,
          });
        return;
      }
      case "warning":
        out.push({
          type: "data-quiver-warning",
          data: { message: event.message, ...(event.code && { code: event.code }), runId: event.runId },
        });
        return;
      case "tool_call_retry":
        out.push({
          type: "data-quiver-retry",
          data: {
            toolCallId: this.uiCallId(event, event.call),
            attempt: event.attempt,
            delayMs: event.delayMs,
            error: event.error,
          },
        });
        return;
      case "handoff":
        if (!root) return;
        out.push({ type: "data-quiver-handoff", data: { from: event.from, to: event.to } });
        return;
      case "run_tainted":
        if (!root) return;
        out.push({ type: "data-quiver-taint", id: "taint", data: { source: event.source } });
        return;
      case "usage":
        if (!root) return;
        out.push({ type: "message-metadata", messageMetadata: { quiver: { usage: event.total } } });
        return;
      case "run_completed":
        if (!root || event.stopReason === "awaiting_approval") return;
        this.#finish(out, event.stopReason);
        return;
      case "run_failed":
        if (!root) return;
        this.#closeParts(out);
        out.push({ type: "error", errorText: `${event.name}: ${event.message}` });
        this.#finished = true;
        return;
    }
  }

  /**
   * Ends a response at the point where the run waits for a person: the approvals still open
   * are announced (the client can only answer them once the response has ended).
   */
  blocked(out: UIChunk[]): void {
    if (this.#finished) return;
    this.#closeParts(out);
    for (const [id, reason] of this.#asking) {
      if (this.#announced.has(id)) continue;
      this.#announced.add(id);
      out.push({
        type: "tool-approval-request",
        approvalId: id,
        toolCallId: id,
        ...(reason !== undefined && { reason }),
      });
    }
    if (this.#stepOpen) out.push({ type: "finish-step" });
    this.#stepOpen = false;
    out.push({
      type: "finish",
      finishReason: "tool-calls",
      messageMetadata: { quiver: { stopReason: "awaiting_approval" } },
    });
    this.#finished = true;
  }

  /**
   * Replays what an earlier response already sent (up to the point where it ended, waiting for
   * a person) without producing output, so a continuation refers to the same parts.
   */
  prime(events: readonly RunEvent[]): void {
    const discard: UIChunk[] = [];
    for (const event of events) this.translate(event, discard);
    this.blocked(discard);
    this.#finished = false;
  }

  /** Ends a response whose run is over but whose final event was not in view (e.g. loaded state). */
  end(out: UIChunk[], stopReason: StopReason | "failed" | "unknown"): void {
    if (this.#finished) return;
    if (stopReason === "failed") {
      this.#closeParts(out);
      out.push({ type: "error", errorText: "the run failed" });
      this.#finished = true;
      return;
    }
    this.#finish(out, stopReason);
  }

  #finish(out: UIChunk[], stopReason: StopReason | "unknown"): void {
    this.#closeParts(out);
    if (this.#stepOpen) out.push({ type: "finish-step" });
    this.#stepOpen = false;
    out.push({
      type: "finish",
      finishReason: stopReason === "completed" || stopReason === "ends_turn" ? "stop" : "other",
      messageMetadata: { quiver: { stopReason } },
    });
    this.#finished = true;
  }

  #showCall(event: RunEvent, call: ToolCall, out: UIChunk[]): void {
    const id = this.uiCallId(event, call);
    if (this.#seen.has(id)) return;
    this.#seen.add(id);
    this.#openStep(out);
    this.#closeParts(out);
    out.push({
      type: "tool-input-available",
      toolCallId: id,
      toolName: call.name,
      input: call.args ?? {},
      ...(event.runId !== this.#rootRunId && { title: `${event.agent}: ${call.name}` }),
    });
  }

  #openStep(out: UIChunk[]): void {
    if (this.#stepOpen) return;
    out.push({ type: "start-step" });
    this.#stepOpen = true;
  }

  #closeParts(out: UIChunk[]): void {
    this.#closeText(out);
    this.#closeReasoning(out);
  }

  #closeText(out: UIChunk[]): void {
    if (this.#text === undefined) return;
    out.push({ type: "text-end", id: this.#text });
    this.#text = undefined;
  }

  #closeReasoning(out: UIChunk[]): void {
    if (this.#reasoning === undefined) return;
    out.push({ type: "reasoning-end", id: this.#reasoning });
    this.#reasoning = undefined;
  }
}
