import type { ContentBlock, Message, ToolSpec } from "../../model/types.js";

/**
 * A cheap token estimate: about four characters per token, which is what the common BPE
 * tokenizers average on English text and code. It is only a starting point — the provider's
 * reported `inputTokens` corrects it after every turn (`Calibration`), so a language or a
 * payload that tokenizes worse (CJK, base64, minified JSON) is caught after one request.
 */
const CHARS_PER_TOKEN = 4;
/** Role markers, separators and ids a provider wraps around every message. */
const MESSAGE_OVERHEAD_CHARS = 16;
/** Providers bill an image by its pixels, not its base64 length; ~1,500 tokens covers a typical screenshot. */
const IMAGE_CHARS = 6_000;

/** Estimated size of one message, in characters (tokens × 4). Computed once per message. */
export function messageChars(message: Message): number {
  let chars = MESSAGE_OVERHEAD_CHARS + contentChars(message.content);
  if (message.role === "assistant" && message.toolCalls) {
    for (const call of message.toolCalls) {
      chars += MESSAGE_OVERHEAD_CHARS + call.name.length + call.id.length;
      chars += call.rawArgs !== undefined ? call.rawArgs.length : jsonLength(call.args);
    }
  } else if (message.role === "tool") {
    chars += message.toolCallId.length + message.name.length;
  }
  return chars;
}

export function contentChars(content: string | ContentBlock[]): number {
  if (typeof content === "string") return content.length;
  let chars = 0;
  for (const block of content) chars += block.type === "image" ? IMAGE_CHARS : block.text.length;
  return chars;
}

/** The system prompt and the tool definitions: sent with every request. */
export function fixedChars(system: string | undefined, tools: readonly ToolSpec[]): number {
  let chars = system === undefined ? 0 : system.length + MESSAGE_OVERHEAD_CHARS;
  for (const spec of tools)
    chars +=
      MESSAGE_OVERHEAD_CHARS + spec.name.length + spec.description.length + jsonLength(spec.parameters);
  return chars;
}

export function charsToTokens(chars: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

function jsonLength(value: unknown): number {
  if (value === undefined) return 2;
  try {
    return JSON.stringify(value)?.length ?? 2;
  } catch {
    return 2;
  }
}

/**
 * Corrects the estimate with what the provider counted: after each turn, the ratio of its
 * reported `inputTokens` to our estimate of that same request scales the next estimates.
 */
export class Calibration {
  /** Reported ÷ estimated, for the last request the provider reported on. */
  factor = 1;

  /** Records what the provider counted for a request we had estimated at `estimatedTokens`. */
  observe(estimatedTokens: number, reportedTokens: number | undefined): void {
    if (!reportedTokens || reportedTokens <= 0 || estimatedTokens <= 0) return;
    // Clamped: a provider that reports nonsense (0, or a cumulative count) must not make
    // the view collapse or stop compacting altogether.
    this.factor = Math.min(10, Math.max(0.1, reportedTokens / estimatedTokens));
  }

  tokens(chars: number): number {
    return Math.ceil(charsToTokens(chars) * this.factor);
  }
}
