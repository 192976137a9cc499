import { type ContentBlock, type RunEvent, serializeEvent } from "../index.js";
import type { DirectTarget } from "./direct-stream.js";
import { HttpError, KEEPALIVE_MS, MAX_BODY_BYTES, pullResponse, SSE_HEADERS } from "./http.js";
import type { RunLog } from "./run-log.js";

/**
 * Where a native stream starts: after `Last-Event-ID` (an EventSource reconnecting sends it)
 * or `?after=`; 0 replays the run from its first event.
 */
export function resumePoint(request: Request): number {
  const header = request.headers.get("last-event-id");
  const query = new URL(request.url).searchParams.get("after");
  const raw = header ?? query;
  if (raw === null || raw === "") return 0;
  if (!/^\d{1,15}$/.test(raw.trim()))
    throw new HttpError(
      400,
      "bad_request",
      `the resume point ${JSON.stringify(raw)} is not a non-negative integer (an event seq)`,
    );
  return Number(raw.trim());
}

/** `?children=1`: the stream also carries the events of the run's child runs (agents used as tools). */
export function wantsChildren(request: Request): boolean {
  const value = new URL(request.url).searchParams.get("children");
  return value !== null && value !== "0" && value !== "false";
}

/**
 * `?input=own`: a `run_started` of a session's run carries only the messages the run was given
 * (`input.slice(history)`), not the conversation before them that it starts from — a chat
 * reopened in the page fetches each of its runs, and each run's input repeated every message
 * before it (a 500-message chat: 16 MB).
 */
export function wantsOwnInput(request: Request): boolean {
  return new URL(request.url).searchParams.get("input") === "own";
}

/** An event's `data:` text, its input trimmed to the run's own with `ownInput` (see `wantsOwnInput`). */
function wireText(event: RunEvent, ownInput: boolean): string {
  if (ownInput && event.type === "run_started" && event.history) {
    return serializeEvent({ ...event, input: event.input.slice(event.history) });
  }
  return serializeEvent(event);
}

/**
 * `GET /api/runs/:runId/events`: SSE with `id: <seq>` and `data: serializeEvent(ev)`, replaying
 * the run's own events after `after`, then following it live until it completes or fails (a
 * parked run keeps the stream open: a decision resumes it). Produced as the client reads;
 * closing the connection detaches, it never cancels the run.
 *
 * With `children`, the events of its child runs come in between, in the order they happened,
 * without an `id:` line (their seqs count in their own runs): the last `id:` a client saw still
 * resumes the stream, and a child event sent before a drop may come again after it (a client
 * keeps each run's last seq to skip those).
 */
export function eventStream(
  log: RunLog,
  after: number,
  children = false,
  direct?: DirectTarget,
  ownInput = false,
): Response {
  if (children) return familyStream(log, after, direct, ownInput);
  let cursor = after;
  let lastSent = Date.now();
  let greeted = false;
  const next = async (signal: AbortSignal): Promise<string | null> => {
    if (!greeted) {
      greeted = true;
      // Tells EventSource how soon to reconnect; it sends Last-Event-ID when it does.
      return "retry: 2000\n\n";
    }
    for (;;) {
      if (signal.aborted) return null;
      const events = log.ownAfter(cursor, 128);
      if (events.length > 0) {
        let text = "";
        for (const event of events) text += `id: ${event.seq}\ndata: ${wireText(event, ownInput)}\n\n`;
        cursor = events.at(-1)!.seq;
        lastSent = Date.now();
        return text;
      }
      if (log.finished || log.status === "detached" || log.released) return null;
      await log.changed(KEEPALIVE_MS, signal);
      if (log.ownAfter(cursor, 1).length === 0 && Date.now() - lastSent >= KEEPALIVE_MS) {
        lastSent = Date.now();
        return ": keepalive\n\n";
      }
    }
  };
  return pullResponse(next, SSE_HEADERS, 200, direct);
}

function familyStream(
  log: RunLog,
  after: number,
  direct: DirectTarget | undefined,
  ownInput: boolean,
): Response {
  let index = -1;
  let lastSent = Date.now();
  const next = async (signal: AbortSignal): Promise<string | null> => {
    if (index < 0) {
      index = log.allAfter(after);
      return "retry: 2000\n\n";
    }
    for (;;) {
      if (signal.aborted) return null;
      if (index < log.all.length) {
        const end = Math.min(log.all.length, index + 128);
        let text = "";
        for (; index < end; index++) {
          const event = log.all[index]!;
          if (event.runId === log.runId) text += `id: ${event.seq}\n`;
          text += `data: ${wireText(event, ownInput)}\n\n`;
        }
        lastSent = Date.now();
        return text;
      }
      if (log.finished || log.status === "detached" || log.released) return null;
      await log.changed(KEEPALIVE_MS, signal);
      if (index >= log.all.length && Date.now() - lastSent >= KEEPALIVE_MS) {
        lastSent = Date.now();
        return ": keepalive\n\n";
      }
    }
  };
  return pullResponse(next, SSE_HEADERS, 200, direct);
}

/** `GET /api/runs/:runId`: where the run stands and what it waits for. */
export function runSummary(log: RunLog): Record<string, unknown> {
  const waiting = log.status === "parked" ? log.parked : [...log.asking.values()];
  // As the store's summary says it: "store_unavailable" is a run the store stopped, resumable.
  const ended = log.status === "failed" ? log.own.at(-1) : undefined;
  return {
    runId: log.runId,
    agent: log.agentKey,
    sessionId: log.sessionId ?? null,
    status: log.status,
    ...(ended?.type === "run_failed" && { failureKind: ended.kind }),
    lastSeq: log.lastSeq,
    awaitingApproval: waiting.map((w) => ({
      callId: w.runId === log.runId ? w.call.id : `${w.runId}/${w.call.id}`,
      name: w.call.name,
      args: w.call.args,
    })),
    questions: [...log.questions.values()].map((q) => ({
      callId: q.runId === log.runId ? q.call.id : `${q.runId}/${q.call.id}`,
      question: q.question.question,
      options: q.question.options,
      multiSelect: q.question.multiSelect,
    })),
  };
}

/**
 * What `POST /api/runs` starts from: `"message"` (text), or `"content"`, the parts of one user
 * message as Quiver writes them (`{ type: "text", text }`, `{ type: "image", data | url,
 * mimeType }`, `{ type: "file", data | url, mimeType, filename? }`, `{ type: "audio", data,
 * mimeType }`; a `data:` URL may stand for `data`). The run checks each part (a 400 names a bad
 * one).
 */
export function nativeInput(body: Record<string, unknown>): string | ContentBlock[] {
  const { message, content } = body;
  if (content !== undefined) {
    if (message !== undefined)
      throw new HttpError(400, "bad_request", 'give "message" (text) or "content" (parts), not both');
    if (!Array.isArray(content) || content.length === 0)
      throw new HttpError(400, "bad_request", '"content" must be a non-empty array of content parts');
    return content.map((part, i) => {
      if (part === null || typeof part !== "object" || Array.isArray(part))
        throw new HttpError(400, "bad_request", `"content" part ${i} must be an object`);
      return part as ContentBlock;
    });
  }
  if (typeof message !== "string" || message === "")
    throw new HttpError(
      400,
      "bad_request",
      '"message" must be a non-empty string (or give "content": parts)',
    );
  return message;
}

/**
 * `POST /api/runs` takes up to `MAX_MESSAGE_BODY_BYTES` so that files fit, but like every other
 * body it holds at most `MAX_BODY_BYTES` besides them: the bytes (`data`) and URLs of its
 * image, file and audio parts do not count, everything else does (a text message, text parts).
 */
export function refuseOversizedText(body: Record<string, unknown>, bytes: number): void {
  let attached = 0;
  if (Array.isArray(body.content))
    for (const part of body.content as unknown[]) {
      if (part === null || typeof part !== "object") continue;
      const { type, data, url } = part as Record<string, unknown>;
      if (type === "text") continue;
      for (const field of [data, url]) if (typeof field === "string") attached += Buffer.byteLength(field);
    }
  if (bytes - attached > MAX_BODY_BYTES)
    throw new HttpError(
      413,
      "body_too_large",
      `request bodies are limited to ${MAX_BODY_BYTES} bytes besides attachments (the data of image, file and audio parts)`,
    );
}
