import type { RunContext } from "../../contract/run-context.js";
import type { ToolErrorKind } from "../../errors.js";
import { base64Bytes, isMediaBlock } from "../../model/media.js";
import type { ContentBlock, ToolCall, ToolMessage } from "../../model/types.js";
import { toPlainJson } from "../../plain-json.js";
import { thrownMessage } from "../../thrown.js";
import { contentText, defaultRender, isToolOutput, truncateMiddle } from "../../tool/render.js";
import type { Tool } from "../../tool/tool.js";
import type { ResultRenderer } from "../../tool/types.js";
import { recallNote } from "../conversation/recall.js";
import type { ToolCallRecord } from "../state/result.js";
import { callRecordOf, toolMessageOf } from "../state/transcript-objects.js";

export const DEFAULT_MAX_TOOL_OUTPUT_CHARS = 200_000;
export const DEFAULT_MAX_IMAGE_BYTES = 5_000_000;

/** A finished call: the record for results and events, and the message for the transcript. */
export type CallResult = {
  record: ToolCallRecord;
  message: ToolMessage;
  details?: unknown;
  /** The whole rendered text of a truncated result, for the store's artifacts. */
  fullText?: string;
};

/** The text the model reads for a failed call. No stack traces, ever. */
export function errorText(message: string, hint?: string): string {
  return `Tool error: ${message}${hint ? `\nHint: ${hint}` : ""}`;
}

export function errorResult(call: ToolCall, kind: ToolErrorKind, message: string, hint?: string): CallResult {
  const output = errorText(message, hint);
  const record = callRecordOf(call, false, output);
  record.error = { kind, message };
  return { record, message: toolMessageOf(call, output, true) };
}

export type RenderSettings = {
  agentRenderer?: ResultRenderer;
  maxOutputChars: number;
  maxImageBytes: number;
  /**
   * With a store: the call whose full output is kept, so the truncation marker says how to
   * recall the rest. An id, not a note function made per call: a closure made in the executor
   * holds the executor's whole context (the call, its turn, the run), and V8 kept such closures
   * alive through young-generation GCs (see docs/architecture.md, "Closures in the hot path").
   */
  recallCallId?: string;
};

/**
 * Renders a successful value (tool renderer → agent renderer → default), caps its text
 * head + tail, and caps its images. A throwing renderer gives a `renderer_error` result.
 */
export function successResult(
  tool: Tool,
  call: ToolCall,
  value: unknown,
  ctx: RunContext,
  settings: RenderSettings,
): CallResult {
  const renderer = tool.resultRenderer ?? settings.agentRenderer;
  let rendered: string | ContentBlock[];
  let details: unknown = isToolOutput(value) ? value.details : undefined;
  try {
    const out = renderer ? renderer(value, ctx) : defaultRender(value);
    if (isToolOutput(out)) {
      rendered = out.content;
      if (out.details !== undefined) details = out.details;
    } else rendered = typeof out === "string" || Array.isArray(out) ? out : defaultRender(out);
  } catch (error) {
    return errorResult(
      call,
      "renderer_error",
      `the result renderer of ${tool.name} failed: ${messageOf(error)}`,
    );
  }
  // Events and the log carry details: as plain JSON (a bigint, a Map or a cycle in them would
  // make the live event unserialisable, and a Map would turn into {} on the wire).
  if (details !== undefined) details = toPlainJson(details);
  const capped = capContent(rendered, settings);
  const output = contentText(capped.content);
  // Built field by field, one order per shape (see transcript-objects.ts).
  const record = callRecordOf(call, true, output);
  if (capped.originalChars !== undefined) record.truncated = { originalChars: capped.originalChars };
  else record.value = value;
  const message = toolMessageOf(call, capped.content, false);
  if (details !== undefined) message.details = details;
  const result: CallResult = { record, message };
  if (details !== undefined) result.details = details;
  if (capped.fullText !== undefined) result.fullText = capped.fullText;
  return result;
}

/** `text` cut to the cap (with the recall note when the run has a store); `undefined` when it fits. */
function truncated(text: string, settings: RenderSettings): ReturnType<typeof truncateMiddle> {
  if (text.length <= settings.maxOutputChars) return undefined;
  const callId = settings.recallCallId;
  return truncateMiddle(
    text,
    settings.maxOutputChars,
    callId === undefined ? undefined : (keptHead) => recallNote(callId, keptHead),
  );
}

function capContent(
  content: string | ContentBlock[],
  settings: RenderSettings,
): { content: string | ContentBlock[]; originalChars?: number; fullText?: string } {
  if (typeof content === "string") {
    const cut = truncated(content, settings);
    return cut
      ? { content: cut.text, originalChars: cut.originalChars, fullText: kept(content) }
      : { content };
  }
  const blocks: ContentBlock[] = [];
  let imageBytes = 0;
  for (const block of content) {
    // Every part with inline bytes (images, documents, audio) counts against the one limit.
    if (!isMediaBlock(block) || block.data === undefined) {
      blocks.push(block);
      continue;
    }
    const bytes = base64Bytes(block.data);
    if (imageBytes + bytes > settings.maxImageBytes) {
      blocks.push({
        type: "text",
        text: `[${block.type} omitted: ${block.mimeType}, ${bytes.toLocaleString("en-US")} bytes would exceed the ${settings.maxImageBytes.toLocaleString("en-US")}-byte image limit of one result]`,
      });
      continue;
    }
    imageBytes += bytes;
    blocks.push(block);
  }
  const text = blocks.filter((b) => b.type === "text").map((b) => (b as { text: string }).text);
  const totalText = text.join("\n");
  const cut = truncated(totalText, settings);
  if (!cut) return { content: blocks };
  // Over the cap: the text blocks become one truncated block, images stay after it.
  return {
    content: [{ type: "text", text: cut.text }, ...blocks.filter((b) => b.type !== "text")],
    originalChars: cut.originalChars,
    fullText: kept(totalText),
  };
}

/**
 * The most of one result a store keeps for `recall_tool_result`: 10 million characters. Past it
 * the stored text is cut like the model's (head and tail around a marker), so a runaway result
 * bounds what is stored too; offsets into the head stay valid.
 */
const MAX_RECALLABLE_CHARS = 10_000_000;

function kept(text: string): string {
  return truncateMiddle(text, MAX_RECALLABLE_CHARS)?.text ?? text;
}

/** What a thrown value says, never throwing (see `thrownMessage`). */
export function messageOf(error: unknown): string {
  return thrownMessage(error);
}
