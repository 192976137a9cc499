/**
 * `--file path` (and chat's `/file path`): a file on disk as a content part of the next
 * message — an image, a PDF, a recording or a text document, by its extension.
 */
import { readFile, stat } from "node:fs/promises";
import { basename } from "node:path";
import { mediaTypeOf } from "../model/media.js";
import type { ContentBlock } from "../model/types.js";
import { DEFAULT_MAX_ATTACHMENT_BYTES } from "../run/config/run-input.js";
import { UsageError } from "./usage.js";

const KNOWN = "png, jpg, jpeg, gif, webp, pdf, wav, mp3, txt, md, csv, json";

/**
 * Reads one file as a part: `image` for png/jpg/gif/webp, `audio` for wav/mp3, `file` for a
 * PDF or a text document (with its name). A missing file, an unknown kind or one over the
 * attachment limit is a `UsageError` before anything runs.
 *
 * @example
 * const part = await readAttachment("chart.png", RUN_HELP); // { type: "image", data, mimeType: "image/png" }
 */
export async function readAttachment(path: string, help: string): Promise<ContentBlock> {
  const mimeType = mediaTypeOf(path);
  if (!mimeType)
    throw new UsageError(`--file ${path}: cannot tell what kind of file it is (known: ${KNOWN})`, help);
  let size: number;
  try {
    const info = await stat(path);
    if (!info.isFile()) throw new UsageError(`--file ${path}: not a file`, help);
    size = info.size;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(
      `--file ${path}: ${(error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message}`,
      help,
    );
  }
  if (size > DEFAULT_MAX_ATTACHMENT_BYTES) {
    throw new UsageError(
      `--file ${path}: ${(size / 1024 / 1024).toFixed(1)} MB is over the ${DEFAULT_MAX_ATTACHMENT_BYTES / 1024 / 1024} MB attachment limit`,
      help,
    );
  }
  const data = (await readFile(path)).toString("base64");
  if (mimeType.startsWith("image/")) return { type: "image", data, mimeType };
  if (mimeType.startsWith("audio/")) return { type: "audio", data, mimeType };
  return { type: "file", data, mimeType, filename: basename(path) };
}

/** The message: the text alone, or the text followed by the files' parts. */
export function withAttachments(text: string, parts: ContentBlock[]): string | ContentBlock[] {
  return parts.length === 0 ? text : [{ type: "text", text }, ...parts];
}

/** One line naming an attachment for the terminal: `chart.png (image/png, 12 KB)`. */
export function attachmentLabel(path: string, part: ContentBlock): string {
  const type = part.type === "text" || part.type === "reasoning" ? "text" : (part.mimeType ?? "");
  const bytes =
    part.type !== "text" && part.type !== "reasoning" && part.data
      ? Buffer.byteLength(part.data, "base64")
      : 0;
  const size =
    bytes >= 1024 * 1024
      ? `${(bytes / 1024 / 1024).toFixed(1)} MB`
      : `${Math.max(1, Math.round(bytes / 1024))} KB`;
  return `${basename(path)} (${type}, ${size})`;
}
