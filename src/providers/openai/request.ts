/**
 * A `ModelRequest` as a Chat Completions request body (OpenAI and compatible servers).
 */

import { objectRootSchema, toStrictSchema } from "../../model/schema-lowering.js";
import type {
  AssistantMessage,
  MediaBlock,
  Message,
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
  reasoningOf,
  refusePart,
  sentImageType,
  textOf,
  WEB_IMAGE_TYPES,
} from "../message-content.js";
import type { Warn } from "../streaming-turn.js";
import { WireCallIds } from "../tool-call-ids.js";

/** What differs between OpenAI itself and the servers that speak its format. */
export type ChatDialect = {
  /** The key for `providerData` and the name in errors (`"openai"`, `"ollama"`…). */
  provider: string;
  model: string;
  /** OpenAI wants `max_completion_tokens`; most compatible servers only know `max_tokens`. */
  maxTokensField: "max_completion_tokens" | "max_tokens";
  /** Whether `strict: true` tools are sent in strict form. */
  strictTools: boolean;
  /** Send reasoning back as `reasoning_content` (DeepSeek-style servers that need it across a tool loop). */
  replayReasoningContent: boolean;
};

/** OpenAI rejects tool-call ids longer than 40 characters. */
const MAX_CALL_ID = 40;

export function encodeChatBody(
  request: ModelRequest,
  dialect: ChatDialect,
  warn: Warn,
): Record<string, unknown> {
  const omitted = new OmittedParts(dialect.provider);
  const body: Record<string, unknown> = {
    model: dialect.model,
    messages: chatMessages(request, dialect, omitted),
    stream: true,
    stream_options: { include_usage: true },
  };
  omitted.report(warn);
  const settings = request.settings;
  if (request.tools.length > 0) {
    body.tools = request.tools.map((spec) => chatTool(spec, dialect, warn));
    const choice = settings.toolChoice;
    if (choice !== undefined) {
      body.tool_choice =
        typeof choice === "string" ? choice : { type: "function", function: { name: choice.name } };
    }
    if (settings.parallelToolCalls !== undefined) body.parallel_tool_calls = settings.parallelToolCalls;
  }
  if (settings.temperature !== undefined) body.temperature = settings.temperature;
  if (settings.topP !== undefined) body.top_p = settings.topP;
  if (settings.maxTokens !== undefined) body[dialect.maxTokensField] = settings.maxTokens;
  if (settings.stop !== undefined && settings.stop.length > 0) body.stop = settings.stop;
  if (settings.reasoning?.effort !== undefined) body.reasoning_effort = settings.reasoning.effort;
  else if (settings.reasoning?.budgetTokens !== undefined) {
    warn("reasoning.budgetTokens has no Chat Completions equivalent and was ignored; use reasoning.effort");
  }
  const format = settings.responseFormat;
  if (format) {
    const jsonSchema: Record<string, unknown> = { name: format.name, schema: format.schema };
    if (format.strict) {
      const strict = toStrictSchema(format.schema);
      if ("schema" in strict) {
        jsonSchema.schema = strict.schema;
        jsonSchema.strict = true;
      } else {
        warn(`responseFormat ${format.name} was sent non-strict: ${strict.reason}`);
      }
    }
    body.response_format = { type: "json_schema", json_schema: jsonSchema };
  }
  if (settings.extra) Object.assign(body, settings.extra);
  return body;
}

function chatTool(spec: ToolSpec, dialect: ChatDialect, warn: Warn): Record<string, unknown> {
  const fn: Record<string, unknown> = { name: spec.name, description: spec.description };
  const root = objectRootSchema(spec.parameters);
  if (root.simplified) warn(`tool ${spec.name}: ${root.simplified}`, spec.name);
  fn.parameters = root.schema;
  if (spec.strict && dialect.strictTools && !root.simplified) {
    const strict = toStrictSchema(spec.parameters);
    if ("schema" in strict) {
      fn.parameters = strict.schema;
      fn.strict = true;
    } else {
      warn(`tool ${spec.name} was sent non-strict: ${strict.reason}`, spec.name);
    }
  }
  return { type: "function", function: fn };
}

function chatMessages(
  request: ModelRequest,
  dialect: ChatDialect,
  omitted: OmittedParts,
): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  if (request.system !== undefined && request.system !== "")
    out.push({ role: "system", content: request.system });
  const ids = new WireCallIds(MAX_CALL_ID);
  const messages = request.messages;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role === "tool") {
      // Tool messages hold text only: images of a run of results follow in one user message.
      const run: ToolMessage[] = [];
      while (i < messages.length && messages[i]!.role === "tool") run.push(messages[i++] as ToolMessage);
      i--;
      out.push(...toolResults(run, ids, dialect.provider, omitted));
      continue;
    }
    out.push(chatMessage(message, dialect, ids));
  }
  return out;
}

function chatMessage(message: Exclude<Message, ToolMessage>, dialect: ChatDialect, ids: WireCallIds) {
  if (message.role === "assistant") return assistantMessage(message, dialect, ids);
  if (message.role === "system") return { role: "system", content: textOf(message.content) };
  if (mediaOf(message.content).length === 0) return { role: "user", content: textOf(message.content) };
  const parts: Record<string, unknown>[] = [];
  for (const block of blocksOf(message.content)) {
    if (block.type === "text") parts.push({ type: "text", text: block.text });
    else if (block.type !== "reasoning") {
      const part = mediaPart(block, dialect.provider, IN_USER_MESSAGE);
      parts.push(typeof part === "string" ? { type: "text", text: part } : part);
    }
  }
  return { role: "user", content: parts };
}

/** What wav and mp3 are called in `input_audio.format`; the only recordings Chat Completions takes. */
const AUDIO_FORMATS: Record<string, string> = {
  "audio/wav": "wav",
  "audio/x-wav": "wav",
  "audio/wave": "wav",
  "audio/mpeg": "mp3",
  "audio/mp3": "mp3",
};

/**
 * One image, document or recording as a user-message part: `image_url` (a data URL or the
 * image's URL), `file` with `file_data` for a PDF, text for a text document, `input_audio`
 * for wav and mp3; or, for a part Chat Completions cannot take, what `refusePart` makes of it
 * (a thrown `UserError` in a user message, a note in a tool result).
 */
function mediaPart(block: MediaBlock, provider: string, place: PartPlace): Record<string, unknown> | string {
  const refusal = refusalOf(block);
  if (refusal) return refusePart(provider, block, place, refusal);
  if (block.type === "image") {
    const url = block.url ?? dataUrl({ data: block.data, mimeType: sentImageType(block) ?? block.mimeType });
    return { type: "image_url", image_url: { url } };
  }
  if (block.type === "audio")
    return {
      type: "input_audio",
      input_audio: { data: block.data, format: AUDIO_FORMATS[block.mimeType.toLowerCase()] },
    };
  if (block.url === undefined && isInlineText(block)) return { type: "text", text: documentText(block) };
  return {
    type: "file",
    file: {
      filename: block.filename ?? "document.pdf",
      file_data: dataUrl(block as { data: string; mimeType: string }),
    },
  };
}

/** Why Chat Completions cannot take this part, or undefined when it can. */
function refusalOf(block: MediaBlock): Refusal | undefined {
  const empty = emptyPart(block);
  if (empty) return empty;
  if (block.type === "image") {
    if (block.url !== undefined || WEB_IMAGE_TYPES.has(sentImageType(block) ?? "")) return undefined;
    return {
      reason: "Chat Completions takes PNG, JPEG, GIF and WebP images only",
      fix: "Chat Completions takes PNG, JPEG, GIF and WebP images; convert it",
    };
  }
  if (block.type === "audio") {
    if (AUDIO_FORMATS[block.mimeType.toLowerCase()]) return undefined;
    return {
      reason: "Chat Completions takes wav and mp3 recordings only",
      fix: "Chat Completions takes wav and mp3 recordings only; convert it",
    };
  }
  if (block.url !== undefined)
    return {
      reason: "Chat Completions takes no document by URL",
      fix: "Chat Completions has no field for a document's URL; fetch it and pass its bytes as data (or use openaiResponses)",
    };
  if (isInlineText(block) || block.mimeType === "application/pdf") return undefined;
  return {
    reason: "Chat Completions takes PDF and text documents only",
    fix: "Chat Completions takes PDF and text documents only",
  };
}

function assistantMessage(message: AssistantMessage, dialect: ChatDialect, ids: WireCallIds) {
  const text = textOf(message.content);
  const out: Record<string, unknown> = { role: "assistant", content: text };
  const calls = message.toolCalls ?? [];
  const kept = providerEntry(message.providerData, dialect.provider);
  if (calls.length > 0) {
    if (text === "") out.content = null;
    // What this server attached to a call (Gemini's thought signature) goes back with it.
    const extras = kept?.callExtras as Record<string, unknown> | undefined;
    out.tool_calls = calls.map((call) => {
      const wire: Record<string, unknown> = {
        id: ids.forCall(call),
        type: "function",
        function: { name: call.name, arguments: call.rawArgs ?? JSON.stringify(call.args ?? {}) },
      };
      const extra = extras?.[call.providerCallId ?? call.id];
      if (extra !== undefined) wire.extra_content = extra;
      return wire;
    });
  }
  if (dialect.replayReasoningContent) {
    // Only reasoning this server produced goes back; another provider's is dropped. The stream
    // keeps it on the message (`finish.providerData`); a transcript built by hand may carry it
    // on reasoning blocks instead.
    const reasoning = kept?.reasoningContent;
    const own = reasoningOf(message.content).filter((block) =>
      providerEntry(block.providerData, dialect.provider),
    );
    if (typeof reasoning === "string" && reasoning !== "") out.reasoning_content = reasoning;
    else if (own.length > 0) out.reasoning_content = own.map((block) => block.text).join("");
  }
  return out;
}

/**
 * Tool messages hold text only: the images, documents and recordings of a run of results
 * follow in one user message, each result's under a line naming its call. A part Chat
 * Completions cannot take becomes a note in its tool message.
 */
function toolResults(
  run: ToolMessage[],
  ids: WireCallIds,
  provider: string,
  omitted: OmittedParts,
): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const attached: Record<string, unknown>[] = [];
  for (const result of run) {
    const callId = ids.forResult(result.toolCallId);
    const place = omitted.inResult(result.name, callId);
    const lines = [textOf(result.content)];
    const parts: Record<string, unknown>[] = [];
    let images = true;
    for (const block of mediaOf(result.content)) {
      const part = mediaPart(block, provider, place);
      if (typeof part === "string") lines.push(part);
      else {
        parts.push(part);
        images &&= block.type === "image";
      }
    }
    if (parts.length > 0) {
      const noun = images ? "image" : "attachment";
      lines.push(
        `[${parts.length} ${noun}${parts.length === 1 ? "" : "s"} attached in the next user message]`,
      );
      attached.push(
        {
          type: "text",
          text: `${images ? "Images" : "Attachments"} returned by ${result.name} (call ${callId}):`,
        },
        ...parts,
      );
    }
    out.push({ role: "tool", tool_call_id: callId, content: lines.filter((line) => line !== "").join("\n") });
  }
  if (attached.length > 0) out.push({ role: "user", content: attached });
  return out;
}
