/**
 * Reading the neutral message content (`string | ContentBlock[]`) the way every provider
 * needs it: the text, the images and other media, the reasoning; and the one error every
 * provider raises for a part it cannot send.
 */
import { UserError } from "../errors.js";
import { isMediaBlock, isTextMediaType } from "../model/media.js";
import type { ContentBlock, FileBlock, ImageBlock, MediaBlock, ReasoningBlock } from "../model/types.js";

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
export function inResult(name: string, callId: string): string {
  return `in the result of ${name} (call ${callId})`;
}
