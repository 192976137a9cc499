import type { AssistantMessage, Message, ToolMessage } from "./types.js";

/** What a call whose result is missing from a transcript gets in its place. */
export const MISSING_RESULT = "[no result: this call's result is not in the conversation]";

/**
 * The transcript with every tool call answered and every tool result answering a call, as
 * every provider requires (OpenAI and Anthropic refuse a request otherwise). Transcripts the
 * loop builds always are; ones from outside may not be: a handoff's `inputFilter` that drops
 * tool messages, a transcript given as input. A call without its result gets one saying so
 * (`MISSING_RESULT`, an error); results no call before them asked for get an assistant message
 * with their calls (no arguments) in front, so they keep what they carry (an `untrusted` result
 * still taints the runs that continue the conversation). Returns `messages` itself when nothing
 * needed changing.
 *
 * @example
 * pairCalls(messages.filter((m) => m.role !== "tool")); // the calls get MISSING_RESULT results
 */
export function pairCalls(messages: readonly Message[]): Message[] {
  let out: Message[] | undefined;
  for (let i = 0; i < messages.length; ) {
    const message = messages[i]!;
    // Most messages neither call nor answer: nothing to look at (a run's input is one of them).
    if (message.role !== "tool" && !(message.role === "assistant" && message.toolCalls?.length)) {
      out?.push(message);
      i++;
      continue;
    }
    let end = i + 1;
    while (end < messages.length && messages[end]!.role === "tool") end++;
    // Past the check above, an assistant message is one with calls.
    const calls = message.role === "assistant" ? message : undefined;
    const results = messages.slice(calls ? i + 1 : i, end) as ToolMessage[];
    const fixed = answered(calls, results);
    if (fixed === undefined) {
      if (out) for (let k = i; k < end; k++) out.push(messages[k]!);
    } else {
      out ??= messages.slice(0, i);
      if (calls) out.push(calls);
      out.push(...fixed);
    }
    i = end;
  }
  return out ?? (messages as Message[]);
}

/**
 * The messages that follow `assistant` (or stand alone, without it): its results, one per call
 * (missing ones made), then results it did not ask for behind calls of their own. Undefined
 * when `results` already answer exactly its calls.
 */
function answered(assistant: AssistantMessage | undefined, results: ToolMessage[]): Message[] | undefined {
  const calls = assistant?.toolCalls ?? [];
  const ids = new Set(calls.map((call) => call.id));
  const kept = new Set<string>();
  const strays: ToolMessage[] = [];
  for (const result of results) {
    if (ids.has(result.toolCallId) && !kept.has(result.toolCallId)) kept.add(result.toolCallId);
    else strays.push(result);
  }
  if (strays.length === 0 && kept.size === ids.size) return undefined;
  const out: Message[] = results.filter((result) => !strays.includes(result));
  for (const call of calls) {
    if (kept.has(call.id)) continue;
    out.push({ role: "tool", toolCallId: call.id, name: call.name, content: MISSING_RESULT, isError: true });
  }
  if (strays.length > 0) {
    // Ids must be unique in a request: a stray repeating one gets a new one.
    const taken = new Set(ids);
    const renamed = strays.map((stray) => {
      let id = stray.toolCallId;
      for (let n = 2; taken.has(id); n++) id = `${stray.toolCallId}_${n}`;
      taken.add(id);
      return id === stray.toolCallId ? stray : { ...stray, toolCallId: id };
    });
    out.push({
      role: "assistant",
      content: "",
      toolCalls: renamed.map((stray) => ({ id: stray.toolCallId, name: stray.name, args: {} })),
    });
    out.push(...renamed);
  }
  return out;
}
