import type { RunEvent, StopReason, ToolCall } from "../index.js";

/** A child run as the client sees it: the preliminary output of the call that started it. */
type ChildView = {
  agent: string;
  text: string;
  calls: Array<{
    id: string;
    agent: string;
    name: string;
    input: unknown;
    state: string;
    progress?: unknown;
    output?: string;
  }>;
};

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
  /** A child's approval id → the root-level call it is requested on. */
  readonly #askedOn = new Map<string, string>();
  /** Child run id → the `callKey` of the call that started it. */
  readonly #parents = new Map<string, string>();
  /** What each child run did, shown as preliminary output of the root-level call above it. */
  readonly #children = new Map<string, ChildView>();
  #finished = false;

  constructor(rootRunId: string) {
    this.#rootRunId = rootRunId;
  }

  /** True once a `finish` (or `error`) chunk was produced: nothing may follow. */
  get finished(): boolean {
    return this.#finished;
  }

  translate(event: RunEvent, out: UIChunk[]): void {
    if (this.#finished) return;
    if (event.runId !== this.#rootRunId) {
      this.#child(event, out);
      return;
    }
    switch (event.type) {
      case "turn_started":
        this.#closeParts(out);
        if (this.#stepOpen) out.push({ type: "finish-step" });
        out.push({ type: "start-step" });
        this.#stepOpen = true;
        return;
      case "text_delta":
        if (event.delta === "") return;
        this.#openStep(out);
        this.#closeReasoning(out);
        if (this.#text === undefined) {
          this.#text = `text_${++this.#partCounter}`;
          out.push({ type: "text-start", id: this.#text });
        }
        out.push({ type: "text-delta", id: this.#text, delta: event.delta });
        return;
      case "reasoning_delta":
        if (event.delta === "") return;
        this.#openStep(out);
        this.#closeText(out);
        if (this.#reasoning === undefined) {
          this.#reasoning = `reasoning_${++this.#partCounter}`;
          out.push({ type: "reasoning-start", id: this.#reasoning });
        }
        out.push({ type: "reasoning-delta", id: this.#reasoning, delta: event.delta });
        return;
      case "tool_call_requested":
        this.#showCall(event.call, out);
        return;
      case "approval_required":
        this.#showCall(event.call, out);
        this.#asking.set(event.call.id, event.reason);
        return;
      case "approval_resolved": {
        const id = event.call.id;
        this.#asking.delete(id);
        if (event.decision === "denied") {
          this.#showCall(event.call, out);
          this.#denied.add(id);
          out.push({ type: "tool-output-denied", toolCallId: id });
        }
        return;
      }
      // The run's shared state, whole, as one data part of the message (replaced at each change).
      case "state_updated":
        out.push({ type: "data-state", id: "state", data: event.state });
        return;
      case "tool_call_update": {
        const id = event.call.id;
        if (this.#denied.has(id)) return;
        this.#showCall(event.call, out);
        out.push({ type: "tool-output-available", toolCallId: id, output: event.partial, preliminary: true });
        return;
      }
      case "tool_call_completed": {
        const id = event.call.id;
        if (this.#denied.has(id)) return;
        this.#showCall(event.call, out);
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
            toolCallId: event.call.id,
            attempt: event.attempt,
            delayMs: event.delayMs,
            error: event.error,
          },
        });
        return;
      case "handoff":
        out.push({ type: "data-quiver-handoff", data: { from: event.from, to: event.to } });
        return;
      // The stream cannot retract text: a client that wants to drops the step's text before this part.
      case "model_fallback":
        this.#closeParts(out);
        out.push({
          type: "data-quiver-fallback",
          data: { from: event.from, to: event.to, reason: event.reason, turn: event.turn },
        });
        return;
      case "run_tainted":
        out.push({ type: "data-quiver-taint", id: "taint", data: { source: event.source } });
        return;
      case "usage":
        out.push({ type: "message-metadata", messageMetadata: { quiver: { usage: event.total } } });
        return;
      case "run_completed":
        if (event.stopReason === "awaiting_approval") return;
        this.#finish(out, event.stopReason);
        return;
      case "run_failed":
        this.#closeParts(out);
        out.push({ type: "error", errorText: `${event.name}: ${event.message}` });
        this.#finished = true;
        return;
    }
  }

  /**
   * A child run (an agent used as a tool) is shown the way the AI SDK shows sub-agents: as
   * preliminary output of the parent's call, which is the call the client has seen. An approval
   * a child asks for is requested on that call (its approval id names the child's call), so
   * `lastAssistantMessageIsCompleteWithApprovalResponses` still sends the answer on its own.
   */
  #child(event: RunEvent, out: UIChunk[]): void {
    if (event.type === "run_started") {
      if (event.parentRunId !== undefined && event.parentCallId !== undefined)
        this.#parents.set(event.runId, `${event.parentRunId}/${event.parentCallId}`);
      return;
    }
    const top = this.#topCall(event.runId);
    if (top === undefined) return;
    const view = this.#children.get(top) ?? { agent: event.agent, text: "", calls: [] };
    this.#children.set(top, view);
    const find = (call: ToolCall) => {
      let entry = view.calls.find((c) => c.id === `${event.runId}/${call.id}`);
      if (!entry) {
        entry = {
          id: `${event.runId}/${call.id}`,
          agent: event.agent,
          name: call.name,
          input: call.args ?? {},
          state: "requested",
        };
        view.calls.push(entry);
      }
      return entry;
    };
    switch (event.type) {
      case "text_delta":
        view.text += event.delta;
        return;
      case "tool_call_requested":
        find(event.call);
        break;
      case "approval_required":
        find(event.call).state = "awaiting approval";
        this.#asking.set(`${event.runId}/${event.call.id}`, event.reason);
        this.#askedOn.set(`${event.runId}/${event.call.id}`, top);
        break;
      case "approval_resolved":
        this.#asking.delete(`${event.runId}/${event.call.id}`);
        find(event.call).state = event.decision === "denied" ? "denied" : "approved";
        break;
      case "tool_call_started":
        find(event.call).state = "running";
        break;
      case "tool_call_update":
        find(event.call).progress = event.partial;
        break;
      case "tool_call_completed": {
        const entry = find(event.call);
        if (entry.state === "denied") break;
        entry.state = event.ok ? "done" : "failed";
        entry.output = event.output;
        break;
      }
      case "turn_completed":
      case "run_completed":
        break;
      default:
        return;
    }
    out.push({
      type: "tool-output-available",
      toolCallId: top,
      output: structuredClone(view),
      preliminary: true,
    });
  }

  /** The root run's call a child run descends from, as its wire id. */
  #topCall(runId: string): string | undefined {
    for (let key = this.#parents.get(runId); key !== undefined; ) {
      const cut = key.lastIndexOf("/");
      const owner = key.slice(0, cut);
      if (owner === this.#rootRunId) return key.slice(cut + 1);
      key = this.#parents.get(owner);
    }
    return undefined;
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
        toolCallId: this.#askedOn.get(id) ?? id,
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

  #showCall(call: ToolCall, out: UIChunk[]): void {
    const id = call.id;
    if (this.#seen.has(id)) return;
    this.#seen.add(id);
    this.#openStep(out);
    this.#closeParts(out);
    out.push({
      type: "tool-input-available",
      toolCallId: id,
      toolName: call.name,
      input: call.args ?? {},
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
