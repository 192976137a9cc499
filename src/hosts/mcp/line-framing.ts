/** How much of the start and end of a skipped message is kept to tell whom it answered. */
export const EDGE_BYTES = 1_024;

export type FramingEvents = {
  /** A complete line of at most the limit (without its line break). */
  line(text: string): void;
  /** A line longer than the limit went by; only its first and last bytes were kept. */
  oversize(head: string, tail: string, bytes: number): void;
};

/**
 * Newline-delimited framing (MCP over stdio) with a bound on each message. Chunks are kept
 * as a list and joined once per line, so a long line costs linear time (joining on every
 * chunk, as a naive buffer does, is quadratic); a line over the limit is not kept at all —
 * its bytes are counted and dropped as they arrive, and the stream stays in step at the
 * next newline.
 */
export class LineFraming {
  readonly #limit: number;
  readonly #events: FramingEvents;
  #chunks: Buffer[] = [];
  #size = 0;
  #skipped: { bytes: number; head: Buffer; tail: Buffer } | undefined;

  constructor(limit: number, events: FramingEvents) {
    this.#limit = limit;
    this.#events = events;
  }

  push(chunk: Buffer): void {
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(10, start);
      this.#take(chunk.subarray(start, newline === -1 ? chunk.length : newline));
      if (newline === -1) return;
      this.#endLine();
      start = newline + 1;
    }
  }

  /** Forgets a partial line (the stream ended). */
  clear(): void {
    this.#chunks = [];
    this.#size = 0;
    this.#skipped = undefined;
  }

  #take(piece: Buffer): void {
    if (piece.length === 0) return;
    const skipped = this.#skipped;
    if (skipped) {
      skipped.bytes += piece.length;
      skipped.tail = lastBytes(skipped.tail, piece);
      return;
    }
    if (this.#size + piece.length <= this.#limit) {
      this.#chunks.push(piece);
      this.#size += piece.length;
      return;
    }
    const kept = Buffer.concat([...this.#chunks, piece.subarray(0, EDGE_BYTES)]);
    this.#skipped = {
      bytes: this.#size + piece.length,
      head: Buffer.from(kept.subarray(0, EDGE_BYTES)),
      tail: lastBytes(Buffer.alloc(0), piece),
    };
    this.#chunks = [];
    this.#size = 0;
  }

  #endLine(): void {
    const skipped = this.#skipped;
    if (skipped) {
      this.#skipped = undefined;
      this.#events.oversize(skipped.head.toString("utf8"), skipped.tail.toString("utf8"), skipped.bytes);
      return;
    }
    const text = (this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks))
      .toString("utf8")
      .replace(/\r$/, "");
    this.#chunks = [];
    this.#size = 0;
    if (text.trim() !== "") this.#events.line(text);
  }
}

/** The last `EDGE_BYTES` of `before` followed by `piece`, copied (never a view of a large chunk). */
function lastBytes(before: Buffer, piece: Buffer): Buffer {
  if (piece.length >= EDGE_BYTES) return Buffer.from(piece.subarray(piece.length - EDGE_BYTES));
  const joined = Buffer.concat([before, piece]);
  return Buffer.from(joined.subarray(Math.max(0, joined.length - EDGE_BYTES)));
}
