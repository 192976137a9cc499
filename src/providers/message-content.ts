/**
 * Reading the neutral message content (`string | ContentBlock[]`) the way every provider
 * needs it: the text, the images and other media, the reasoning; and what every provider does
 * with a part it cannot send (a `UserError` in a user message, a note in a tool result).
 */
import { UserError } from "../errors.js";
import { imageTypeOf, isMediaBlock, isTextMediaType } from "../model/media.js";
import type { ContentBlock, FileBlock, ImageBlock, MediaBlock, ReasoningBlock } from "../model/types.js";
import type { Warn } from "./streaming-turn.js";

/** The content as blocks (a string is one text block; an empty string is none). */
export function blocksOf(content: string | readonly ContentBlock[]): readonly ContentBlock[] {
  if (typeof content !== "string") return content;
  return content === "" ? [] : [{ type: "text", text: content }];
}

/** All text blocks joined with a blank line; reasoning is not text. */
export function textOf(content: string | readonly ContentBlock[]): string {
  if (typeof content === "string") return content;
  return content
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("\n\n");
}

export function imagesOf(content: string | readonly ContentBlock[]): ImageBlock[] {
  return typeof content === "string" ? [] : content.filter((block) => block.type === "image");
}

/** The images, documents and recordings of some content. */
export function mediaOf(content: string | readonly ContentBlock[]): MediaBlock[] {
  return typeof content === "string" ? [] : content.filter(isMediaBlock);
}

export function reasoningOf(content: string | readonly ContentBlock[]): ReasoningBlock[] {
  return typeof content === "string" ? [] : content.filter((block) => block.type === "reasoning");
}

/** This provider's entry of a `providerData` record (keyed by provider), if it is an object. */
export function providerEntry(
  providerData: Record<string, unknown> | undefined,
  provider: string,
): Record<string, unknown> | undefined {
  const entry = providerData?.[provider];
  return entry !== null && typeof entry === "object" && !Array.isArray(entry)
    ? (entry as Record<string, unknown>)
    : undefined;
}

/** A data URL for a block's inline bytes (`data:image/png;base64,…`). */
export function dataUrl(block: { data: string; mimeType: string }): string {
  return `data:${block.mimeType};base64,${block.data}`;
}

/** A document a provider takes as plain text (`text/*`, JSON) given inline. */
export function isInlineText(block: FileBlock): boolean {
  return block.data !== undefined && isTextMediaType(block.mimeType);
}

/** The text of an inline text document, headed by its name so the model knows what it reads. */
export function documentText(block: { data: string; mimeType: string; filename?: string }): string {
  const text = Buffer.from(block.data, "base64").toString("utf8");
  return `[file: ${block.filename ?? "attachment"} (${block.mimeType})]\n${text}`;
}

/**
 * The `UserError` for a part a provider cannot send, raised while the request is built (before
 * anything is sent): it names the provider, the part and where it sits, and what to do instead.
 *
 * @example
 * throw unsupportedPart("anthropic", audio, "in a user message", "transcribe it first");
 * // anthropic cannot take an audio part (audio/wav) in a user message: transcribe it first
 */
export function unsupportedPart(provider: string, block: MediaBlock, where: string, fix: string): UserError {
  return new UserError(`${provider} cannot take ${partName(block)} ${where}: ${fix}`);
}

function partName(block: MediaBlock): string {
  const type = block.mimeType ?? "no media type";
  if (block.url !== undefined)
    return `${block.type === "image" ? "an image" : "a file"} by URL (${type}, ${block.url.slice(0, 100)})`;
  if (block.type === "file") return `a file (${type}${block.filename ? `, ${block.filename}` : ""})`;
  return `${block.type === "image" ? "an image" : "an audio part"} (${type})`;
}

/** Where a tool result sits, for errors: `in the result of lookup (call c1)`. */
function inResult(name: string, callId: string): string {
  return `in the result of ${name} (call ${callId})`;
}

/**
 * Why a provider cannot send a part: `reason` is what the model reads in a tool result's note
 * (`anthropic takes no audio`), `fix` what the caller is told in a `UserError`.
 */
export type Refusal = { reason: string; fix: string };

/**
 * Where a part sits while a request is built, which decides what becomes of one the provider
 * cannot send. In a user message it is the caller's input, nothing has run yet, and the run
 * fails with a `UserError` before anything is sent. In a tool's result the tool has already run
 * and a stored session would rebuild the same result on every later run, so a failure there
 * would end that conversation for good: the part is replaced by a short note the model reads,
 * and the request reports one warning naming every part it left out.
 */
export type PartPlace =
  | { kind: "user" }
  | { kind: "result"; name: string; callId: string; omitted: OmittedParts };

export const IN_USER_MESSAGE: PartPlace = { kind: "user" };

/** The parts of tool results one request leaves out, reported once when the request is built. */
export class OmittedParts {
  readonly #notes: string[] = [];
  constructor(readonly provider: string) {}

  /** A place in the result of `name`, whose refused parts are noted here. */
  inResult(name: string, callId: string): PartPlace {
    return { kind: "result", name, callId, omitted: this };
  }

  add(note: string): void {
    this.#notes.push(note);
  }

  /** One warning for the whole request (no more than its first parts named). */
  report(warn: Warn): void {
    const notes = this.#notes;
    if (notes.length === 0) return;
    const shown = notes.slice(0, 5).join("; ");
    const more = notes.length > 5 ? `; and ${notes.length - 5} more` : "";
    warn(
      `${notes.length === 1 ? "a part" : `${notes.length} parts`} of tool results could not be sent and ${notes.length === 1 ? "was" : "were"} replaced by a note to the model: ${shown}${more}`,
    );
  }
}

/**
 * What becomes of a part the provider cannot send (see `PartPlace`): in a user message a thrown
 * `UserError`; in a tool result the note that takes its place, e.g.
 * `[audio/wav from record_voice not shown: anthropic takes no audio]`.
 *
 * @example
 * return refusePart("anthropic", audio, place, { reason: "anthropic takes no audio", fix: "transcribe it first" });
 */
export function refusePart(provider: string, block: MediaBlock, place: PartPlace, refusal: Refusal): string {
  if (place.kind === "user") throw unsupportedPart(provider, block, "in a user message", refusal.fix);
  const note = `[${noteName(block)} from ${place.name} not shown: ${refusal.reason}]`;
  place.omitted.add(`${noteName(block)} ${inResult(place.name, place.callId)}: ${refusal.reason}`);
  return note;
}

function noteName(block: MediaBlock): string {
  const type = block.mimeType ?? block.type;
  if (block.url !== undefined) return `${type} at ${block.url.slice(0, 100)}`;
  if (block.type === "file" && block.filename) return `${block.filename} (${type})`;
  return type;
}

/**
 * The refusal every provider shares: a part with no bytes (`data: ""`), which every API rejects
 * and which tells the model nothing.
 */
export function emptyPart(block: MediaBlock): Refusal | undefined {
  if (block.data !== "") return undefined;
  return {
    reason: "it is empty (0 bytes)",
    fix: "it is empty (0 bytes); pass the part's bytes as base64 data",
  };
}

/**
 * The media type to send an inline image with: the type its bytes say when they clearly are a
 * PNG, JPEG, GIF or WebP (a PNG saved as `.jpg` is labelled `image/jpeg`, and the API that
 * decodes it refuses the mismatch), else its label.
 */
export function sentImageType(block: { data?: string; mimeType?: string }): string | undefined {
  const sniffed = block.data ? imageTypeOf(block.data) : undefined;
  return sniffed ?? block.mimeType;
}

/** The image types the OpenAI and Anthropic APIs decode; any other is refused before sending. */
export const WEB_IMAGE_TYPES: ReadonlySet<string> = new Set([
  "image/png",
  "image/jpeg",
  "image/gif",
  "image/webp",
]);
