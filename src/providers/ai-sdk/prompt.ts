/**
 * A `ModelRequest` as AI SDK call options (`LanguageModelV2CallOptions` /
 * `LanguageModelV3CallOptions`): the prompt, the function tools, and the settings the
 * specification has fields for.
 */
import type {
  LanguageModelV2CallOptions,
  LanguageModelV2Prompt,
  LanguageModelV3CallOptions,
  LanguageModelV3Prompt,
} from "@ai-sdk/provider";
import { isMediaBlock } from "../../model/media.js";
import { objectRootSchema } from "../../model/schema-lowering.js";
import type {
  AssistantMessage,
  ContentBlock,
  MediaBlock,
  ModelRequest,
  ToolMessage,
} from "../../model/types.js";
import {
  blocksOf,
  emptyPart,
  mediaOf,
  OmittedParts,
  type PartPlace,
  providerEntry,
  refusePart,
  sentImageType,
  textOf,
  unsupportedPart,
} from "../message-content.js";
import type { Warn } from "../streaming-turn.js";
import { WireCallIds } from "../tool-call-ids.js";

export type SpecVersion = "v2" | "v3";
export type CallOptions = LanguageModelV2CallOptions | LanguageModelV3CallOptions;
type Part = Record<string, unknown>;
type PromptMessage = { role: string; content: string | Part[] };

/** The `providerData` key of a turn from an AI SDK model of this provider (`ai-sdk:anthropic.messages`). */
export function replayKey(provider: string): string {
  return `ai-sdk:${provider}`;
}

export function callOptions(
  request: ModelRequest,
  version: SpecVersion,
  provider: string,
  signal: AbortSignal,
  warn: Warn,
): CallOptions {
  const settings = request.settings;
  const omitted = new OmittedParts(provider);
  const options: Record<string, unknown> = {
    prompt: prompt(request, version, provider, omitted),
    abortSignal: signal,
  };
  omitted.report(warn);
  if (settings.maxTokens !== undefined) options.maxOutputTokens = settings.maxTokens;
  if (settings.temperature !== undefined) options.temperature = settings.temperature;
  if (settings.topP !== undefined) options.topP = settings.topP;
  if (settings.stop !== undefined && settings.stop.length > 0) options.stopSequences = settings.stop;
  if (request.tools.length > 0) {
    options.tools = request.tools.map((spec) => {
      const root = objectRootSchema(spec.parameters);
      if (root.simplified) warn(`tool ${spec.name}: ${root.simplified}`, spec.name);
      const tool: Part = {
        type: "function",
        name: spec.name,
        description: spec.description,
        inputSchema: root.schema,
      };
      // `strict` exists from specification v3 on; the provider lowers the schema itself.
      if (version === "v3" && spec.strict) tool.strict = true;
      return tool;
    });
    const choice = settings.toolChoice;
    if (choice !== undefined)
      options.toolChoice =
        typeof choice === "string" ? { type: choice } : { type: "tool", toolName: choice.name };
  }
  if (settings.parallelToolCalls !== undefined) {
    warn(
      "parallelToolCalls has no field in the AI SDK specification; set it through modelSettings.extra (providerOptions)",
    );
  }
  if (settings.reasoning !== undefined) {
    warn(
      "reasoning has no field in the AI SDK specification; set it through modelSettings.extra (providerOptions)",
    );
  }
  const format = settings.responseFormat;
  if (format) options.responseFormat = { type: "json", schema: format.schema, name: format.name };
  // `extra` is the AI SDK's providerOptions, keyed by provider: { openai: { reasoningEffort: "low" } }.
  if (settings.extra) options.providerOptions = settings.extra;
  return options as unknown as CallOptions;
}

function prompt(
  request: ModelRequest,
  version: SpecVersion,
  provider: string,
  omitted: OmittedParts,
): LanguageModelV2Prompt & LanguageModelV3Prompt {
  const ids = new WireCallIds(256);
  const out: PromptMessage[] = [];
  if (request.system) out.push({ role: "system", content: request.system });
  for (const message of request.messages) {
    switch (message.role) {
      case "system":
        out.push({ role: "system", content: textOf(message.content) });
        break;
      case "user":
        out.push({ role: "user", content: userParts(message.content, provider) });
        break;
      case "assistant":
        out.push({ role: "assistant", content: assistantParts(message, provider, ids) });
        break;
      case "tool": {
        const part = toolResult(message, version, provider, ids, omitted);
        const last = out.at(-1);
        // One tool message holds all results of a turn.
        if (last?.role === "tool" && Array.isArray(last.content)) last.content.push(part);
        else out.push({ role: "tool", content: [part] });
        break;
      }
    }
  }
  return out as unknown as LanguageModelV2Prompt & LanguageModelV3Prompt;
}

/**
 * Every image, document and recording is a `file` part: base64 data, or a `URL` the AI SDK
 * provider fetches or passes on (an image URL without a media type is `image/*`). Which media
 * types the model takes is the provider's to say; a part with no bytes is refused here.
 */
function userParts(content: string | ContentBlock[], provider: string): Part[] {
  const parts: Part[] = [];
  for (const block of blocksOf(content)) {
    if (block.type === "text") parts.push({ type: "text", text: block.text });
    else if (isMediaBlock(block)) {
      const empty = emptyPart(block);
      if (empty) throw unsupportedPart(provider, block, "in a user message", empty.fix);
      const part: Part = {
        type: "file",
        data: block.url !== undefined ? new URL(block.url) : block.data,
        mediaType: mediaTypeOf(block),
      };
      if (block.type === "file" && block.filename !== undefined) part.filename = block.filename;
      parts.push(part);
    }
  }
  return parts;
}

function toolResult(
  message: ToolMessage,
  version: SpecVersion,
  provider: string,
  ids: WireCallIds,
  omitted: OmittedParts,
): Part {
  const callId = ids.forResult(message.toolCallId);
  const base = { type: "tool-result", toolCallId: callId, toolName: message.name };
  if (mediaOf(message.content).length === 0) {
    return {
      ...base,
      output: { type: message.isError ? "error-text" : "text", value: textOf(message.content) },
    };
  }
  const value: Part[] = [];
  const place = omitted.inResult(message.name, callId);
  for (const block of blocksOf(message.content)) {
    if (block.type === "text") value.push({ type: "text", text: block.text });
    else if (isMediaBlock(block)) {
      const part = outputPart(block, version, provider, place);
      value.push(typeof part === "string" ? { type: "text", text: part } : part);
    }
  }
  return { ...base, output: { type: "content", value } };
}

/**
 * v2 calls every binary part "media" and has none for a URL; v3 has image-data, file-data and
 * their URL forms. A part neither can carry is a note (see `refusePart`).
 */
function outputPart(
  block: MediaBlock,
  version: SpecVersion,
  provider: string,
  place: PartPlace,
): Part | string {
  const empty = emptyPart(block);
  if (empty) return refusePart(provider, block, place, empty);
  if (version === "v2") {
    if (block.url !== undefined)
      return refusePart(provider, block, place, {
        reason: "AI SDK 5 tool results take no URLs",
        fix: "AI SDK 5 (specification v2) tool results take bytes only; pass them as data",
      });
    return { type: "media", data: block.data, mediaType: mediaTypeOf(block) };
  }
  if (block.type === "image") {
    return block.url !== undefined
      ? { type: "image-url", url: block.url }
      : { type: "image-data", data: block.data, mediaType: mediaTypeOf(block) };
  }
  if (block.url !== undefined) return { type: "file-url", url: block.url, mediaType: block.mimeType };
  const part: Part = { type: "file-data", data: block.data, mediaType: block.mimeType };
  if (block.type === "file" && block.filename !== undefined) part.filename = block.filename;
  return part;
}

/** A part's media type: an image's as its bytes say (see `sentImageType`); `image/*` for an image URL without one. */
function mediaTypeOf(block: MediaBlock): string {
  return (block.type === "image" ? sentImageType(block) : block.mimeType) ?? "image/*";
}

/**
 * The assistant's parts. A turn from this same AI SDK provider is replayed from the parts
 * kept in `providerData` (reasoning with its provider metadata, e.g. a thinking signature);
 * otherwise the parts are rebuilt and reasoning is dropped (another provider's is useless
 * here, and some APIs reject reasoning without its signature).
 */
function assistantParts(message: AssistantMessage, provider: string, ids: WireCallIds): Part[] {
  const calls = message.toolCalls ?? [];
  const kept = providerEntry(message.providerData, replayKey(provider))?.content;
  if (Array.isArray(kept)) {
    const keptCalls = (kept as Part[]).filter((part) => part.type === "tool-call");
    const same =
      keptCalls.length === calls.length &&
      keptCalls.every((part, i) => part.toolCallId === (calls[i]!.providerCallId ?? calls[i]!.id));
    if (same) {
      let next = 0;
      return (kept as Part[]).map((part) =>
        part.type === "tool-call" ? { ...part, toolCallId: ids.forCall(calls[next++]!) } : part,
      );
    }
  }
  const parts: Part[] = [];
  const text = textOf(message.content);
  if (text !== "") parts.push({ type: "text", text });
  for (const call of calls) {
    parts.push({
      type: "tool-call",
      toolCallId: ids.forCall(call),
      toolName: call.name,
      input: call.args ?? {},
    });
  }
  return parts;
}
