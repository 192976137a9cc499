/**
 * What every layer needs to know about the parts of a message that carry bytes (images,
 * documents, audio) without decoding them: their size, a data URL's pieces, a media type
 * guessed from a file name, and an image's dimensions read from the first bytes of its header.
 */
import type { ContentBlock, MediaBlock } from "./types.js";

/** The parts that carry bytes or a URL to them. */
export function isMediaBlock(block: ContentBlock): block is MediaBlock {
  return block.type === "image" || block.type === "file" || block.type === "audio";
}

/** How many bytes base64 text decodes to, without decoding it. */
export function base64Bytes(data: string): number {
  let padding = 0;
  if (data.endsWith("==")) padding = 2;
  else if (data.endsWith("=")) padding = 1;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}

/** The decoded size of a part's inline data; 0 for a part given by URL. */
export function mediaBytes(block: MediaBlock): number {
  return typeof block.data === "string" ? base64Bytes(block.data) : 0;
}

/** `data:<type>;base64,<data>` split into its parts; undefined for anything else. */
export function parseDataUrl(url: string): { mimeType: string; data: string } | undefined {
  const match = /^data:([^;,]+)((?:;[^;,=]+=[^;,]*)*);base64,/i.exec(url);
  if (!match) return undefined;
  return { mimeType: match[1]!.toLowerCase(), data: url.slice(match[0].length) };
}

/** One line naming a part for a person or a log: `[image: image/png]`, `[file: q3.pdf (application/pdf)]`. */
export function describeMedia(block: MediaBlock): string {
  const type = block.mimeType ?? "unknown type";
  if (block.type === "file") return `[file: ${block.filename ? `${block.filename} (${type})` : type}]`;
  return `[${block.type}: ${type}]`;
}

const BY_EXTENSION: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  pdf: "application/pdf",
  wav: "audio/wav",
  mp3: "audio/mpeg",
  txt: "text/plain",
  md: "text/markdown",
  csv: "text/csv",
  json: "application/json",
};

/**
 * The media type a file name's extension stands for, or undefined for one Quiver does not
 * know (the caller says so rather than guessing).
 *
 * @example
 * mediaTypeOf("chart.PNG"); // "image/png"
 */
export function mediaTypeOf(filename: string): string | undefined {
  const dot = filename.lastIndexOf(".");
  if (dot < 0) return undefined;
  return BY_EXTENSION[filename.slice(dot + 1).toLowerCase()];
}

/** Text media types a provider without native support may be given as plain text. */
export function isTextMediaType(mimeType: string): boolean {
  const type = mimeType.toLowerCase();
  return type.startsWith("text/") || type === "application/json";
}

export type ImageSize = { width: number; height: number };

/**
 * A PNG, JPEG, GIF or WebP image's dimensions, read from its header: only the first bytes are
 * decoded (up to 256 KB for a JPEG whose size sits after a large EXIF block). Undefined when the
 * format is another one or the header is damaged.
 */
export function imageSize(base64: string): ImageSize | undefined {
  let bytes = decodePrefix(base64, 64);
  const simple = pngSize(bytes) ?? gifSize(bytes) ?? webpSize(bytes);
  if (simple) return simple;
  if (!isJpeg(bytes)) return undefined;
  for (const prefix of [4096, 65_536, 262_144]) {
    bytes = decodePrefix(base64, prefix);
    const size = jpegSize(bytes);
    if (size !== "more") return size;
    if (bytes.length < prefix) return undefined;
  }
  return undefined;
}

/** The image types every provider takes, known by the first bytes of the file. */
export type SniffedImageType = "image/png" | "image/jpeg" | "image/gif" | "image/webp";

/**
 * The type a PNG, JPEG, GIF or WebP image's bytes say it is, whatever it is labelled (a PNG
 * saved as `.jpg` is a PNG to the API that decodes it); undefined for any other bytes.
 *
 * @example
 * imageTypeOf(pngBytes.toString("base64")); // "image/png"
 */
export function imageTypeOf(base64: string): SniffedImageType | undefined {
  const bytes = decodePrefix(base64, 16);
  if (isPng(bytes)) return "image/png";
  if (isJpeg(bytes)) return "image/jpeg";
  if (isGif(bytes)) return "image/gif";
  if (isWebp(bytes)) return "image/webp";
  return undefined;
}

const isPng = (b: Buffer) =>
  b.length >= 8 && b.readUInt32BE(0) === 0x89504e47 && b.readUInt32BE(4) === 0x0d0a1a0a;
const isJpeg = (b: Buffer) => b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff;
const isGif = (b: Buffer) => b.length >= 6 && /^GIF8[79]a$/.test(b.toString("latin1", 0, 6));
const isWebp = (b: Buffer) =>
  b.length >= 12 && b.toString("latin1", 0, 4) === "RIFF" && b.toString("latin1", 8, 12) === "WEBP";

/** The first `bytes` bytes of base64 text (whole 4-character groups only). */
function decodePrefix(base64: string, bytes: number): Buffer {
  const chars = Math.ceil(bytes / 3) * 4;
  return Buffer.from(base64.slice(0, chars), "base64");
}

function positive(width: number, height: number): ImageSize | undefined {
  return width > 0 && height > 0 ? { width, height } : undefined;
}

function pngSize(b: Buffer): ImageSize | undefined {
  if (b.length < 24 || !isPng(b) || b.toString("latin1", 12, 16) !== "IHDR") return undefined;
  return positive(b.readUInt32BE(16), b.readUInt32BE(20));
}

function gifSize(b: Buffer): ImageSize | undefined {
  if (b.length < 10 || !isGif(b)) return undefined;
  return positive(b.readUInt16LE(6), b.readUInt16LE(8));
}

function webpSize(b: Buffer): ImageSize | undefined {
  if (b.length < 30 || !isWebp(b)) return undefined;
  const chunk = b.toString("latin1", 12, 16);
  if (chunk === "VP8 ") return positive(b.readUInt16LE(26) & 0x3fff, b.readUInt16LE(28) & 0x3fff);
  if (chunk === "VP8L") {
    const bits = b.readUInt32LE(21);
    return positive((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1);
  }
  if (chunk === "VP8X") return positive(b.readUIntLE(24, 3) + 1, b.readUIntLE(27, 3) + 1);
  return undefined;
}

/** The frame header's size; "more" when the bytes end before it. */
function jpegSize(b: Buffer): ImageSize | undefined | "more" {
  let at = 2;
  while (at + 4 <= b.length) {
    if (b[at] !== 0xff) return undefined;
    const marker = b[at + 1]!;
    if (marker === 0xff) {
      at++; // fill byte
      continue;
    }
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      at += 2;
      continue;
    }
    const length = b.readUInt16BE(at + 2);
    const frame = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (frame) {
      if (at + 9 > b.length) return "more";
      return positive(b.readUInt16BE(at + 7), b.readUInt16BE(at + 5));
    }
    if (marker === 0xd9 || marker === 0xda) return undefined; // image data began without a frame header
    at += 2 + length;
  }
  return "more";
}
