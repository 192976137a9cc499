import { createHash, type Hash } from "node:crypto";
import type { FileHandle } from "node:fs/promises";
import { ToolError } from "../errors.js";

export const MAX_READ_LINES = 2_000;
export const MAX_READ_CHARS = 50_000;
/** A longer line is cut; grep_files or shell can reach the rest of it. */
const MAX_LINE_CHARS = 2_000;
/** Bytes of a line kept to show it: UTF-8 takes at most four per character. */
const MAX_LINE_BYTES = MAX_LINE_CHARS * 4;
const CHUNK_BYTES = 128 * 1024;

/**
 * Reads an open file front to back, one reused 128 KB buffer at a time, so memory stays the
 * same whatever the file's size. With `hashUpTo`, every byte read also goes through SHA-256,
 * and `sha256()` gives the digest of the whole file once it was read to the end (and was no
 * larger than that: a file that grows past it while being read is not hashed).
 */
export class ChunkReader {
  readonly #handle: FileHandle;
  readonly #buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  readonly #hashUpTo: number;
  #hash: Hash | undefined;
  #position = 0;
  #held: Buffer | undefined;
  #ended = false;

  constructor(handle: FileHandle, hashUpTo?: number) {
    this.#handle = handle;
    this.#hashUpTo = hashUpTo ?? -1;
    if (hashUpTo !== undefined) this.#hash = createHash("sha256");
  }

  /** Bytes read so far. */
  get bytesRead(): number {
    return this.#position;
  }

  /** Whether the bytes read so far all went through the hash (none was asked, or the file outgrew it: not). */
  get hashing(): boolean {
    return this.#hash !== undefined;
  }

  /** The first chunk, which the next `next()` gives again (for a look at the head before the rest). */
  async head(): Promise<Buffer | undefined> {
    this.#held ??= await this.#read();
    return this.#held;
  }

  /** The next chunk — valid until the next call — or `undefined` at the end of the file. */
  async next(): Promise<Buffer | undefined> {
    const held = this.#held;
    if (held) {
      this.#held = undefined;
      return held;
    }
    return this.#read();
  }

  /** Reads the rest of the file through the hash (and `onChunk`); its digest, if it has one. */
  async drain(onChunk?: (chunk: Buffer) => void): Promise<string | undefined> {
    // Without a consumer, reading stops once the hash is dropped (a file that outgrew it).
    while (onChunk !== undefined || this.#hash !== undefined) {
      const chunk = await this.next();
      if (chunk === undefined) break;
      onChunk?.(chunk);
    }
    return this.sha256();
  }

  /** The hex SHA-256 of the whole file, once it has been read to the end; else `undefined`. */
  sha256(): string | undefined {
    return this.#ended && this.#hash ? this.#hash.copy().digest("hex") : undefined;
  }

  async #read(): Promise<Buffer | undefined> {
    if (this.#ended) return undefined;
    const { bytesRead } = await this.#handle.read(this.#buffer, 0, CHUNK_BYTES, this.#position);
    if (bytesRead === 0) {
      this.#ended = true;
      return undefined;
    }
    const chunk = this.#buffer.subarray(0, bytesRead);
    this.#position += bytesRead;
    if (this.#hash) {
      if (this.#position > this.#hashUpTo) this.#hash = undefined;
      else this.#hash.update(chunk);
    }
    return chunk;
  }
}

/**
 * Lines `offset`… of a text file as `N\tline`, stopping at `limit` lines or the character
 * budget, with a notice naming the offset to continue from. Streams: only the lines shown are
 * kept and decoded (a line at most 8,000 bytes of it), newlines are found with `indexOf`
 * (memchr), and the file is read no further than the window — unless the reader hashes, which
 * needs every byte anyway; then the notice also says how many lines the file has (else it gives
 * the file's `size`).
 */
export async function numberedWindow(
  reader: ChunkReader,
  name: string,
  size: number,
  offset: number,
  limit: number,
): Promise<string> {
  const maxLines = Math.min(limit, MAX_READ_LINES);
  const out: string[] = [];
  let chars = 0;
  let line = 1;
  let newlines = 0;
  let lastByte = -1;
  let body = 0; // bytes after the byte-order mark
  let phase: "skip" | "collect" | "after" = offset === 1 ? "collect" : "skip";
  let stoppedByChars = false;
  let more = false;
  // The line being collected: its first bytes, its length, its last byte.
  const kept = Buffer.allocUnsafe(MAX_LINE_BYTES);
  let keptBytes = 0;
  let lineBytes = 0;
  let lineLast = -1;

  /** Adds the complete current line to the output, unless the character budget is spent. */
  const take = (): boolean => {
    const contentBytes = lineLast === 13 ? lineBytes - 1 : lineBytes;
    let content: string;
    if (contentBytes > MAX_LINE_BYTES) {
      content = `${kept.toString("utf8", 0, MAX_LINE_BYTES).slice(0, MAX_LINE_CHARS)} [... line cut: ${contentBytes.toLocaleString("en-US")} bytes ...]`;
    } else {
      content = kept.toString("utf8", 0, contentBytes);
      if (content.length > MAX_LINE_CHARS) {
        content = `${content.slice(0, MAX_LINE_CHARS)} [... line cut: ${contentBytes.toLocaleString("en-US")} bytes ...]`;
      }
    }
    const rendered = `${line}\t${content}`;
    if (chars + rendered.length + 1 > MAX_READ_CHARS && out.length > 0) return false;
    out.push(rendered);
    chars += rendered.length + 1;
    line++;
    keptBytes = 0;
    lineBytes = 0;
    lineLast = -1;
    return true;
  };

  let first = true;
  scan: for (let chunk = await reader.next(); chunk; chunk = await reader.next()) {
    let at = 0;
    if (first) {
      first = false;
      if (chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf) at = 3;
    }
    body += chunk.length - at;
    lastByte = chunk[chunk.length - 1]!;
    while (at < chunk.length) {
      if (phase === "after") {
        more = true;
        // Past the window, the file is read on only for its hash (counting lines meanwhile).
        if (!reader.hashing) break scan;
        newlines += countNewlines(chunk, at);
        break;
      }
      const nl = chunk.indexOf(10, at);
      if (phase === "skip") {
        if (nl === -1) break;
        newlines++;
        line++;
        at = nl + 1;
        if (line === offset) phase = "collect";
        continue;
      }
      const stop = nl === -1 ? chunk.length : nl;
      if (stop > at) {
        const room = Math.min(stop - at, MAX_LINE_BYTES - keptBytes);
        if (room > 0) keptBytes += chunk.copy(kept, keptBytes, at, at + room);
        lineBytes += stop - at;
        lineLast = chunk[stop - 1]!;
      }
      if (nl === -1) break;
      newlines++;
      at = nl + 1;
      if (!take()) {
        stoppedByChars = true;
        phase = "after";
      } else if (out.length === maxLines) phase = "after";
    }
  }
  if (body === 0) return `${name} is empty.`;
  const lines = () => newlines + (lastByte === 10 ? 0 : 1);
  if (phase === "collect" && lineBytes > 0) {
    // The last line, without a newline at its end.
    if (!take()) {
      stoppedByChars = true;
      more = true;
    }
  }
  if (phase === "skip" || (out.length === 0 && !more)) {
    throw new ToolError(`offset ${offset} is past the end of ${name} (${lines()} lines)`, {
      hint: `Use an offset between 1 and ${lines()}.`,
    });
  }
  if (more) {
    const why = stoppedByChars
      ? `the ${MAX_READ_CHARS.toLocaleString("en-US")}-character limit of one call`
      : `the ${maxLines.toLocaleString("en-US")}-line limit`;
    const of =
      reader.sha256() !== undefined ? `of ${lines()}` : `of a ${size.toLocaleString("en-US")}-byte file`;
    out.push(`[showing lines ${offset}-${line - 1} ${of} (${why}); continue with offset ${line}]`);
  }
  return out.join("\n");
}

function countNewlines(chunk: Buffer, from: number): number {
  let n = 0;
  for (let i = chunk.indexOf(10, from); i !== -1; i = chunk.indexOf(10, i + 1)) n++;
  return n;
}
