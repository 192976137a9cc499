/**
 * A `ModelRequest` as an Anthropic Messages API request body.
 *
 * The Messages API is stricter than the neutral transcript: roles alternate, tool results
 * are `tool_result` blocks at the start of the next user message, text blocks must not be
 * empty, system text lives outside the messages, and thinking blocks must come back exactly
 * as they were streamed (signature included) when a tool loop continues.
 */

import { isMediaBlock } from "../../model/media.js";
import { objectRootSchema } from "../../model/schema-lowering.js";
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

export const ANTHROPIC = "anthropic";

export type AnthropicDialect = {
  model: string;
  /** `max_tokens` when the request's settings give none (the API requires it). */
  maxTokens: number;
  /** Mark the system prompt, the tools and the latest message as cacheable. */
  promptCaching: boolean;
};

type Block = Record<string, unknown>;
type WireMessage = { role: "user" | "assistant"; content: Block[] };

/** Thinking budget for `reasoning.effort` when no `budgetTokens` is given. */
const EFFORT_BUDGET = { low: 1024, medium: 4096, high: 16384 } as const;

export function encodeMessagesBody(
  request: ModelRequest,
  dialect: AnthropicDialect,
  warn: Warn,
): Record<string, unknown> {
  const settings = request.settings;
  const systemParts: string[] = [];
  if (request.system) systemParts.push(request.system);
  const omitted = new OmittedParts(ANTHROPIC);
  const messages = wireMessages(request, systemParts, request.tools.length > 0, omitted);
  omitted.report(warn);
  const format = settings.responseFormat;
  if (format) {
    // The Messages API has no generally available structured-output mode: the schema goes
    // into the system prompt, and the agent's outputType validation catches a wrong answer.
    warn(
      "responseFormat has no native Anthropic form; the JSON Schema was added to the system prompt instead",
    );
    systemParts.push(
      `Answer with a single JSON value that matches this JSON Schema (named "${format.name}"), and nothing else:\n${JSON.stringify(format.schema)}`,
    );
  }
  const body: Record<string, unknown> = {
    model: dialect.model,
    max_tokens: settings.maxTokens ?? dialect.maxTokens,
  };
  if (systemParts.length > 0) {
    const system: Block = { type: "text", text: systemParts.join("\n\n") };
    if (dialect.promptCaching) system.cache_control = { type: "ephemeral" };
    body.system = [system];
  }
  body.messages = messages;
  if (dialect.promptCaching) markLastBlockCacheable(messages);
  body.stream = true;

  const thinking = thinkingFor(messages, settings.reasoning, warn);
  if (thinking !== undefined) {
    body.thinking = { type: "enabled", budget_tokens: thinking };
    if ((body.max_tokens as number) <= thinking) {
      body.max_tokens = thinking + (settings.maxTokens ?? dialect.maxTokens);
      warn(
        `max_tokens was raised to ${body.max_tokens as number}: it must exceed the thinking budget (${thinking})`,
      );
    }
  }
  if (request.tools.length > 0) {
    const tools = request.tools.map((spec) => anthropicTool(spec, warn));
    if (dialect.promptCaching) tools[tools.length - 1]!.cache_control = { type: "ephemeral" };
    body.tools = tools;
    const choice = toolChoice(settings.toolChoice, settings.parallelToolCalls, thinking !== undefined, warn);
    if (choice) body.tool_choice = choice;
  }
  if (settings.temperature !== undefined) {
    if (thinking !== undefined)
      warn("temperature is not supported together with extended thinking and was not sent");
    else body.temperature = settings.temperature;
  }
  if (settings.topP !== undefined) {
    if (thinking !== undefined)
      warn("topP is not supported together with extended thinking and was not sent");
    else body.top_p = settings.topP;
  }
  if (settings.stop !== undefined && settings.stop.length > 0) body.stop_sequences = settings.stop;
  if (settings.extra) Object.assign(body, settings.extra);
  return body;
}

/**
 * The thinking budget, unless this request continues a tool loop that began without thinking.
 * Anthropic runs a whole assistant turn, tool loop included, in one thinking mode: with thinking
 * on, the assistant message that opened the current loop must start with a signed thinking
 * block, and one from another provider (a fallback, a handoff) or built by hand has none. The
 * API allows thinking to be off for such a request, so it is, and says why.
 */
function thinkingFor(
  messages: WireMessage[],
  reasoning: ModelRequest["settings"]["reasoning"],
  warn: Warn,
): number | undefined {
  const budget = thinkingBudget(reasoning);
  if (budget === undefined) return undefined;
  const opener = loopOpener(messages);
  const first = opener?.content[0]?.type;
  if (opener === undefined || first === "thinking" || first === "redacted_thinking") return budget;
  warn(
    "extended thinking was not sent for this request: it continues a tool loop whose first assistant turn has no thinking block (another provider's turn after a fallback or handoff, or one built by hand), and Anthropic needs the whole loop in one thinking mode",
  );
  // With thinking off, the loop must hold no thinking blocks either.
  for (const message of messagesOfLoop(messages))
    message.content = message.content.filter(
      (block) => block.type !== "thinking" && block.type !== "redacted_thinking",
    );
  return undefined;
}

/**
 * The assistant messages of the tool loop the request ends in: those after the last user
 * message that answers no tool call. A user message holding any `tool_result` (results with an
 * injected message merged in) counts as part of the loop, which can only drop thinking where it
 * was not needed, never keep it where the API refuses it.
 */
function messagesOfLoop(messages: WireMessage[]): WireMessage[] {
  const loop: WireMessage[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role === "assistant") loop.unshift(message);
    else if (!message.content.some((block) => block.type === "tool_result")) break;
  }
  return loop;
}

/** The assistant message that opened the tool loop this request continues, if it continues one. */
function loopOpener(messages: WireMessage[]): WireMessage | undefined {
  return messagesOfLoop(messages)[0];
}

function thinkingBudget(reasoning: ModelRequest["settings"]["reasoning"]): number | undefined {
  if (!reasoning) return undefined;
  if (reasoning.budgetTokens !== undefined) return Math.max(1024, reasoning.budgetTokens);
  return reasoning.effort ? EFFORT_BUDGET[reasoning.effort] : undefined;
}

function toolChoice(
  choice: ModelRequest["settings"]["toolChoice"],
  parallel: boolean | undefined,
  thinking: boolean,
  warn: Warn,
): Block | undefined {
  let out: Block | undefined;
  if (choice === "none") return { type: "none" };
  if (choice === "required") out = { type: "any" };
  else if (typeof choice === "object") out = { type: "tool", name: choice.name };
  else if (choice === "auto") out = { type: "auto" };
  if (thinking && out && out.type !== "auto") {
    warn(
      "with extended thinking Anthropic only allows tool_choice auto; the forced tool choice was not sent",
    );
    out = { type: "auto" };
  }
  if (parallel === false) out = { ...(out ?? { type: "auto" }), disable_parallel_tool_use: true };
  return out;
}

function anthropicTool(spec: ToolSpec, warn: Warn): Block {
  const root = objectRootSchema(spec.parameters);
  if (root.simplified) warn(`tool ${spec.name}: ${root.simplified}`, spec.name);
  // Anthropic has no strict mode in its stable API; Quiver's own validation still applies.
  return { name: spec.name, description: spec.description, input_schema: root.schema };
}

/**
 * `toolsDefined` false: the API rejects tool_use / tool_result blocks in a request without
 * tools (an agent without tools after a handoff), so calls and results go as plain text.
 */
function wireMessages(
  request: ModelRequest,
  systemParts: string[],
  toolsDefined: boolean,
  omitted: OmittedParts,
): WireMessage[] {
  const ids = new WireCallIds(64);
  const out: WireMessage[] = [];
  const push = (role: WireMessage["role"], content: Block[]) => {
    if (content.length === 0) return;
    const last = out.at(-1);
    // Roles must alternate: consecutive messages of one role (tool results followed by a
    // user message, or an empty assistant turn dropped in between) are merged.
    if (last && last.role === role) last.content.push(...content);
    else out.push({ role, content });
  };
  for (const message of request.messages) {
    switch (message.role) {
      case "system": {
        const text = textOf(message.content);
        if (text) systemParts.push(text);
        break;
      }
      case "user":
        push("user", userBlocks(message.content, IN_USER_MESSAGE));
        break;
      case "assistant":
        push("assistant", toolsDefined ? assistantBlocks(message, ids) : assistantAsText(message));
        break;
      case "tool":
        push("user", toolsDefined ? [toolResult(message, ids, omitted)] : toolResultAsText(message, omitted));
        break;
    }
  }
  return out;
}

function userBlocks(content: string | ContentBlock[], place: PartPlace): Block[] {
  const out: Block[] = [];
  for (const block of blocksOf(content)) {
    if (block.type === "text" && block.text !== "") out.push({ type: "text", text: block.text });
    else if (isMediaBlock(block)) {
      const refusal = refusalOf(block);
      if (refusal) out.push({ type: "text", text: refusePart(ANTHROPIC, block, place, refusal) });
      else if (block.type !== "audio") out.push(mediaBlock(block));
    }
  }
  return out;
}

/**
 * The API's limit on one image, measured on its base64 text (not the decoded bytes): "image
 * exceeds 5 MB maximum: N bytes > 5242880 bytes".
 */
export const MAX_IMAGE_BASE64 = 5 * 1024 * 1024;

/** Why Claude cannot take this part, or undefined when it can. */
function refusalOf(block: MediaBlock): Refusal | undefined {
  const empty = emptyPart(block);
  if (empty) return empty;
  if (block.type === "audio")
    return { reason: "anthropic takes no audio", fix: "Claude takes no audio input; transcribe it first" };
  if (block.type === "image") {
    if (block.url !== undefined) return undefined;
    if (!WEB_IMAGE_TYPES.has(sentImageType(block) ?? ""))
      return {
        reason: "anthropic takes JPEG, PNG, GIF and WebP images only",
        fix: "Claude takes JPEG, PNG, GIF and WebP images; convert it",
      };
    if (block.data.length > MAX_IMAGE_BASE64) {
      const size = block.data.length.toLocaleString("en-US");
      return {
        reason: `anthropic takes images up to 5 MB as base64 (5,242,880 characters) and this one is ${size}`,
        fix: `Anthropic's limit is 5 MB of base64 (5,242,880 characters; about 3.75 MB of image) and this one is ${size}: scale or compress it first`,
      };
    }
    return undefined;
  }
  if (block.data !== undefined && isInlineText(block)) return undefined;
  if (block.mimeType === "application/pdf") return undefined;
  return block.url !== undefined
    ? {
        reason: "anthropic takes only PDFs by URL",
        fix: "a document by URL must be a PDF; fetch it and pass its bytes as data",
      }
    : {
        reason: "anthropic takes PDF and text documents only",
        fix: "Claude takes PDF and text documents only",
      };
}

/**
 * `image` blocks (base64 or URL source; JPEG, PNG, GIF, WebP, sent with the type the bytes say)
 * and `document` blocks: a PDF as base64 or by URL, a text document as a text source. The
 * filename becomes the document's title. Only parts `refusalOf` lets through get here.
 */
function mediaBlock(block: ImageBlock | FileBlock): Block {
  if (block.type === "image") {
    if (block.url !== undefined) return { type: "image", source: { type: "url", url: block.url } };
    return {
      type: "image",
      source: { type: "base64", media_type: sentImageType(block), data: block.data },
    };
  }
  let source: Block;
  if (block.data !== undefined && isInlineText(block)) {
    source = {
      type: "text",
      media_type: "text/plain",
      data: Buffer.from(block.data, "base64").toString("utf8"),
    };
  } else if (block.url !== undefined) source = { type: "url", url: block.url };
  else source = { type: "base64", media_type: "application/pdf", data: block.data };
  const out: Block = { type: "document", source };
  if (block.filename) out.title = block.filename.slice(0, 500);
  return out;
}

function toolResult(message: ToolMessage, ids: WireCallIds, omitted: OmittedParts): Block {
  const id = ids.forResult(message.toolCallId);
  const content = userBlocks(message.content, omitted.inResult(message.name, id));
  const block: Block = { type: "tool_result", tool_use_id: id };
  // An empty tool_result is valid; an empty text block inside one is not.
  if (content.length > 0) block.content = content;
  if (message.isError) block.is_error = true;
  return block;
}

/**
 * The assistant's blocks. When the turn came from Anthropic with thinking, the exact content
 * kept in `providerData.anthropic.content` is replayed (thinking signatures must be intact);
 * otherwise the blocks are rebuilt from the neutral message, and reasoning that carries no
 * Anthropic signature (another provider's) is dropped.
 */
function assistantBlocks(message: AssistantMessage, ids: WireCallIds): Block[] {
  const calls = message.toolCalls ?? [];
  const kept = providerEntry(message.providerData, ANTHROPIC)?.content;
  if (Array.isArray(kept) && sameCalls(kept as Block[], calls)) {
    let next = 0;
    return (kept as Block[]).map((block) => {
      if (block.type !== "tool_use") return block;
      return { ...block, id: ids.forCall(calls[next++]!) };
    });
  }
  const out: Block[] = [];
  for (const block of reasoningOf(message.content)) {
    const data = providerEntry(block.providerData, ANTHROPIC);
    if (typeof data?.signature === "string") {
      out.push({ type: "thinking", thinking: block.text, signature: data.signature });
    } else if (typeof data?.redactedData === "string") {
      out.push({ type: "redacted_thinking", data: data.redactedData });
    }
  }
  const text = textOf(message.content);
  if (text !== "") out.push({ type: "text", text });
  for (const call of calls) {
    const input =
      call.args !== null && typeof call.args === "object" && !Array.isArray(call.args) ? call.args : {};
    out.push({ type: "tool_use", id: ids.forCall(call), name: call.name, input });
  }
  return out;
}

function assistantAsText(message: AssistantMessage): Block[] {
  const lines = [textOf(message.content)];
  for (const call of message.toolCalls ?? [])
    lines.push(`[called tool ${call.name} with ${JSON.stringify(call.args ?? {})}]`);
  const text = lines.filter((line) => line !== "").join("\n");
  return text === "" ? [] : [{ type: "text", text }];
}

function toolResultAsText(message: ToolMessage, omitted: OmittedParts): Block[] {
  const prefix = `[result of tool ${message.name}${message.isError ? " (error)" : ""}]`;
  const text = textOf(message.content);
  const media = userBlocks(mediaOf(message.content), omitted.inResult(message.name, message.toolCallId));
  return [{ type: "text", text: text === "" ? prefix : `${prefix}\n${text}` }, ...media];
}

/** The kept content belongs to this message only if its tool_use blocks are these calls. */
function sameCalls(kept: Block[], calls: NonNullable<AssistantMessage["toolCalls"]>): boolean {
  const uses = kept.filter((block) => block.type === "tool_use");
  return (
    uses.length === calls.length &&
    uses.every((use, i) => use.id === (calls[i]!.providerCallId ?? calls[i]!.id))
  );
}

/** A cache breakpoint on the newest content: the next turn reads the whole prefix from cache. */
function markLastBlockCacheable(messages: WireMessage[]): void {
  const last = messages.at(-1)?.content;
  if (!last || last.length === 0) return;
  const block = last[last.length - 1]!;
  // Thinking blocks cannot carry cache_control.
  if (block.type === "thinking" || block.type === "redacted_thinking") return;
  last[last.length - 1] = { ...block, cache_control: { type: "ephemeral" } };
}
