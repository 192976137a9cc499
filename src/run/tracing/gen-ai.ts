/**
 * Quiver's values in the shapes of the OpenTelemetry GenAI semantic conventions: provider and
 * model names, and (only when content capture is on) messages as the conventions' JSON
 * (`gen_ai.input.messages`, `gen_ai.output.messages`, `gen_ai.system_instructions`).
 */

import type { TraceAttributes } from "../../contract/tracer.js";
import type { ContentBlock, Message, ToolSpec, Usage } from "../../model/types.js";
import { toJsonText } from "../../plain-json.js";

/** Quiver provider prefixes whose convention name differs (`gen_ai.provider.name` well-known values). */
const PROVIDER_NAMES: Record<string, string> = {
  "openai-responses": "openai",
  google: "gcp.gemini",
  "google-vertex": "gcp.vertex_ai",
  vertex: "gcp.vertex_ai",
  mistral: "mistral_ai",
  xai: "x_ai",
  azure: "azure.ai.openai",
  bedrock: "aws.bedrock",
  "amazon-bedrock": "aws.bedrock",
};

/**
 * `gen_ai.provider.name` and `gen_ai.request.model` from a model's name. Quiver's providers name
 * their models `provider:model-id` (`openai:gpt-4.1-mini`); the AI SDK adapter's provider part
 * may carry an API suffix (`openai.chat:gpt-4.1-mini`). A name without a colon is both.
 */
export function providerAndModel(name: string): { provider: string; model: string } {
  const colon = name.indexOf(":");
  if (colon <= 0) return { provider: name, model: name };
  let provider = name.slice(0, colon);
  const model = name.slice(colon + 1);
  const mapped = PROVIDER_NAMES[provider];
  if (mapped) return { provider: mapped, model };
  const dot = provider.indexOf(".");
  if (dot > 0 && !/^(aws|azure|gcp|ibm)\./.test(provider)) {
    provider = provider.slice(0, dot);
    provider = PROVIDER_NAMES[provider] ?? provider;
  }
  return { provider, model };
}

/** Token counts as convention attributes (only those the provider reported). */
export function usageAttributes(usage: Partial<Usage>): TraceAttributes {
  const attributes: TraceAttributes = {};
  if (usage.inputTokens !== undefined) attributes["gen_ai.usage.input_tokens"] = usage.inputTokens;
  if (usage.outputTokens !== undefined) attributes["gen_ai.usage.output_tokens"] = usage.outputTokens;
  if (usage.cachedInputTokens !== undefined)
    attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cachedInputTokens;
  if (usage.cacheWriteTokens !== undefined)
    attributes["gen_ai.usage.cache_creation.input_tokens"] = usage.cacheWriteTokens;
  if (usage.reasoningTokens !== undefined)
    attributes["gen_ai.usage.reasoning.output_tokens"] = usage.reasoningTokens;
  if (usage.costUsd !== undefined) attributes["quiver.usage.cost_usd"] = usage.costUsd;
  return attributes;
}

type Part =
  | { type: "text"; content: string }
  | { type: "reasoning"; content: string }
  | { type: "blob"; modality: string; mime_type: string }
  | { type: "uri"; modality: string; mime_type?: string; uri: string }
  | { type: "tool_call"; id: string; name: string; arguments: unknown }
  | { type: "tool_call_response"; id: string; result: string };

type ConventionMessage = { role: string; parts: Part[]; finish_reason?: string };

/** Content blocks as convention parts. Media bytes are left out: a span is no place for megabytes. */
function parts(content: string | readonly ContentBlock[]): Part[] {
  if (typeof content === "string") return content ? [{ type: "text", content }] : [];
  return content.map((block): Part => {
    if (block.type === "text" || block.type === "reasoning") return { type: block.type, content: block.text };
    const modality = block.type === "file" ? "document" : block.type;
    if (block.url !== undefined)
      return { type: "uri", modality, uri: block.url, ...(block.mimeType && { mime_type: block.mimeType }) };
    return { type: "blob", modality, mime_type: block.mimeType };
  });
}

function textOf(content: string | readonly ContentBlock[]): string {
  if (typeof content === "string") return content;
  return content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

function conventionMessage(message: Message): ConventionMessage {
  switch (message.role) {
    case "tool":
      return {
        role: "tool",
        parts: [{ type: "tool_call_response", id: message.toolCallId, result: textOf(message.content) }],
      };
    case "assistant": {
      const out = parts(message.content);
      for (const call of message.toolCalls ?? [])
        out.push({ type: "tool_call", id: call.id, name: call.name, arguments: call.args });
      return { role: "assistant", parts: out };
    }
    default:
      return { role: message.role, parts: parts(message.content) };
  }
}

/** `gen_ai.input.messages`: the messages a request sent, in order. */
export function inputMessagesJson(messages: readonly Message[]): string {
  return toJsonText(messages.map(conventionMessage));
}

/** `gen_ai.output.messages`: one assistant message (the model's one choice). */
export function outputMessagesJson(
  text: string,
  reasoning: readonly ContentBlock[],
  calls: ReadonlyArray<{ id: string; name: string; args: string }>,
  finish: string,
): string {
  const out: Part[] = [...parts(reasoning)];
  if (text) out.push({ type: "text", content: text });
  for (const call of calls)
    out.push({ type: "tool_call", id: call.id, name: call.name, arguments: parsed(call.args) });
  return toJsonText([{ role: "assistant", parts: out, finish_reason: finish }]);
}

/** A run's final output as `gen_ai.output.messages`. */
export function finalOutputJson(output: unknown, stopReason: string): string {
  const content = typeof output === "string" ? output : toJsonText(output);
  return toJsonText([{ role: "assistant", parts: [{ type: "text", content }], finish_reason: stopReason }]);
}

/** `gen_ai.system_instructions`. */
export function systemInstructionsJson(system: string): string {
  return toJsonText([{ type: "text", content: system }]);
}

/** `gen_ai.tool.definitions`. */
export function toolDefinitionsJson(tools: readonly ToolSpec[]): string {
  return toJsonText(
    tools.map((t) => ({
      type: "function",
      name: t.name,
      description: t.description,
      parameters: t.parameters,
    })),
  );
}

/** Arguments as JSON text for `gen_ai.tool.call.arguments` (raw text when the model's JSON did not parse). */
export function argumentsJson(args: unknown, rawArgs: string | undefined): string {
  return rawArgs ?? toJsonText(args);
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text.trim() === "" ? "{}" : text);
  } catch {
    return text;
  }
}
