import { describeMedia, isMediaBlock } from "../model/media.js";
import type { ContentBlock } from "../model/types.js";
import { toJsonText } from "../plain-json.js";
import type { ToolOutput } from "./types.js";

/** True when a value is the `{ content: ContentBlock[], details? }` form. */
export function isToolOutput(value: unknown): value is ToolOutput {
  if (typeof value !== "object" || value === null || !Array.isArray((value as ToolOutput).content))
    return false;
  return (value as ToolOutput).content.every(
    (b) =>
      typeof b === "object" &&
      b !== null &&
      (b.type === "text" ||
        b.type === "image" ||
        b.type === "file" ||
        b.type === "audio" ||
        b.type === "reasoning"),
  );
}

/** The default renderer: strings as they are, content blocks as they are, everything else JSON. */
export function defaultRender(value: unknown): string | ContentBlock[] {
  if (typeof value === "string") return value;
  if (value === undefined) return "";
  if (isToolOutput(value)) return value.content;
  return toJsonText(value);
}

/** The text a person or a log reads for some content: text blocks joined, images and files named. */
export function contentText(content: string | readonly ContentBlock[]): string {
  if (typeof content === "string") return content;
  return content
    .map((block) => (isMediaBlock(block) ? describeMedia(block) : block.type === "text" ? block.text : ""))
    .filter(Boolean)
    .join("\n");
}

const numberFormat = new Intl.NumberFormat("en-US");

/**
 * Keeps ~80 % head and ~20 % tail of `text` around a marker saying how much was kept, so the
 * model sees both the start and the end (error summaries usually sit at the end).
 */
export function truncateMiddle(
  text: string,
  maxChars: number,
  note?: (keptHead: number) => string,
): { text: string; originalChars: number } | undefined {
  if (text.length <= maxChars) return undefined;
  // `note` (e.g. how to recall the full text from where the head ends) sits under the marker,
  // inside the budget; sized with `maxChars`, which has at least as many digits as the head.
  const marker = (kept: number, head: number) =>
    `\n[... tool output truncated: kept ${numberFormat.format(kept)} of ${numberFormat.format(text.length)} chars ...]\n${note ? `${note(head)}\n` : ""}`;
  const room = maxChars - marker(maxChars, maxChars).length;
  // A cap the marker alone exceeds (under ~60 chars) keeps its own length of the head, and the
  // marker comes on top: a result of nothing but the marker tells the model nothing.
  const small = room < 1;
  const budget = small ? maxChars : room;
  let head = small ? budget : Math.floor(budget * 0.8);
  let tail = budget - head;
  // Never split a surrogate pair: a lone half is invalid UTF-16 in JSON for some providers.
  if (head > 0 && isHighSurrogate(text.charCodeAt(head - 1))) head--;
  if (tail > 0 && isLowSurrogate(text.charCodeAt(text.length - tail))) tail--;
  return {
    text: detached(text, 0, head) + marker(head + tail, head) + detached(text, text.length - tail),
    originalChars: text.length,
  };
}

/**
 * Pieces of a copy stay under V8's large-object threshold (128 KB): a bigger string is allocated
 * with its own mmap and a collection, which made one 200,000-char truncation cost ~1 ms.
 */
const COPY_CHUNK = 32 * 1024;

/**
 * A copy of `text.slice(start, end)` that shares no memory with `text`. V8's slices and
 * concatenations point into the original string, so a 200,000-char truncation of a 20 MB result
 * would keep all 20 MB alive for as long as the transcript holds it. Each piece is a two-part
 * rope that reading a character flattens into a fresh string (lone surrogates kept as they are).
 *
 * @example
 * const head = detached(huge, 0, 160_000); // huge can be collected while head lives on
 */
export function detached(text: string, start = 0, end = text.length): string {
  let copy = "";
  for (let from = start; from < end; from += COPY_CHUNK) {
    const to = Math.min(end, from + COPY_CHUNK);
    if (to - from < 2) {
      copy += text.slice(from, to);
      continue;
    }
    const middle = (from + to) >> 1;
    const piece = text.slice(from, middle) + text.slice(middle, to);
    piece.charCodeAt(0);
    copy += piece;
  }
  return copy;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
