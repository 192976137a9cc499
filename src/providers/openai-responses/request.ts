/**
 * A `ModelRequest` as an OpenAI Responses API request body (`POST /responses`).
 *
 * Quiver keeps the conversation itself (`store: false` by default), so reasoning survives
 * across turns as encrypted reasoning items that are sent back exactly as received.
 */

import { objectRootSchema, toStrictSchema } from "../../model/schema-lowering.js";
import type {
  AssistantMessage,
  ContentBlock,
  FileBlock,
  ImageBlock,
  MediaBlock,
  ModelRequest,
  ToolMessage,
  ToolSpec,
} from "../../model/types.js";
import {
  blocksOf,
  dataUrl,
  documentText,
  emptyPart,
  IN_USER_MESSAGE,
  isInlineText,
  mediaOf,
  OmittedParts,
  type PartPlace,
  providerEntry,
  type Refusal,
  refusePart,
  sentImageType,
  textOf,
  WEB_IMAGE_TYPES,
} from "../message-content.js";
import type { Warn } from "../streaming-turn.js";
import { WireCallIds } from "../tool-call-ids.js";

export const OPENAI_RESPONSES = "openai-responses";

export type ResponsesDialect = {
  model: string;
  /** Whether OpenAI keeps the response server-side. */
  store: boolean;
  /** Ask for `reasoning.encrypted_content`, needed to replay reasoning without `store`. */
  encryptedReasoning: boolean;
  /** `reasoning.summary` when reasoning is requested. */
  reasoningSummary: "auto" | "concise" | "detailed" | undefined;
};

type Item = Record<string, unknown>;

export function encodeResponsesBody(request: ModelRequest, dialect: ResponsesDialect, warn: Warn): Item {
  const settings = request.settings;
  const omitted = new OmittedParts(OPENAI_RESPONSES);
  const body: Item = {
    model: dialect.model,
    input: inputItems(request, dialect, omitted),
    stream: true,
    store: dialect.store,
  };
  omitted.report(warn);
  if (request.system) body.instructions = request.system;
  if (dialect.encryptedReasoning && !dialect.store) body.include = ["reasoning.encrypted_content"];
  if (request.tools.length > 0) {
    body.tools = request.tools.map((spec) => responsesTool(spec, warn));
    const choice = settings.toolChoice;
    if (choice !== undefined)
      body.tool_choice = typeof choice === "string" ? choice : { type: "function", name: choice.name };
    if (settings.parallelToolCalls !== undefined) body.parallel_tool_calls = settings.parallelToolCalls;
  }
  if (settings.temperature !== undefined) body.temperature = settings.temperature;
  if (settings.topP !== undefined) body.top_p = settings.topP;
  if (settings.maxTokens !== undefined) body.max_output_tokens = settings.maxTokens;
  if (settings.stop !== undefined && settings.stop.length > 0) {
    warn("stop sequences are not supported by the Responses API and were not sent");
  }
  if (settings.reasoning) {
    const reasoning: Item = {};
    if (settings.reasoning.effort) reasoning.effort = settings.reasoning.effort;
    else if (settings.reasoning.budgetTokens !== undefined) {
      warn("reasoning.budgetTokens has no Responses API equivalent; use reasoning.effort");
    }
    if (dialect.reasoningSummary) reasoning.summary = dialect.reasoningSummary;
    body.reasoning = reasoning;
  }
  const format = settings.responseFormat;
  if (format) {
    const textFormat: Item = { type: "json_schema", name: format.name, schema: format.schema, strict: false };
    if (format.strict) {
      const strict = toStrictSchema(format.schema);
      if ("schema" in strict) {
        textFormat.schema = strict.schema;
        textFormat.strict = true;
      } else warn(`responseFormat ${format.name} was sent non-strict: ${strict.reason}`);
    }
    body.text = { format: textFormat };
  }
  if (settings.extra) Object.assign(body, settings.extra);
  return body;
}

/** Function tools here are strict unless told otherwise, so `strict` is always sent. */
function responsesTool(spec: ToolSpec, warn: Warn): Item {
  const root = objectRootSchema(spec.parameters);
  if (root.simplified) warn(`tool ${spec.name}: ${root.simplified}`, spec.name);
  const tool: Item = {
    type: "function",
    name: spec.name,
    description: spec.description,
    parameters: root.schema,
    strict: false,
  };
  if (spec.strict && !root.simplified) {
    const strict = toStrictSchema(spec.parameters);
    if ("schema" in strict) {
      tool.parameters = strict.schema;
      tool.strict = true;
    } else warn(`tool ${spec.name} was sent non-strict: ${strict.reason}`, spec.name);
  }
  return tool;
}

function inputItems(request: ModelRequest, dialect: ResponsesDialect, omitted: OmittedParts): Item[] {
  const ids = new WireCallIds(64);
  const out: Item[] = [];
  for (const message of request.messages) {
    switch (message.role) {
      case "system":
        out.push({ role: "system", content: textOf(message.content) });
        break;
      case "user":
        out.push({ role: "user", content: userContent(message.content) });
        break;
      case "assistant":
        out.push(...assistantItems(message, dialect, ids));
        break;
      case "tool":
        out.push(functionCallOutput(message, ids, omitted));
        break;
    }
  }
  return out;
}

function userContent(content: string | ContentBlock[]): string | Item[] {
  if (mediaOf(content).length === 0) return textOf(content);
  const parts: Item[] = [];
  for (const block of blocksOf(content)) {
    if (block.type === "text") parts.push({ type: "input_text", text: block.text });
    else if (block.type !== "reasoning") parts.push(inputPart(block, IN_USER_MESSAGE));
  }
  return parts;
}

/** A function's output holds the same parts as a user message (text, images, files). */
function functionCallOutput(message: ToolMessage, ids: WireCallIds, omitted: OmittedParts): Item {
  const callId = ids.forResult(message.toolCallId);
  if (mediaOf(message.content).length === 0)
    return { type: "function_call_output", call_id: callId, output: textOf(message.content) };
  const output: Item[] = [];
  for (const block of blocksOf(message.content)) {
    if (block.type === "text" && block.text !== "") output.push({ type: "input_text", text: block.text });
    else if (block.type !== "text" && block.type !== "reasoning")
      output.push(inputPart(block, omitted.inResult(message.name, callId)));
  }
  return { type: "function_call_output", call_id: callId, output };
}

/**
 * `input_image` (a data URL or the image's URL), `input_file` with `file_data` (a data URL)
 * or `file_url` for a PDF, `input_text` for a text document; for a part the Responses API cannot
 * take, what `refusePart` makes of it (a thrown `UserError` in a user message, a note in a tool
 * result).
 */
function inputPart(block: MediaBlock, place: PartPlace): Item {
  const note = (refusal: Refusal): Item => ({
    type: "input_text",
    text: refusePart(OPENAI_RESPONSES, block, place, refusal),
  });
  if (block.type === "audio") return note(emptyPart(block) ?? NO_AUDIO);
  const refusal = refusalOf(block);
  if (refusal) return note(refusal);
  if (block.type === "image") {
    const url = block.url ?? dataUrl({ data: block.data, mimeType: sentImageType(block) ?? block.mimeType });
    return { type: "input_image", image_url: url, detail: "auto" };
  }
  if (block.data !== undefined && isInlineText(block))
    return { type: "input_text", text: documentText(block) };
  const file: Item = { type: "input_file" };
  if (block.filename !== undefined || block.data !== undefined)
    file.filename = block.filename ?? "document.pdf";
  if (block.url !== undefined) file.file_url = block.url;
  else file.file_data = dataUrl(block);
  return file;
}

const NO_AUDIO: Refusal = {
  reason: "the Responses API takes no audio",
  fix: "the Responses API takes no audio input; transcribe it first, or use openai() (Chat Completions) with an audio model",
};

/** Why the Responses API cannot take this image or document, or undefined when it can. */
function refusalOf(block: ImageBlock | FileBlock): Refusal | undefined {
  const empty = emptyPart(block);
  if (empty) return empty;
  if (block.type === "image") {
    if (block.url !== undefined || WEB_IMAGE_TYPES.has(sentImageType(block) ?? "")) return undefined;
    return {
      reason: "the Responses API takes PNG, JPEG, GIF and WebP images only",
      fix: "the Responses API takes PNG, JPEG, GIF and WebP images; convert it",
    };
  }
  if ((block.data !== undefined && isInlineText(block)) || block.mimeType === "application/pdf")
    return undefined;
  return {
    reason: "the Responses API takes PDF and text documents only",
    fix: "the Responses API takes PDF and text documents only",
  };
}

/**
 * The assistant's items. A turn that came from this API with reasoning is replayed from the
 * output items kept in `providerData["openai-responses"].items` (reasoning with its
 * encrypted content, then the message and calls that followed it, ids intact). Anything
 * else is rebuilt from the neutral message; another provider's reasoning is dropped.
 */
function assistantItems(message: AssistantMessage, dialect: ResponsesDialect, ids: WireCallIds): Item[] {
  const calls = message.toolCalls ?? [];
  const kept = providerEntry(message.providerData, OPENAI_RESPONSES)?.items;
  if (Array.isArray(kept) && sameCalls(kept as Item[], calls)) {
    let next = 0;
    const out: Item[] = [];
    for (const item of kept as Item[]) {
      if (item.type === "function_call") out.push({ ...item, call_id: ids.forCall(calls[next++]!) });
      // Without `store`, a reasoning item is only valid with its encrypted content.
      else if (item.type === "reasoning" && !dialect.store && typeof item.encrypted_content !== "string")
        continue;
      else out.push(item);
    }
    return out;
  }
  const out: Item[] = [];
  const text = textOf(message.content);
  if (text !== "") out.push({ role: "assistant", content: text });
  for (const call of calls) {
    out.push({
      type: "function_call",
      call_id: ids.forCall(call),
      name: call.name,
      arguments: call.rawArgs ?? JSON.stringify(call.args ?? {}),
    });
  }
  return out;
}

function sameCalls(kept: Item[], calls: NonNullable<AssistantMessage["toolCalls"]>): boolean {
  const uses = kept.filter((item) => item.type === "function_call");
  return (
    uses.length === calls.length &&
    uses.every((use, i) => use.call_id === (calls[i]!.providerCallId ?? calls[i]!.id))
  );
}
