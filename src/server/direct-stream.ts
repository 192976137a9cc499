import type { ServerResponse } from "node:http";

/**
 * Where `serve()` lets a streaming response go straight to Node's socket: Node's response for
 * the request, and the Response that tells @hono/node-server it was sent already.
 */
export type DirectTarget = { outgoing: ServerResponse; sent: Response };

/** The requests `serve()` answers, by the `env` @hono/node-server passes with each (one per request). */
const targets = new WeakMap<object, DirectTarget>();

/** Called by `serve()` for each request it hands to the server. */
export function allowDirect(env: object, target: DirectTarget): void {
  targets.set(env, target);
}

/**
 * Node's response for this request when it came through `serve()`, where a stream is written to
 * it directly; `undefined` elsewhere (`server.fetch` in another runtime or under another host),
 * where it is a `ReadableStream` as usual. Only `serve()`'s own requests: a host that wraps
 * the app in middleware of its own must see a real Response.
 */
export function directTarget(env: unknown): DirectTarget | undefined {
  return env !== null && typeof env === "object" ? targets.get(env) : undefined;
}

/**
 * Writes what `next` produces to Node's response as the socket takes it, until `next` returns
 * `null`; `next`'s signal aborts when the client goes away. What a `ReadableStream` body does,
 * without one: an idle subscriber to an event stream held a web stream, its controller and
 * reader, and the pump that copied it into Node (~5 KB of heap each, measured with 1,000), and
 * the server's memory per subscriber about doubled over Node's own.
 */
export function streamDirect(
  next: (signal: AbortSignal) => Promise<string | Uint8Array | null>,
  headers: Record<string, string>,
  status: number,
  target: DirectTarget,
): Response {
  const { outgoing } = target;
  const gone = new AbortController();
  outgoing.once("close", () => gone.abort());
  outgoing.writeHead(status, headers);
  outgoing.flushHeaders();
  void pump(next, outgoing, gone.signal);
  return target.sent;
}

async function pump(
  next: (signal: AbortSignal) => Promise<string | Uint8Array | null>,
  outgoing: ServerResponse,
  signal: AbortSignal,
): Promise<void> {
  try {
    for (;;) {
      const piece = await next(signal);
      if (signal.aborted) return;
      if (piece === null) {
        outgoing.end();
        return;
      }
      // Backpressure: the next piece is made once the socket took this one.
      if (!outgoing.write(piece)) await drained(outgoing, signal);
    }
  } catch (error) {
    outgoing.destroy(error instanceof Error ? error : new Error(String(error)));
  }
}

function drained(outgoing: ServerResponse, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      outgoing.off("drain", done);
      signal.removeEventListener("abort", done);
      resolve();
    };
    outgoing.on("drain", done);
    signal.addEventListener("abort", done, { once: true });
  });
}
