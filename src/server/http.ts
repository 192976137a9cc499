import { MAX_BODY_DEPTH, tooDeep } from "./body-depth.js";
import { type DirectTarget, streamDirect } from "./direct-stream.js";

/** Request bodies above this are refused with 413 before they are read in full. */
export const MAX_BODY_BYTES = 1_000_000;

/**
 * The limit for a body that may carry attachments (a new message at `/api/chat`, `/api/runs`,
 * `/api/ag-ui`, `/a2a`): one 20 MB file as base64 in a data URL, with room for the conversation a
 * client sends along. A single attachment is still held to the run's `maxAttachmentBytes`.
 */
export const MAX_MESSAGE_BODY_BYTES = 32 * 1024 * 1024;

/** A request the server refuses: it becomes a JSON error response with this status. */
export class HttpError extends Error {
  override name = "HttpError";
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** The JSON error body every refusal has: `{ error: { code, message } }`. */
export function errorResponse(status: number, code: string, message: string): Response {
  return Response.json({ error: { code, message } }, { status, headers: { "cache-control": "no-store" } });
}

export function notFound(what = "no such run"): HttpError {
  return new HttpError(404, "not_found", what);
}

/**
 * Reads a JSON object body: 413 over `MAX_BODY_BYTES` (counted as it streams in, so a lying or
 * missing Content-Length cannot get more through), 415 unless it is declared as exactly
 * `application/json` (which also makes a browser on another origin ask first, so a page
 * elsewhere cannot post here), 400 when it does not parse or is not an object.
 */
export async function readJsonObject(
  request: Request,
  maxBytes = MAX_BODY_BYTES,
): Promise<Record<string, unknown>> {
  return (await readJsonBody(request, maxBytes)).body;
}

/** `readJsonObject`, with the body's size in bytes (for a limit on part of it). */
export async function readJsonBody(
  request: Request,
  maxBytes = MAX_BODY_BYTES,
): Promise<{ body: Record<string, unknown>; bytes: number }> {
  if (!isJson(request.headers.get("content-type") ?? "")) throw notJson();
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (declared > maxBytes) throw tooLarge(maxBytes);
  const text = await readCapped(request, maxBytes);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, "bad_json", `the body is not valid JSON: ${(error as Error).message}`);
  }
  if (!value || typeof value !== "object" || Array.isArray(value))
    throw new HttpError(400, "bad_request", "the body must be a JSON object");
  const deep = tooDeep(value as Record<string, unknown>);
  if (deep !== undefined)
    throw new HttpError(
      400,
      "bad_request",
      `the body's ${JSON.stringify(deep)} is nested more than ${MAX_BODY_DEPTH} levels deep`,
    );
  return { body: value as Record<string, unknown>, bytes: Buffer.byteLength(text) };
}

/**
 * True when a Content-Type names exactly `application/json` (parameters such as `; charset=utf-8`
 * allowed): `application/json-evil` or `application/jsonp` is not JSON, whatever its prefix.
 */
export function isJson(contentType: string): boolean {
  const semicolon = contentType.indexOf(";");
  const mediaType = (semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim();
  return mediaType.toLowerCase() === "application/json";
}

/**
 * Refuses a body that is declared as anything but JSON on a request that reads none (`/cancel`):
 * the forms and `text/plain` bodies a page elsewhere may send without asking are never taken.
 */
export function refuseNonJson(request: Request): void {
  const type = request.headers.get("content-type");
  if (type !== null && type.trim() !== "" && !isJson(type)) throw notJson();
}

function notJson(): HttpError {
  return new HttpError(
    415,
    "unsupported_media_type",
    "send the body as JSON (content-type: application/json)",
  );
}

async function readCapped(request: Request, maxBytes: number): Promise<string> {
  if (!request.body) return "";
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let read: Awaited<ReturnType<typeof reader.read>>;
    try {
      read = await reader.read();
    } catch {
      // The client went away (or its proxy cut it off) mid-body: its failure, not the server's.
      throw new HttpError(400, "incomplete_body", "the request body was not received in full");
    }
    const { done, value } = read;
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge(maxBytes);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function tooLarge(maxBytes: number): HttpError {
  return new HttpError(413, "body_too_large", `request bodies are limited to ${maxBytes} bytes`);
}

/** A required string field, else 400 naming it. */
export function stringField(body: Record<string, unknown>, name: string): string {
  const value = body[name];
  if (typeof value !== "string" || value === "")
    throw new HttpError(400, "bad_request", `"${name}" must be a non-empty string`);
  return value;
}

/** An optional string field, else 400 naming it. */
export function optionalString(body: Record<string, unknown>, name: string): string | undefined {
  const value = body[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw new HttpError(400, "bad_request", `"${name}" must be a string`);
  return value;
}

/** How long an idle stream waits before it sends a comment line, so proxies keep it open. */
export const KEEPALIVE_MS = 15_000;

/**
 * A streaming response that produces text only when the client reads: `next()` is called for
 * the next piece once the previous one has been taken (a stalled client stalls its producer
 * instead of growing a buffer), and `null` ends the stream. `signal` aborts when the client
 * goes away. Under `serve()` (`direct`), written to Node's response without a web stream.
 */
export function pullResponse(
  next: (signal: AbortSignal) => Promise<string | Uint8Array | null>,
  headers: Record<string, string>,
  status = 200,
  direct?: DirectTarget,
): Response {
  if (direct) return streamDirect(next, headers, status, direct);
  const encoder = new TextEncoder();
  const gone = new AbortController();
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const piece = await next(gone.signal);
          if (gone.signal.aborted) return;
          if (piece === null) controller.close();
          else controller.enqueue(typeof piece === "string" ? encoder.encode(piece) : piece);
        } catch (error) {
          controller.error(error);
        }
      },
      cancel() {
        gone.abort();
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, { status, headers });
}

export const SSE_HEADERS: Record<string, string> = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-transform",
  connection: "keep-alive",
  "x-accel-buffering": "no",
};
