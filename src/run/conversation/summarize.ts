import { untilAborted } from "../../abort.js";
import { ProviderError } from "../../errors.js";
import { describeMedia, isMediaBlock } from "../../model/media.js";
import type { Message, Model, Usage } from "../../model/types.js";

const SUMMARY_SYSTEM =
  "You condense the earlier part of a conversation between a user, an AI assistant and the tools it called, " +
  "so the assistant can continue the conversation without it. Keep every fact, decision, name, number, id, " +
  "file path, open question and promise the assistant will need; note which tools were called and what they " +
  "found. Drop pleasantries and repetition. Write plain prose or short bullet points, no preamble.";

/** Each message of the range is shown up to this many characters: the summary is a digest, not a copy. */
const MESSAGE_CHARS = 2_000;
const MIN_MESSAGE_CHARS = 200;

/**
 * Asks `model` for a summary of `messages` (continuing `previous`, the summary they follow, if
 * any). The request is bounded to about `budgetChars`; it honours `signal` even when the model
 * does not. Resolves with the text and the tokens it cost.
 */
export async function summarizeTurns(
  model: Model,
  previous: string | undefined,
  messages: readonly Message[],
  budgetChars: number,
  signal: AbortSignal,
): Promise<{ text: string; usage: Partial<Usage> }> {
  const perMessage = Math.max(
    MIN_MESSAGE_CHARS,
    Math.min(MESSAGE_CHARS, Math.floor(budgetChars / Math.max(1, messages.length))),
  );
  const parts: string[] = [];
  if (previous) parts.push(`Summary so far:\n${previous}`);
  parts.push("Conversation to add to the summary:");
  for (const message of messages) parts.push(render(message, perMessage));
  const request = {
    system: SUMMARY_SYSTEM,
    messages: [{ role: "user" as const, content: parts.join("\n\n") }],
    tools: [],
    settings: {},
    signal,
  };
  const usage: Partial<Usage> = {};
  let text = "";
  const read = (async () => {
    for await (const event of model.stream(request)) {
      if (signal.aborted) break;
      if (event.type === "text_delta") text += event.delta;
      else if (event.type === "usage") Object.assign(usage, event.usage);
      else if (event.type === "reset") text = "";
    }
  })();
  await untilAborted(read, signal);
  text = text.trim();
  if (!text) {
    throw new ProviderError(`the summarizer "${model.name}" returned no text`, {
      provider: model.name,
      retryable: false,
    });
  }
  return { text, usage };
}

function render(message: Message, limit: number): string {
  switch (message.role) {
    case "assistant": {
      let text = `assistant: ${clip(body(message.content), limit)}`;
      for (const call of message.toolCalls ?? []) {
        text += `\ncalled ${call.name}(${clip(call.rawArgs ?? JSON.stringify(call.args ?? {}), limit)}) [${call.id}]`;
      }
      return text;
    }
    case "tool":
      return `result of ${message.name} [${message.toolCallId}]${message.isError ? " (error)" : ""}: ${clip(body(message.content), limit)}`;
    default:
      return `${message.role}: ${clip(body(message.content), limit)}`;
  }
}

function clip(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit)} [... ${text.length - limit} more chars]`;
}

/** A message's text; images become a placeholder, reasoning is left out. */
function body(content: Message["content"]): string {
  if (typeof content === "string") return content;
  const parts: string[] = [];
  for (const block of content) {
    if (isMediaBlock(block)) parts.push(describeMedia(block));
    else if (block.type === "text") parts.push(block.text);
  }
  return parts.join("\n");
}
