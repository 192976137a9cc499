import type { RunEvent, StopReason } from "../../contract/events.js";
import type { GuardrailStage } from "../../contract/guardrails.js";
import type { AssistantMessage, ContentBlock, Message, ToolCall, Usage } from "../../model/types.js";
import type { LoggedCompaction } from "../conversation/compaction.js";
import { type CompactionChange, ContextView } from "../conversation/context-view.js";
import type { QueuedMessage } from "../state/mailbox.js";
import { addUsage, emptyUsage, type ToolCallRecord } from "../state/result.js";

/** A finished call as its log records it, with the tool message content when it had images. */
export type LoggedResult = { record: ToolCallRecord; content?: ContentBlock[]; details?: unknown };

/** The turn a log ends in, when it ends before that turn completed (a crash, a park). */
export type OpenTurn = {
  turn: number;
  /** The model's message of the turn, once it was complete. */
  assistant?: AssistantMessage;
  /** The calls it requested, in request order. */
  calls: ToolCall[];
  completed: Map<string, LoggedResult>;
  /** Calls whose `tool_call_started` was stored: they may have run. */
  started: Set<string>;
  /** Approval decisions stored for calls of this turn. */
  decisions: Map<string, { approved: boolean; by: string; reason?: string }>;
  /** Calls whose approval was asked and not decided. */
  asked: Set<string>;
  /** The model that answered, when a fallback chain moved past the one `turn_started` names. */
  model?: string;
  /** The tokens the turn's model answer spent (with their cost), once it completed. */
  usage?: Partial<Usage>;
};

/** A run as its event log describes it. */
export type RunState = {
  runId: string | undefined;
  /** The agent speaking last. */
  agent: string | undefined;
  messages: Message[];
  /** Finished calls in request order (`value` is never in a log). */
  toolCalls: ToolCallRecord[];
  /** Requested calls that have no result yet (a run that stopped mid-turn). */
  pendingCalls: ToolCall[];
  usage: Usage;
  turn: number;
  status: "running" | "completed" | "failed";
  /** True when the log ends with the run parked, waiting for approval decisions. */
  parked: boolean;
  stopReason?: StopReason;
  output?: unknown;
  error?: { name: string; message: string; kind: string };
  /** Why the run counts as tainted (untrusted output entered it), if it does. */
  tainted?: string;
  /** The turn the log ends in, if it had not completed. */
  openTurn?: OpenTurn;
  /** Every call id the run has used. */
  callIds: string[];
  /** The highest `seq` seen: a resumed run continues after it. */
  lastSeq: number;
  /** When the run started (epoch ms). */
  startedAt?: number;
  /** The W3C `traceparent` of the run's first span, when it was traced (a resumed run links to it). */
  traceparent?: string;
  /** With context compaction: the changes of view the log recorded, and the provider's last input count. */
  compaction?: LoggedCompaction;
  /**
   * The messages the model was shown, as of the log's end: `messages` with old tool results
   * elided and older turns summarised. Present once the run compacted its context.
   */
  view?: readonly Message[];
  /** Guardrail outcomes the log holds, in order: a resumed run takes them instead of checking again. */
  guardrails?: LoggedGuardrail[];
  /** The shared state (`ctx.state`) as of the log's end, when the run has one. */
  state?: unknown;
  /** Messages `inject()` or `followUp()` queued (and the log stored) that the run had not delivered yet. */
  queued: QueuedMessage[];
};

/** One guardrail outcome as the log records it. */
export type LoggedGuardrail = {
  stage: GuardrailStage;
  guardrail: string;
  agent: string;
  callId?: string;
  tripped: boolean;
  reason?: string;
  info?: unknown;
};

/**
 * Rebuilds a run's transcript, calls and usage from its events — the same state the live run
 * had. This is what makes a persisted log resumable.
 *
 * @example
 * const events = []; for await (const ev of handle) events.push(ev);
 * const state = replay(events); // state.messages deep-equals (await handle.result()).messages
 */
export function replay(events: Iterable<RunEvent>): RunState {
  const state: RunState = {
    runId: undefined,
    agent: undefined,
    messages: [],
    toolCalls: [],
    pendingCalls: [],
    usage: emptyUsage(),
    turn: 0,
    status: "running",
    parked: false,
    callIds: [],
    queued: [],
    lastSeq: 0,
  };
  let open: OpenTurn | undefined;
  let changes: CompactionChange[] = [];
  let lastRequest: LoggedCompaction["lastRequest"];
  /** An own `usage` event with nothing but warnings after it yet: the next assistant message's. */
  let answerUsage: Partial<Usage> | undefined;
  const closeTurn = () => {
    if (!open) return;
    for (const call of open.calls) {
      const done = open.completed.get(call.id);
      if (done) state.toolCalls.push(done.record);
    }
    open = undefined;
  };
  for (const event of events) {
    state.runId ??= event.runId;
    if (event.runId !== state.runId) continue; // a child run's event
    state.lastSeq = Math.max(state.lastSeq, event.seq);
    state.agent = event.agent;
    const usageBefore = answerUsage;
    if (event.type !== "usage" && event.type !== "warning") answerUsage = undefined;
    // A warning (a plugin's teardown) may follow the park without undoing it.
    if (event.type !== "run_parked" && event.type !== "warning") state.parked = false;
    switch (event.type) {
      case "run_started":
        state.messages.push(...event.input);
        state.startedAt = event.at;
        if (event.traceparent !== undefined) state.traceparent = event.traceparent;
        if (event.state !== undefined) state.state = event.state;
        break;
      case "state_updated":
        state.state = event.state;
        break;
      case "turn_started":
        closeTurn();
        state.turn = event.turn;
        open = {
          turn: event.turn,
          calls: [],
          completed: new Map(),
          started: new Set(),
          decisions: new Map(),
          asked: new Set(),
        };
        break;
      case "turn_completed":
        closeTurn();
        break;
      case "message_queued":
        state.queued.push({ message: event.message, delivery: event.delivery, seq: event.seq });
        break;
      case "message":
        if (event.queuedSeq !== undefined) {
          const at = state.queued.findIndex((q) => q.seq === event.queuedSeq);
          if (at >= 0) state.queued.splice(at, 1);
        }
        state.messages.push(event.message);
        if (open && event.message.role === "assistant") {
          open.assistant = event.message;
          // The tokens of this answer are the usage event just before it (a summary's come earlier).
          if (usageBefore) open.usage = usageBefore;
        }
        break;
      case "tool_call_requested":
        open?.calls.push(event.call);
        state.callIds.push(event.call.id);
        break;
      case "tool_call_started":
        open?.started.add(event.call.id);
        break;
      case "approval_required":
        open?.asked.add(event.call.id);
        break;
      case "approval_resolved":
        open?.decisions.set(event.call.id, {
          approved: event.decision === "approved",
          by: event.by,
          ...(event.reason !== undefined && { reason: event.reason }),
        });
        break;
      case "tool_call_completed": {
        const record: ToolCallRecord = { call: event.call, ok: event.ok, output: event.output };
        if (event.truncated) record.truncated = event.truncated;
        if (event.error) record.error = event.error;
        open?.completed.set(event.call.id, {
          record,
          ...(event.content && { content: event.content }),
          ...(event.details !== undefined && { details: event.details }),
        });
        break;
      }
      case "model_fallback":
        if (open) open.model = event.to;
        break;
      case "usage":
        addUsage(state.usage, event.usage);
        if (event.source === undefined) answerUsage = event.usage;
        if (event.source === undefined && event.usage.inputTokens)
          lastRequest = { inputTokens: event.usage.inputTokens, messages: state.messages.length };
        break;
      case "compaction": {
        const change: CompactionChange = { elided: event.elided };
        if (event.summary) change.summary = event.summary;
        changes.push(change);
        break;
      }
      case "handoff":
        if (event.transcript) {
          state.messages = [...event.transcript];
          changes = [];
        }
        break;
      case "run_tainted":
        state.tainted = event.source;
        break;
      case "run_parked":
        state.parked = true;
        break;
      case "run_completed":
        state.status = "completed";
        state.stopReason = event.stopReason;
        state.output = event.output;
        break;
      case "run_failed":
        state.status = "failed";
        state.error = { name: event.name, message: event.message, kind: event.kind };
        break;
      case "guardrail_passed":
      case "guardrail_tripped": {
        const logged: LoggedGuardrail = {
          stage: event.stage,
          guardrail: event.guardrail,
          agent: event.agent,
          tripped: event.type === "guardrail_tripped",
        };
        if (event.callId !== undefined) logged.callId = event.callId;
        if (event.type === "guardrail_tripped") {
          logged.reason = event.reason;
          if (event.info !== undefined) logged.info = event.info;
        }
        if (state.guardrails) state.guardrails.push(logged);
        else state.guardrails = [logged];
        break;
      }
      case "run_resumed":
        // Picked up again after a stop that did not finish it (a crash, a store outage, a park).
        state.status = "running";
        delete state.error;
        break;
    }
  }
  if (changes.length || lastRequest) {
    state.compaction = lastRequest ? { changes, lastRequest } : { changes };
  }
  if (changes.length) {
    const view = new ContextView(state.messages);
    for (const change of changes) view.apply(change);
    state.view = view.messages;
  }
  if (open) {
    state.pendingCalls = open.calls.filter((call) => !open!.completed.has(call.id));
    state.openTurn = open;
    // Report the open turn's finished calls too, so toolCalls lists everything that ran.
    for (const call of open.calls) {
      const done = open.completed.get(call.id);
      if (done) state.toolCalls.push(done.record);
    }
  }
  return state;
}

/**
 * The calls of a log's open turn that were asked about and are neither decided nor done: what a
 * parked run waits on (a call after the one that parked it is asked only when the run goes on).
 *
 * @example
 * const waiting = undecidedIn(await store.read(runId)); // ["call_2"]
 */
export function undecidedIn(events: Iterable<RunEvent>): string[] {
  const open = replay(events).openTurn;
  if (!open) return [];
  return [...open.asked].filter((id) => !open.decisions.has(id) && !open.completed.has(id));
}
