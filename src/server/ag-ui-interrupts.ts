import type { Interrupt, ResumeEntry, RunAgentInput } from "@ag-ui/core";
import type { Waits } from "./ag-ui-events.js";
import { textOf } from "./ag-ui-messages.js";
import type { ClientResults } from "./client-tools.js";
import { HttpError } from "./http.js";
import { callKey, type RunLog } from "./run-log.js";
import type { RunRegistry } from "./runs.js";

/**
 * Applies what the request answers: `resume[]` entries decide approvals and answer questions by
 * interrupt id, `tool` messages give results of the client's own tools. Returns how many applied
 * (an answer to something no longer waiting, e.g. a repeated request, does not count).
 */
export async function applyAnswers(
  log: RunLog,
  input: RunAgentInput,
  registry: RunRegistry,
  results: ClientResults,
): Promise<number> {
  const waits = waitsOf(log);
  let applied = 0;
  for (const entry of input.resume ?? []) {
    if (waits.interrupts.some((i) => i.id === entry.interruptId && i.reason === "tool_approval")) {
      const { approved, reason } = decisionOf(entry);
      applied += await ignoreStale(registry.decide(log, entry.interruptId, approved, reason));
    } else if (waits.interrupts.some((i) => i.id === entry.interruptId)) {
      const answer = answerOf(entry);
      applied += await ignoreStale(
        Promise.resolve().then(() => registry.answer(log, entry.interruptId, answer)),
      );
    }
  }
  for (const message of input.messages) {
    if (message.role !== "tool" || !waits.clientCalls.includes(message.toolCallId)) continue;
    results.put(log.runId, message.toolCallId, {
      content: textOf(message.content),
      ...(message.error !== undefined && { error: message.error }),
    });
    const done = await ignoreStale(registry.decide(log, message.toolCallId, true));
    if (done === 0) results.drop(log.runId, message.toolCallId);
    applied += done;
  }
  return applied;
}

/** 1 when applied; 0 when it no longer waited (a 409 from the registry). */
async function ignoreStale(action: Promise<void>): Promise<number> {
  try {
    await action;
    return 1;
  } catch (error) {
    if (error instanceof HttpError && error.status === 409) return 0;
    throw error;
  }
}

/** A resume entry for an approval: `{ approved, reason? }` or `true`/`false`; cancelled denies. */
function decisionOf(entry: ResumeEntry): { approved: boolean; reason?: string } {
  if (entry.status === "cancelled") return { approved: false, reason: "cancelled by the user" };
  const payload = entry.payload as { approved?: unknown; reason?: unknown } | boolean | undefined;
  if (typeof payload === "boolean") return { approved: payload };
  if (payload && typeof payload === "object" && typeof payload.approved === "boolean")
    return {
      approved: payload.approved,
      ...(typeof payload.reason === "string" && { reason: payload.reason }),
    };
  throw new HttpError(
    400,
    "bad_request",
    `resume entry ${entry.interruptId}: an approval's payload is { "approved": true | false, "reason"?: string }`,
  );
}

/** A resume entry for a question: a string, `{ answer }`, or a list of chosen options. */
function answerOf(entry: ResumeEntry): string {
  if (entry.status === "cancelled") return "(no answer: cancelled)";
  const payload = entry.payload as unknown;
  if (typeof payload === "string") return payload;
  if (Array.isArray(payload)) return payload.map(String).join(", ");
  const answer = (payload as { answer?: unknown } | undefined)?.answer;
  if (typeof answer === "string") return answer;
  return JSON.stringify(payload ?? "");
}

/** What the run waits for now, as AG-UI interrupts and pending client calls. */
export function waitsOf(log: RunLog): Waits {
  const clientTools = new Set((log.extraTools ?? []).map((t) => t.name));
  const waiting = log.status === "parked" ? log.parked : [...log.asking.values()];
  const interrupts: Interrupt[] = [];
  const clientCalls: string[] = [];
  for (const entry of waiting) {
    const own = entry.runId === log.runId;
    if (own && clientTools.has(entry.call.name)) {
      clientCalls.push(entry.call.id);
      continue;
    }
    interrupts.push({
      id: own ? entry.call.id : callKey(entry.runId, entry.call.id),
      reason: "tool_approval",
      message: `${entry.call.name} needs approval`,
      toolCallId: topCall(log, entry),
      responseSchema: {
        type: "object",
        properties: { approved: { type: "boolean" }, reason: { type: "string" } },
        required: ["approved"],
      },
      metadata: { name: entry.call.name, args: entry.call.args ?? {} },
    });
  }
  for (const open of log.questions.values()) {
    const { question, options, multiSelect } = open.question;
    const labels = options.map((o) => o.label);
    interrupts.push({
      id: open.runId === log.runId ? open.call.id : callKey(open.runId, open.call.id),
      reason: "input_required",
      message: question,
      toolCallId: topCall(log, open),
      // The options are suggestions: any text stays a valid answer.
      responseSchema: multiSelect
        ? { type: "array", items: { type: "string", examples: labels } }
        : { type: "string", ...(labels.length > 0 && { examples: labels }) },
      ...(options.length > 0 && { metadata: { options, multiSelect } }),
    });
  }
  return { interrupts, clientCalls };
}

/** The root run's call a waiting call descends from (itself, for the root run's own calls). */
function topCall(log: RunLog, entry: { runId: string; call: { id: string } }): string {
  let key = callKey(entry.runId, entry.call.id);
  for (;;) {
    const cut = key.lastIndexOf("/");
    const owner = key.slice(0, cut);
    if (owner === log.runId) return key.slice(cut + 1);
    const parent = log.parentCalls.get(owner);
    if (parent === undefined) return entry.call.id;
    key = parent;
  }
}
