import { KEEPALIVE_MS, pullResponse } from "./http.js";
import type { RunLog } from "./run-log.js";

/** How one protocol's stream is made from a run's events (the AI SDK's UI stream, AG-UI). */
export type TranslatedStream<Chunk> = {
  /** The chunks that open the stream (the protocol's start, a snapshot on reconnect). */
  opening: () => Chunk[];
  /** True once the translator wrote the stream's end. */
  finished: () => boolean;
  translate: (event: RunLog["all"][number], out: Chunk[]) => void;
  /** The run waits for a person: say so (`cursor`: how far the stream got). */
  blocked: (out: Chunk[], cursor: number) => void;
  /** The run ended (or was detached) without the translator seeing its end. */
  ended: (out: Chunk[]) => void;
  /** One chunk as sent: SSE text, or bytes for a binary protocol (which gets no keepalive). */
  frame: (chunk: Chunk) => string | Uint8Array;
  /** Sent once after the end (`data: [DONE]`), if the protocol has one. */
  closing?: string;
  headers: Record<string, string>;
};

/**
 * A run's events from `from` on, translated and sent as the client reads them (backpressure:
 * nothing is produced ahead of the reader), with a keepalive comment while the run is quiet.
 */
export function translatedStream<Chunk>(log: RunLog, from: number, spec: TranslatedStream<Chunk>): Response {
  // A binary stream has no comment to keep a quiet connection alive with.
  const keepalive = spec.headers["content-type"]?.startsWith("text/event-stream") ?? false;
  let cursor = from;
  let started = false;
  let closed = false;
  let lastSent = Date.now();
  const next = async (signal: AbortSignal): Promise<string | Uint8Array | null> => {
    for (;;) {
      if (signal.aborted) return null;
      const out: Chunk[] = [];
      if (!started) {
        started = true;
        out.push(...spec.opening());
      } else if (spec.finished()) {
        if (closed || spec.closing === undefined) return null;
        closed = true;
        return spec.closing;
      } else if (cursor < log.all.length) {
        const end = Math.min(log.all.length, cursor + 64);
        for (; cursor < end; cursor++) spec.translate(log.all[cursor]!, out);
      } else if (log.blocked) {
        spec.blocked(out, cursor);
      } else if (log.finished || log.status === "detached" || log.released) {
        spec.ended(out);
      } else {
        await log.changed(KEEPALIVE_MS, signal);
        if (
          keepalive &&
          cursor === log.all.length &&
          !log.blocked &&
          !log.finished &&
          Date.now() - lastSent >= KEEPALIVE_MS
        ) {
          lastSent = Date.now();
          return ": keepalive\n\n";
        }
        continue;
      }
      if (out.length === 0) continue;
      lastSent = Date.now();
      return framed(out.map(spec.frame));
    }
  };
  return pullResponse(next, spec.headers);
}

/** Frames sent as one piece: text joined, bytes concatenated. */
export function framed(frames: Array<string | Uint8Array>): string | Uint8Array {
  if (frames.every((frame) => typeof frame === "string")) return frames.join("");
  const bytes = frames.map((frame) => (typeof frame === "string" ? new TextEncoder().encode(frame) : frame));
  const out = new Uint8Array(bytes.reduce((sum, b) => sum + b.length, 0));
  let at = 0;
  for (const b of bytes) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}
