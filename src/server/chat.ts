import type { ContentBlock, Message } from "../index.js";
import { attachment, isEmptyContent, messageContent, refusingBadInput } from "./attachments.js";
import { HttpError, MAX_MESSAGE_BODY_BYTES, notFound, readJsonObject, SSE_HEADERS } from "./http.js";
import type { RunLog } from "./run-log.js";
import type { RunRegistry } from "./runs.js";
import { startInSession } from "./session-claim.js";
import { translatedStream } from "./translated-stream.js";
import { type UIChunk, UIStreamTranslator } from "./ui-stream.js";

/** What the AI SDK's `DefaultChatTransport` posts. Only the fields Quiver reads are typed. */
type UIPart = {
  type?: unknown;
  text?: unknown;
  /** A file part's `data:` or http(s) URL, media type and name. */
  url?: unknown;
  mediaType?: unknown;
  filename?: unknown;
  state?: unknown;
  toolCallId?: unknown;
  output?: unknown;
  errorText?: unknown;
  approval?: unknown;
};
type UIMessage = { id?: unknown; role?: unknown; parts?: unknown };

const UI_STREAM_HEADERS = { ...SSE_HEADERS, "x-vercel-ai-ui-message-stream": "v1" };

/**
 * `POST /api/chat`: a new user message starts a run (the chat id is its session); an assistant
 * message whose id is a run's id carries approval responses and `ask_human` answers for that
 * run, which then continues in a new response under the same message id.
 */
export async function postChat(
  request: Request,
  registry: RunRegistry,
  userId: string | undefined,
  defaultAgent: string,
): Promise<Response> {
  const body = await readJsonObject(request, MAX_MESSAGE_BODY_BYTES);
  const chatId = body.id;
  if (typeof chatId !== "string" || chatId === "")
    throw new HttpError(400, "bad_request", '"id" (the chat id) must be a non-empty string');
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0)
    throw new HttpError(400, "bad_request", '"messages" must be a non-empty array of UI messages');
  const last = messages.at(-1) as UIMessage;
  if (!last || typeof last !== "object" || !Array.isArray(last.parts))
    throw new HttpError(400, "bad_request", "the last message must be an object with a parts array");
  const agentKey = body.agent === undefined ? defaultAgent : body.agent;
  if (typeof agentKey !== "string") throw new HttpError(400, "bad_request", '"agent" must be a string');
  // Another caller's chat looks like one that does not exist; a new one becomes this caller's
  // with the run that starts it (below), not with a request refused before that.
  if ((await registry.sessions.access(chatId, userId)) === "theirs") throw notFound(`no chat ${chatId}`);

  if (last.role === "assistant" && typeof last.id === "string") {
    const log = await registry.get(last.id, userId);
    if (log) return continueRun(log, last.parts as UIPart[], registry);
  }
  if (last.role !== "user")
    throw new HttpError(
      400,
      "bad_request",
      "the last message must be the user's, or a run's assistant message",
    );
  const content = contentOf(last.parts as UIPart[], "the user message");
  if (isEmptyContent(content))
    throw new HttpError(400, "bad_request", "the user message has no text and no file");

  // A new message supersedes a run of this chat that still waits or runs.
  const previous = await registry.latestOfSession(chatId, userId);
  if (previous && !previous.finished && previous.status !== "detached") {
    await registry.cancel(previous, "superseded by a new message").catch(() => {});
    const until = Date.now() + 5_000;
    while (!previous.finished && Date.now() < until) await previous.changed(until - Date.now());
  }
  let input: string | ContentBlock[] | Message[] = content;
  if (!registry.store) {
    const history = previous?.messages ?? historyOf(messages.slice(0, -1) as UIMessage[]);
    input = [...history, { role: "user", content }];
  }
  // As `POST /api/runs`: the response (which names the run) begins once the start is stored.
  const log = await startInSession(
    registry,
    chatId,
    userId,
    () => notFound(`no chat ${chatId}`),
    () => refusingBadInput(() => registry.start(agentKey, input, { userId, sessionId: chatId })),
  );
  return chatStream(log, 0);
}

/**
 * `GET /api/chat/:chatId/stream`: the chat's current run from its start, then live; 204 when
 * idle or unknown (what the AI SDK reads as nothing to resume), 404 when it is another caller's.
 */
export async function resumeChat(
  chatId: string,
  registry: RunRegistry,
  userId: string | undefined,
): Promise<Response> {
  if ((await registry.sessions.access(chatId, userId)) === "theirs") throw notFound(`no chat ${chatId}`);
  const log = await registry.latestOfSession(chatId, userId);
  if (!log || log.finished || log.status === "detached") return new Response(null, { status: 204 });
  return chatStream(log, 0);
}

async function continueRun(log: RunLog, parts: UIPart[], registry: RunRegistry): Promise<Response> {
  // What the client has seen: up to where the last response ended (or everything so far).
  const cursor = log.chatCursor ?? log.all.length;
  let applied = 0;
  for (const part of parts) {
    if (!part || typeof part !== "object" || typeof part.toolCallId !== "string") continue;
    const approval = part.approval as { id?: unknown; approved?: unknown; reason?: unknown } | undefined;
    if (part.state === "approval-responded" && approval && typeof approval.approved === "boolean") {
      const reason = typeof approval.reason === "string" ? approval.reason : undefined;
      // The approval id names the call that asked (a child run's call is asked on its parent's part).
      const callId = typeof approval.id === "string" ? approval.id : part.toolCallId;
      applied += await ignoreStale(registry.decide(log, callId, approval.approved, reason));
    } else if (part.state === "output-available" || part.state === "output-error") {
      const open = [...log.questions.values()].some(
        (q) => q.call.id === part.toolCallId || `${q.runId}/${q.call.id}` === part.toolCallId,
      );
      if (!open) continue;
      const answer =
        part.state === "output-error"
          ? `(no answer: ${String(part.errorText ?? "declined")})`
          : typeof part.output === "string"
            ? part.output
            : JSON.stringify(part.output ?? "");
      applied += await ignoreStale(
        Promise.resolve().then(() => registry.answer(log, part.toolCallId as string, answer)),
      );
    }
  }
  if (applied === 0 && log.blocked) {
    // Nothing here answers what the run waits for: ending at once would have a client that
    // sends automatically post the same request again, forever.
    throw new HttpError(
      409,
      "still_waiting",
      `run ${log.runId} still waits for a decision or an answer this request does not carry`,
    );
  }
  return chatStream(log, cursor);
}

/** 1 when the action was applied; 0 when it had been already (a repeated POST is not an error). */
async function ignoreStale(action: Promise<void>): Promise<number> {
  try {
    await action;
    return 1;
  } catch (error) {
    if (error instanceof HttpError && error.status === 409) return 0;
    throw error;
  }
}

/**
 * The UI message stream of one run from `from` (an index into its events): `start` with the
 * run's id as the message id, the translated events, and an end where the run finishes or
 * waits for a person. Produced as the client reads (backpressure), never buffered ahead.
 */
export function chatStream(log: RunLog, from: number): Response {
  const translator = new UIStreamTranslator(log.runId);
  if (from > 0) translator.prime(log.all.slice(0, from));
  return translatedStream<UIChunk>(log, from, {
    opening: () => [{ type: "start", messageId: log.runId }],
    finished: () => translator.finished,
    translate: (event, out) => translator.translate(event, out),
    blocked: (out, cursor) => {
      translator.blocked(out);
      log.chatCursor = cursor;
    },
    ended: (out) => translator.end(out, log.status === "failed" ? "failed" : "unknown"),
    frame: (chunk) => `data: ${JSON.stringify(chunk)}\n\n`,
    closing: "data: [DONE]\n\n",
    headers: UI_STREAM_HEADERS,
  });
}

function textOf(parts: UIPart[]): string {
  let text = "";
  for (const part of parts)
    if (part && part.type === "text" && typeof part.text === "string") text += (text ? "\n" : "") + part.text;
  return text.trim();
}

/**
 * A user message's text and files (`{ type: "file", mediaType, url, filename? }`, the url a
 * `data:` URL or an http(s) link): its text alone when it has no file. Other parts are the
 * client's own (step markers, data parts) and are not the model's input.
 */
function contentOf(parts: UIPart[], what: string): string | ContentBlock[] {
  const blocks: ContentBlock[] = [];
  const text = textOf(parts);
  if (text !== "") blocks.push({ type: "text", text });
  parts.forEach((part, i) => {
    if (part?.type !== "file") return;
    if (typeof part.url !== "string" || typeof part.mediaType !== "string")
      throw new HttpError(
        400,
        "bad_request",
        `${what}, part ${i}: a file part needs "url" and "mediaType" strings`,
      );
    blocks.push(
      attachment(`${what}, part ${i}`, {
        url: part.url,
        mediaType: part.mediaType,
        ...(typeof part.filename === "string" && { filename: part.filename }),
      }),
    );
  });
  return messageContent(blocks);
}

/**
 * A conversation the server has no record of (no store, and not run here since it started):
 * rebuilt from the client's messages, their text and the user's files — tool calls the client
 * shows are not replayed to the model as calls, because the client may not be trusted to
 * report them faithfully.
 */
function historyOf(messages: UIMessage[]): Message[] {
  const history: Message[] = [];
  for (const message of messages) {
    if (
      !message ||
      (message.role !== "user" && message.role !== "assistant") ||
      !Array.isArray(message.parts)
    )
      continue;
    const parts = message.parts as UIPart[];
    const content = message.role === "user" ? contentOf(parts, "an earlier user message") : textOf(parts);
    if (!isEmptyContent(content)) history.push({ role: message.role, content } as Message);
  }
  return history;
}
