import type { AssistantMessage, ContentBlock, ToolCall, ToolMessage } from "../../model/types.js";
import type { ToolCallRecord } from "./result.js";

/*
 * The objects a run keeps until it ends — its assistant and tool messages, its calls and their
 * records — are made here from an empty object, field by field, not as object literals.
 *
 * V8 tracks where each object literal in the code allocates ("allocation sites"). When the
 * objects of one literal mostly survive young-generation GCs, it pretenures the site: from then
 * on, for the life of the process, that literal allocates straight into the old generation.
 * A run keeps these objects until it ends, so a few runs that outlive a GC or two (a busy
 * process, a long run, another library's garbage) pretenure their literals, and every later run,
 * short ones included, made its messages and calls in the old generation: garbage that only a
 * full GC collects. Measured in bench/'s process beside pi-agent-core: W1 `stream()` went
 * between 0.31× and 0.39× of pi-agent-core, depending on what V8 had pretenured; built this
 * way, 0.26–0.28×. An empty `{}` has no allocation site, so nothing is ever pretenured, and it
 * costs the same (~8 ns for four fields). The fields go in one fixed order per
 * shape, so each shape is one hidden class (kept alive by `keepRunShapes`).
 */

/**
 * The assistant message of one model turn.
 *
 * @example
 * transcript.push(assistantMessageOf("Looking it up.", [call]));
 */
export function assistantMessageOf(
  content: string | ContentBlock[],
  toolCalls: ToolCall[] | undefined,
): AssistantMessage {
  const message = {} as AssistantMessage;
  message.role = "assistant";
  message.content = content;
  if (toolCalls !== undefined) message.toolCalls = toolCalls;
  return message;
}

/**
 * The tool message answering `call`.
 *
 * @example
 * const message = toolMessageOf(call, "42", false);
 */
export function toolMessageOf(
  call: ToolCall,
  content: string | ContentBlock[],
  isError: boolean,
): ToolMessage {
  const message = {} as ToolMessage;
  message.role = "tool";
  message.toolCallId = call.id;
  message.name = call.name;
  message.content = content;
  message.isError = isError;
  return message;
}

/**
 * A call the model requested, its arguments still to be parsed into `args`.
 *
 * @example
 * const call = toolCallOf("call_1", "add");
 * call.args = JSON.parse(text);
 */
export function toolCallOf(id: string, name: string): ToolCall {
  const call = {} as ToolCall;
  call.id = id;
  call.name = name;
  call.args = undefined;
  return call;
}

/**
 * A call's record, without its outcome's own field (`value`, `truncated` or `error`), which
 * the caller adds next.
 *
 * @example
 * const record = callRecordOf(call, true, "42");
 * record.value = 42;
 */
export function callRecordOf(call: ToolCall, ok: boolean, output: string): ToolCallRecord {
  const record = {} as ToolCallRecord;
  record.call = call;
  record.ok = ok;
  record.output = output;
  return record;
}

/** One object of each shape made here, for `keepRunShapes` to keep their hidden classes alive. */
export function transcriptShapes(): unknown[] {
  const call = toolCallOf("shape", "shape");
  const success = callRecordOf(call, true, "");
  success.value = undefined;
  const truncated = callRecordOf(call, true, "");
  truncated.truncated = { originalChars: 0 };
  const failed = callRecordOf(call, false, "");
  failed.error = { kind: "tool_error", message: "" };
  return [
    assistantMessageOf("", [call]),
    assistantMessageOf("", undefined),
    toolMessageOf(call, "", false),
    success,
    truncated,
    failed,
  ];
}
