/**
 * Reading the neutral message content (`string | ContentBlock[]`) the way every provider
 * needs it: the text, the images, the reasoning.
 */
import type { ContentBlock, ImageBlock, ReasoningBlock } from "../model/types.js";

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

/** A data URL for an image block (`data:image/png;base64,…`). */
export function dataUrl(image: ImageBlock): string {
  return `data:${image.mimeType};base64,${image.data}`;
}
