import type { Message, ToolCall, Usage } from "../model/types.js";
import type { RunEvent, StopReason } from "./events.js";
import { addUsage, emptyUsage, type ToolCallRecord } from "./result.js";

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
  stopReason?: StopReason;
  output?: unknown;
  error?: { name: string; message: string; kind: string };
  /** Why the run counts as tainted (untrusted output entered it), if it does. */
  tainted?: string;
  /** The highest `seq` seen: a resumed run continues after it. */
  lastSeq: number;
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
    lastSeq: 0,
  };
  const requested: ToolCall[] = [];
  const completed = new Map<string, ToolCallRecord>();
  const flush = () => {
    for (const call of requested) {
      const record = completed.get(call.id);
      if (record) state.toolCalls.push(record);
    }
    requested.length = 0;
    completed.clear();
  };
  for (const event of events) {
    state.runId ??= event.runId;
    if (event.runId !== state.runId) continue; // a child run's event
    state.lastSeq = Math.max(state.lastSeq, event.seq);
    state.agent = event.agent;
    switch (event.type) {
      case "run_started":
        state.messages.push(...event.input);
        break;
      case "turn_started":
        flush();
        state.turn = event.turn;
        break;
      case "message":
        state.messages.push(event.message);
        break;
      case "tool_call_requested":
        requested.push(event.call);
        break;
      case "tool_call_completed": {
        const record: ToolCallRecord = { call: event.call, ok: event.ok, output: event.output };
        if (event.truncated) record.truncated = event.truncated;
        if (event.error) record.error = event.error;
        completed.set(event.call.id, record);
        break;
      }
      case "usage":
        addUsage(state.usage, event.usage);
        break;
      case "handoff":
        if (event.transcript) state.messages = [...event.transcript];
        break;
      case "run_tainted":
        state.tainted = event.source;
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
    }
  }
  state.pendingCalls = requested.filter((call) => !completed.has(call.id));
  flush();
  return state;
}
