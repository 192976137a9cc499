/**
 * One HTTP GET on `node:http` / `node:https` for web_fetch (and the request the server's
 * webhooks POST through the same guard), and its body read as Node
 * Buffers: decompressed (gzip, deflate, br) as it arrives, counted after decompression, and
 * cut at a byte cap with the rest never read. Loaded on the first fetch, with the guard.
 */
import http from "node:http";
import https from "node:https";
import { Transform, type TransformCallback } from "node:stream";
import zlib from "node:zlib";
import type { GuardedAgents } from "./guarded-agent.js";

/** What web_fetch asks servers for: the encodings this module decodes. */
export const ACCEPT_ENCODING = "gzip, deflate, br";

/** A body larger than this is not drained to keep its connection, it is closed. */
const DRAIN_LIMIT = 64 * 1024;

/**
 * Sends one GET and resolves with the response head; the body is left unread. Aborting
 * `signal` destroys the request and its socket. A request on a pooled connection that the
 * server closed meanwhile is sent once more on a new one (GET is idempotent).
 *
 * @example
 * const response = await get(new URL("https://example.com/"), agents, { accept: "text/html" }, signal);
 * const { bytes } = await readBody(response, 1_000_000, signal);
 */
export function get(
  url: URL,
  agents: GuardedAgents,
  headers: Record<string, string>,
  signal: AbortSignal,
  retry = true,
): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const request = openRequest(url, agents, "GET", { ...headers, "accept-encoding": ACCEPT_ENCODING });
    let settled = false;
    const onAbort = () => request.destroy(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    const settle = () => {
      settled = true;
      signal.removeEventListener("abort", onAbort);
    };
    request.once("response", (response) => {
      settle();
      resolve(response);
    });
    // Stays attached: an error after the head belongs to the body's reader, not to the process.
    request.on("error", (error: NodeJS.ErrnoException) => {
      if (settled) return;
      settle();
      if (retry && request.reusedSocket && error.code === "ECONNRESET" && !signal.aborted) {
        resolve(get(url, agents, headers, signal, false));
      } else {
        reject(error);
      }
    });
    request.end();
  });
}

/**
 * A request to `url` through the guarded agent of its scheme, not yet sent (write the body, then
 * `end()`). The one place a guarded connection's request is made: web_fetch's GETs, webhooks' POSTs.
 *
 * @example
 * const request = openRequest(new URL("https://hooks.example/x"), agents, "POST", headers);
 * request.end(body);
 */
export function openRequest(
  url: URL,
  agents: GuardedAgents,
  method: string,
  headers: Record<string, string>,
  timeoutMs?: number,
): http.ClientRequest {
  const secure = url.protocol === "https:";
  return (secure ? https : http).request({
    agent: secure ? agents.https : agents.http,
    protocol: url.protocol,
    // WHATWG URL has already turned every IPv4 notation into dotted decimal.
    hostname: url.hostname.replace(/^\[|\]$/g, ""),
    port: url.port === "" ? undefined : Number(url.port),
    path: `${url.pathname}${url.search}`,
    method,
    headers,
    ...(timeoutMs !== undefined && { timeout: timeoutMs }),
  });
}

/**
 * Gives up on a body that is not wanted (a redirect's, a binary file's): a short one is
 * drained so its connection returns to the pool, anything else is closed.
 */
export function discard(response: http.IncomingMessage): void {
  const length = Number(response.headers["content-length"] ?? Number.NaN);
  if (response.complete || (Number.isFinite(length) && length <= DRAIN_LIMIT)) {
    response.on("error", () => {});
    response.resume();
  } else {
    response.destroy();
  }
}

/**
 * Reads the body up to `maxBytes` decompressed bytes. The rest is never read: the response
 * (and its connection) is destroyed, and a decompressor stops inflating at once, so a small
 * compressed body that would inflate to gigabytes costs no more than `maxBytes`. The bytes
 * come back in one buffer of their own (transferable to a worker without a copy).
 *
 * @example
 * const { bytes, capped } = await readBody(response, 1_000_000, signal);
 */
export function readBody(
  response: http.IncomingMessage,
  maxBytes: number,
  signal: AbortSignal,
): Promise<{ bytes: Uint8Array; capped: boolean }> {
  return new Promise((resolve, reject) => {
    let decoded: { body: Source; stages: Source[] };
    try {
      decoded = decode(response);
    } catch (error) {
      response.destroy();
      return reject(error);
    }
    const { body: source, stages } = decoded;
    // Known length, nothing to decompress: one buffer of the right size from the start.
    const declared = Number(response.headers["content-length"] ?? Number.NaN);
    const direct = source === response && Number.isSafeInteger(declared) && declared >= 0;
    let buffer: Buffer | undefined = direct
      ? Buffer.allocUnsafeSlow(Math.min(declared, maxBytes))
      : undefined;
    const chunks: Buffer[] = [];
    let total = 0;
    let done = false;

    const stop = () => {
      signal.removeEventListener("abort", onAbort);
      source.removeListener("data", onData);
      // Every stage: a decompressor stops inflating, the socket closes, nothing more is read.
      for (const stage of stages) stage.destroy();
    };
    const finish = (capped: boolean) => {
      if (done) return;
      done = true;
      signal.removeEventListener("abort", onAbort);
      if (capped) stop();
      resolve({ bytes: assemble(buffer, chunks, total), capped });
    };
    const fail = (error: unknown) => {
      if (done) return;
      done = true;
      stop();
      reject(error);
    };
    const onAbort = () => fail(signal.reason);
    const onData = (chunk: Buffer) => {
      if (done || chunk.byteLength === 0) return;
      const room = maxBytes - total;
      const take = chunk.byteLength > room ? chunk.subarray(0, room) : chunk;
      if (buffer !== undefined && total + take.byteLength <= buffer.byteLength) {
        buffer.set(take, total);
      } else {
        // More than the server declared (it cannot be, but no trust is needed): collect instead.
        if (buffer !== undefined) {
          chunks.push(buffer.subarray(0, total));
          buffer = undefined;
        }
        chunks.push(take);
      }
      total += take.byteLength;
      if (chunk.byteLength > room) finish(true);
    };

    if (signal.aborted) return fail(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    source.on("data", onData);
    source.once("end", () => finish(false));
    source.on("error", fail);
    if (source !== response) response.on("error", fail);
    // A connection that closes before the body is complete is an error, not a short page.
    response.once("aborted", () => fail(new Error("the connection closed before the body was complete")));
  });
}

/** The collected bytes as one Uint8Array that owns its ArrayBuffer. */
function assemble(buffer: Buffer | undefined, chunks: Buffer[], total: number): Uint8Array {
  if (buffer !== undefined)
    return total === buffer.byteLength ? buffer : new Uint8Array(buffer.subarray(0, total));
  if (total === 0) return new Uint8Array();
  const bytes = Buffer.allocUnsafeSlow(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return bytes;
}

/** At most this many encodings are undone (as in undici): a longer list is not a real server's. */
const MAX_ENCODINGS = 5;
/** Decompressor output chunk: larger than zlib's 16 KB default, so fewer buffers per page. */
const CHUNK = 64 * 1024;

/** Statuses whose body is empty whatever the headers say (the Fetch standard's null body statuses). */
const NULL_BODY = new Set([101, 204, 205, 304]);

type Source = NodeJS.ReadableStream & { destroy(error?: Error): void };

/**
 * The response's body with its Content-Encoding undone, last applied first, and every
 * stream in the chain (to destroy them all at once). Unknown encodings leave the body as it
 * was sent, as browsers and undici do.
 */
function decode(response: http.IncomingMessage): { body: Source; stages: Source[] } {
  const header = response.headers["content-encoding"];
  const plain = { body: response, stages: [response] };
  if (!header || NULL_BODY.has(response.statusCode ?? 0)) return plain;
  const codings = header
    .toLowerCase()
    .split(",")
    .map((c) => c.trim())
    .filter((c) => c !== "" && c !== "identity");
  if (codings.length > MAX_ENCODINGS) throw new Error(`too many content encodings: ${header}`);
  const decoders: Transform[] = [];
  for (const coding of codings.reverse()) {
    const decoder = decoderFor(coding);
    if (decoder === undefined) {
      for (const d of decoders) d.destroy();
      return plain; // an encoding we cannot undo: left as sent
    }
    decoders.push(decoder);
  }
  let body: Source = response;
  for (const decoder of decoders) {
    // pipe() does not pass errors along; a failed stage fails the next one.
    body.on("error", (error: Error) => decoder.destroy(error));
    body = body.pipe(decoder);
  }
  return { body, stages: [response, ...decoders] };
}

function decoderFor(coding: string): Transform | undefined {
  // Lenient at the end, as browsers are: a truncated stream yields what it has.
  const zlibOptions = {
    flush: zlib.constants.Z_SYNC_FLUSH,
    finishFlush: zlib.constants.Z_SYNC_FLUSH,
    chunkSize: CHUNK,
  };
  switch (coding) {
    case "gzip":
    case "x-gzip":
      return zlib.createGunzip(zlibOptions);
    case "deflate":
      return new DeflateDecoder(zlibOptions);
    case "br":
      return zlib.createBrotliDecompress({
        flush: zlib.constants.BROTLI_OPERATION_FLUSH,
        finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH,
        chunkSize: CHUNK,
      });
    default:
      return undefined;
  }
}

/**
 * `deflate` as servers send it: usually zlib-wrapped (RFC 1950), sometimes raw (RFC 1951).
 * The first byte tells which, so the inflater is chosen when it arrives.
 */
class DeflateDecoder extends Transform {
  readonly #options: zlib.ZlibOptions;
  #inner: zlib.Inflate | zlib.InflateRaw | undefined;

  constructor(options: zlib.ZlibOptions) {
    super();
    this.#options = options;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.#inner === undefined) {
      // A zlib header's low nibble is 8 (the deflate method); a raw stream's first byte rarely is.
      const inner =
        (chunk[0]! & 0x0f) === 0x08
          ? zlib.createInflate(this.#options)
          : zlib.createInflateRaw(this.#options);
      inner.on("data", (data: Buffer) => {
        if (!this.push(data)) inner.pause();
      });
      inner.on("error", (error) => this.destroy(error));
      this.#inner = inner;
    }
    this.#inner.write(chunk, () => callback());
  }

  override _read(size: number): void {
    this.#inner?.resume();
    super._read(size);
  }

  override _flush(callback: TransformCallback): void {
    const inner = this.#inner;
    if (inner === undefined) {
      callback();
      return;
    }
    inner.once("end", () => callback());
    inner.end();
  }

  override _destroy(error: Error | null, callback: (error: Error | null) => void): void {
    this.#inner?.destroy();
    callback(error);
  }
}
