import { imageSize, isMediaBlock, isTextMediaType, mediaBytes } from "../../model/media.js";
import type { ContentBlock, MediaBlock, Message, ToolSpec } from "../../model/types.js";

/**
 * A cheap token estimate: about four characters per token, which is what the common BPE
 * tokenizers average on English text and code. It is only a starting point — the provider's
 * reported `inputTokens` corrects it after every turn (`Calibration`), so a language or a
 * payload that tokenizes worse (CJK, base64, minified JSON) is caught after one request.
 */
const CHARS_PER_TOKEN = 4;
/** Role markers, separators and ids a provider wraps around every message. */
const MESSAGE_OVERHEAD_CHARS = 16;

/**
 * How a provider bills an image, by its pixels and never by its base64 length: OpenAI in
 * 512-pixel tiles, Anthropic by area. The token estimate uses the rule of the agent's model.
 */
export type ImageRule = "openai" | "anthropic";

/** The rule for a model name (`anthropic:claude-…`, an AI SDK `anthropic.messages:…`); OpenAI's tiles otherwise. */
export function imageRuleFor(modelName: string | undefined): ImageRule {
  return modelName !== undefined && /anthropic|claude/i.test(modelName) ? "anthropic" : "openai";
}

/** Estimated size of one message, in characters (tokens × 4). Computed once per message. */
export function messageChars(message: Message, rule: ImageRule = "openai"): number {
  let chars = MESSAGE_OVERHEAD_CHARS + contentChars(message.content, rule);
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

export function contentChars(content: string | ContentBlock[], rule: ImageRule = "openai"): number {
  if (typeof content === "string") return content.length;
  let chars = 0;
  for (const block of content)
    chars += isMediaBlock(block) ? mediaTokens(block, rule) * CHARS_PER_TOKEN : block.text.length;
  return chars;
}

/** An image whose size is unknown (a URL, an unreadable header): OpenAI's 1024×1024, Anthropic's largest. */
const UNKNOWN_IMAGE_TOKENS: Record<ImageRule, number> = { openai: 765, anthropic: 1_600 };
/** A PDF page: its text, and the picture of the page both providers add. */
const PDF_PAGE_TOKENS = 1_500;
/** Audio input: about 10 tokens a second (one per 100 ms); a compressed file at ~128 kbit/s. */
const AUDIO_TOKENS_PER_SECOND = 10;
const COMPRESSED_AUDIO_BYTES_PER_SECOND = 16_000;

/** Estimates kept per block: a block's bytes never change, and decoding a header twice is waste. */
const mediaEstimates = new WeakMap<MediaBlock, { rule: ImageRule; tokens: number }>();

/**
 * The tokens a provider bills for one image, document or recording: by pixels, pages or
 * seconds read from the bytes' headers, with a fixed estimate when they cannot be read.
 *
 * @example
 * mediaTokens({ type: "image", data: png1024x768, mimeType: "image/png" }, "openai"); // 85 + 170 × 4 = 765
 */
export function mediaTokens(block: MediaBlock, rule: ImageRule): number {
  const known = mediaEstimates.get(block);
  if (known && known.rule === rule) return known.tokens;
  const tokens = estimateMedia(block, rule);
  mediaEstimates.set(block, { rule, tokens });
  return tokens;
}

function estimateMedia(block: MediaBlock, rule: ImageRule): number {
  if (block.type === "image") {
    const size = block.data === undefined ? undefined : imageSize(block.data);
    return size ? imageTokens(size.width, size.height, rule) : UNKNOWN_IMAGE_TOKENS[rule];
  }
  if (block.type === "audio") {
    const bytes = Buffer.from(block.data.slice(0, 64), "base64");
    // A WAV header says its byte rate; anything else is taken as compressed speech.
    const wavRate =
      bytes.length >= 32 && bytes.toString("latin1", 0, 4) === "RIFF" ? bytes.readUInt32LE(28) : 0;
    const seconds = mediaBytes(block) / (wavRate > 0 ? wavRate : COMPRESSED_AUDIO_BYTES_PER_SECOND);
    return Math.max(1, Math.ceil(seconds * AUDIO_TOKENS_PER_SECOND));
  }
  if (block.data === undefined) return PDF_PAGE_TOKENS;
  if (isTextMediaType(block.mimeType)) return Math.ceil(mediaBytes(block) / CHARS_PER_TOKEN);
  if (block.mimeType === "application/pdf") return pdfPages(block.data) * PDF_PAGE_TOKENS;
  return Math.ceil(mediaBytes(block) / CHARS_PER_TOKEN);
}

/**
 * OpenAI: the image is fitted into 2048×2048, then its short side scaled down to 768; each
 * 512-pixel tile costs 170 tokens, plus 85. Anthropic: fitted to 1568 pixels on the long side
 * (and about 1.15 megapixels), then width × height / 750.
 */
export function imageTokens(width: number, height: number, rule: ImageRule): number {
  if (rule === "anthropic") {
    let scale = Math.min(1, 1568 / Math.max(width, height));
    scale = Math.min(scale, Math.sqrt(1_150_000 / (width * height)));
    return Math.max(1, Math.ceil((width * scale * (height * scale)) / 750));
  }
  const fit = Math.min(1, 2048 / Math.max(width, height));
  const shrink = Math.min(1, 768 / Math.min(width * fit, height * fit));
  const scale = fit * shrink;
  return 85 + 170 * Math.ceil((width * scale) / 512) * Math.ceil((height * scale) / 512);
}

/** The page count of a PDF (its `/Type /Page` objects); 1 when they are compressed out of sight. */
function pdfPages(base64: string): number {
  const text = Buffer.from(base64, "base64").toString("latin1");
  const pages = text.match(/\/Type\s*\/Page(?![s\w])/g)?.length ?? 0;
  if (pages > 0) return pages;
  // Object streams hide the page objects: a page is ~50 KB on average.
  return Math.max(1, Math.round(text.length / 50_000));
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
