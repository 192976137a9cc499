// The streamable HTTP transport's fetch, with a bound on every message the server sends: a
// JSON body over the limit is never parsed (its requests are answered with an oversize
// error), an event-stream event over the limit is dropped as it streams (and answered the
// same way when it was a response), and an error body is cut to a few kilobytes, since it
// ends up in an error message.
import { EDGE_BYTES } from "./line-framing.js";
import { coalesceListChanged, isListChanged } from "./notice-coalescing.js";
import { oversizeResponse, oversizeTarget } from "./oversize.js";

type Fetch = (url: string | URL, init?: RequestInit) => Promise<Response>;
type Body = ConstructorParameters<typeof Response>[0];

/** How much of an error response's body is kept for the error message. */
const MAX_ERROR_BODY_BYTES = 4_096;

/**
 * `fetch` bounded by `limit` bytes per message. `awaiting` holds the ids of requests sent
 * and not yet answered, which an oversized event on the standalone stream may answer.
 */
export function boundedFetch(limit: number, awaiting: ReadonlySet<string | number>): Fetch {
  return async (url, init) => {
    const response = await fetch(url, init);
    if (!response.body) return response;
    const rebuilt = (body: Body) =>
      new Response(body, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    if (!response.ok) {
      const { bytes, over } = await readUpTo(response.body, MAX_ERROR_BODY_BYTES);
      return rebuilt(`${new TextDecoder().decode(bytes)}${over ? "…" : ""}`);
    }
    const type = (response.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    const sent = requestIds(init?.body);
    if (type === "application/json") {
      const { bytes, over, read } = await readUpTo(response.body, limit);
      if (!over) return rebuilt(bytes);
      // Every request in the POST is answered by this body, so each gets the error.
      return rebuilt(JSON.stringify(sent.map((id) => oversizeResponse(id, read, limit))));
    }
    if (type === "text/event-stream") {
      const candidates = sent.length > 0 ? new Set(sent) : awaiting;
      return rebuilt(response.body.pipeThrough(boundedEvents(limit, candidates)));
    }
    return response;
  };
}

/** The ids of the requests in a POST body (one message or a batch). */
function requestIds(body: unknown): Array<string | number> {
  if (typeof body !== "string") return [];
  try {
    const parsed = JSON.parse(body) as unknown;
    return (Array.isArray(parsed) ? parsed : [parsed]).flatMap((m: { id?: unknown; method?: unknown }) =>
      typeof m?.method === "string" && (typeof m.id === "string" || typeof m.id === "number") ? [m.id] : [],
    );
  } catch {
    return [];
  }
}

/** Reads at most `limit` bytes; `over` when there was more (the rest is not read). */
async function readUpTo(
  body: ReadableStream<Uint8Array>,
  limit: number,
): Promise<{ bytes: Uint8Array; over: boolean; read: number }> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let read = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      read += value.length;
      chunks.push(value);
      if (read > limit) {
        await reader.cancel().catch(() => {});
        return { bytes: concat(chunks).subarray(0, limit), over: true, read };
      }
    }
  } finally {
    reader.releaseLock();
  }
  return { bytes: concat(chunks), over: false, read };
}

function concat(chunks: Uint8Array[]): Uint8Array {
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

const LF = 10;
const CR = 13;

/**
 * Passes server-sent events through whole, one at a time, holding at most `limit` bytes: an
 * event over the limit is counted and dropped as it arrives, and when it answered a request
 * (see `oversizeTarget`) an event carrying the oversize error takes its place.
 */
function boundedEvents(
  limit: number,
  awaiting: ReadonlySet<string | number>,
): TransformStream<Uint8Array, Uint8Array> {
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  let event: Uint8Array[] = [];
  let size = 0;
  let lineLength = 0;
  /** The byte before the current chunk, to see a CR that ended the previous one. */
  let previous = -1;
  let skipped: { bytes: number; head: Uint8Array; tail: Uint8Array } | undefined;

  const take = (piece: Uint8Array) => {
    if (piece.length === 0) return;
    if (skipped) {
      skipped.bytes += piece.length;
      skipped.tail = lastBytes(skipped.tail, piece);
    } else if (size + piece.length <= limit) {
      event.push(piece);
      size += piece.length;
    } else {
      skipped = {
        bytes: size + piece.length,
        head: concat([...event, piece.subarray(0, EDGE_BYTES)]).slice(0, EDGE_BYTES),
        tail: lastBytes(new Uint8Array(0), piece),
      };
      event = [];
      size = 0;
    }
  };

  const endEvent = (controller: TransformStreamDefaultController<Uint8Array>) => {
    if (skipped) {
      const id = oversizeTarget(dataOf(decoder.decode(skipped.head)), decoder.decode(skipped.tail), awaiting);
      if (id !== undefined) {
        const data = JSON.stringify(oversizeResponse(id, skipped.bytes, limit));
        controller.enqueue(encoder.encode(`event: message\ndata: ${data}\n\n`));
      }
      skipped = undefined;
    } else if (size > 0) {
      const bytes = concat(event);
      pass(controller)({ bytes, method: size < 512 ? listChangedMethod(decoder.decode(bytes)) : undefined });
    }
    event = [];
    size = 0;
  };

  // Change notifications are folded here, before the SDK parses and validates each event.
  type Item = { bytes: Uint8Array; method: string | undefined };
  let passing: ((item: Item) => void) | undefined;
  const pass = (controller: TransformStreamDefaultController<Uint8Array>) => {
    passing ??= coalesceListChanged<Item, never>((item) => {
      try {
        controller.enqueue(item.bytes);
      } catch {
        // The stream ended meanwhile: the folded notification has nobody to reach.
      }
    });
    return passing;
  };

  return new TransformStream({
    transform(chunk, controller) {
      let start = 0;
      for (;;) {
        const newline = chunk.indexOf(LF, start);
        const end = newline === -1 ? chunk.length : newline + 1;
        take(chunk.subarray(start, end));
        if (newline === -1) {
          lineLength += end - start;
          previous = chunk.length > 0 ? chunk[chunk.length - 1]! : previous;
          return;
        }
        // A line holding nothing but its line break (LF or CR LF) ends the event.
        const content = lineLength + (newline - start);
        const before = newline > 0 ? chunk[newline - 1] : previous;
        const blank = content === 0 || (content === 1 && before === CR);
        lineLength = 0;
        if (blank) endEvent(controller);
        start = newline + 1;
      }
    },
    flush(controller) {
      endEvent(controller);
    },
  });
}

/** The method of a small event that is a `…/list_changed` notification, else undefined. */
function listChangedMethod(event: string): string | undefined {
  if (!event.includes("list_changed")) return undefined;
  try {
    const message = JSON.parse(dataOf(event)) as { method?: string };
    return isListChanged(message) ? message.method : undefined;
  } catch {
    return undefined;
  }
}

/** The JSON of an event's `data:` field, from the start of the event. */
function dataOf(head: string): string {
  const at = head.indexOf("data:");
  return at === -1 ? head : head.slice(at + 5).replace(/^ /, "");
}

function lastBytes(before: Uint8Array, piece: Uint8Array): Uint8Array {
  if (piece.length >= EDGE_BYTES) return piece.slice(piece.length - EDGE_BYTES);
  const joined = concat([before, piece]);
  return joined.slice(Math.max(0, joined.length - EDGE_BYTES));
}
