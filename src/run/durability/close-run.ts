import type { RunEvent } from "../../contract/events.js";
import { UserError } from "../../errors.js";
import type { Message } from "../../model/types.js";
import { STORE_UNAVAILABLE } from "../../store/log-rules.js";
import type { RunStore } from "../../store/types.js";
import { errorResult } from "../engine/tool-result.js";
import { leaseOwner } from "./event-writer.js";
import { replay } from "./replay.js";

/**
 * Ends a stored run that nobody drives — parked, left behind by a process that died, or stopped
 * by its store (`run_failed` of kind `store_unavailable`, which is unfinished: it is picked up
 * with a `run_resumed` first, as a resume would) — as `cancelled`, the way a cancel inside the
 * run would: each call of its open turn without a result gets one (`interrupted` when it had
 * started — it may have taken effect — else `cancelled`), the tool messages follow in request
 * order (so the transcript stays valid input for the next run of the session), then
 * `run_completed`. `why` ends each such result's text. A run another process is driving cannot be
 * closed from here (its lease is held: `LeaseConflict`). A caller that tries again after a
 * failure of the store passes the same `owner`: a lease it could not give back is still its own.
 *
 * @example
 * await closeStoredRun(store, runId, "the run was cancelled (quiver runs cancel)");
 */
export async function closeStoredRun(
  store: RunStore,
  runId: string,
  why: string,
  owner = leaseOwner(),
): Promise<{ pending: number }> {
  const lease = await store.acquireLease(runId, owner, 10_000);
  try {
    const events = await store.read(runId);
    if (events.length === 0) throw new UserError(`the store has no run ${runId}`);
    const state = replay(events);
    const stoppedByStore = state.status === "failed" && state.error?.kind === STORE_UNAVAILABLE;
    if (state.status !== "running" && !stoppedByStore)
      throw new UserError(`run ${runId} has already ${state.status}; there is nothing to cancel`);
    let seq = state.lastSeq;
    const base = () => ({ runId, seq: ++seq, at: Date.now(), agent: state.agent ?? "" });
    const closing: RunEvent[] = [];
    if (stoppedByStore) closing.push({ type: "run_resumed", fromSeq: state.lastSeq, ...base() } as RunEvent);
    const open = state.openTurn;
    let pending = 0;
    if (open) {
      const calls = open.assistant?.toolCalls ?? open.calls;
      const assistantAt = open.assistant ? state.messages.lastIndexOf(open.assistant) : -1;
      const appended = new Set(
        state.messages.slice(assistantAt + 1).flatMap((m) => (m.role === "tool" ? [m.toolCallId] : [])),
      );
      const messages: Message[] = [];
      for (const call of calls) {
        const done = open.completed.get(call.id);
        if (done) {
          if (!appended.has(call.id))
            messages.push({
              role: "tool",
              toolCallId: call.id,
              name: call.name,
              content: done.content ?? done.record.output,
              isError: !done.record.ok,
              ...(done.details !== undefined && { details: done.details }),
            });
          continue;
        }
        pending++;
        const result = open.started.has(call.id)
          ? errorResult(
              call,
              "interrupted",
              `${call.name} was interrupted before its result was stored: ${why}; it had started and may have taken effect`,
              "Check whether it took effect before calling it again.",
            )
          : errorResult(call, "cancelled", `${call.name} was not run: ${why}`);
        closing.push({
          type: "tool_call_completed",
          call,
          ok: false,
          output: result.record.output,
          error: result.record.error!,
          durationMs: 0,
          ...base(),
        } as RunEvent);
        if (!appended.has(call.id)) messages.push(result.message);
      }
      for (const message of messages) closing.push({ type: "message", message, ...base() } as RunEvent);
      closing.push({ type: "turn_completed", turn: open.turn, ...base() } as RunEvent);
    }
    const lastText = [...state.messages]
      .reverse()
      .find((m) => m.role === "assistant" && typeof m.content === "string" && m.content);
    closing.push({
      type: "run_completed",
      output: lastText && typeof lastText.content === "string" ? lastText.content : "",
      stopReason: "cancelled",
      usage: state.usage,
      ...base(),
    } as RunEvent);
    await store.append(lease, closing);
    return { pending };
  } finally {
    await store.releaseLease(lease).catch(() => {});
  }
}
