// AG-UI at POST /api/ag-ui. Loaded on the route's first request (create-server imports it
// lazily), so `import "quiver-agents/server"` never pulls in @ag-ui/* and the zod and protobuf
// code their schemas and encoder bring.
import {
  type Event as AgUiEvent,
  type Message as AgUiMessage,
  EventType,
  type Interrupt,
  type ResumeEntry,
  type RunAgentInput,
} from "@ag-ui/core";
import { RunAgentInputSchema } from "@ag-ui/core/schemas";
import { EventEncoder } from "@ag-ui/encoder";
import { type ContentBlock, type Message, replay } from "../index.js";
import { AgUiTranslator, type AgUiTranslator as Translator, type Waits } from "./ag-ui-events.js";
import { ClientResults } from "./client-tools.js";
import { HttpError, KEEPALIVE_MS, notFound, pullResponse, readJsonObject, SSE_HEADERS } from "./http.js";
import { callKey, type RunLog } from "./run-log.js";
import type { RunRegistry } from "./runs.js";

/** Per server: results of client-tool calls on their way into runs. */
const resultsOf = new WeakMap<RunRegistry, ClientResults>();
/** Where the last AG-UI response of a run ended (an index into its events): a continuation starts there. */
const cursors = new WeakMap<RunLog, number>();
/** The id of the AG-UI user message that started a run: the same message again is a reconnect. */
const startedBy = new WeakMap<RunLog, string>();

const encoder = new EventEncoder();

/**
 * `POST /api/ag-ui`: a `RunAgentInput` in, the AG-UI event stream out. The thread id is the
 * session. What the request does depends on the thread's latest run:
 * - it waits (an approval, a question, a client tool's call) and the request answers it
 *   (`resume[]` entries, `tool` messages): the run continues in this response;
 * - the request's last message is a new user message: a new run (one still going is cancelled);
 * - otherwise (a reconnect): MESSAGES_SNAPSHOT of the thread, then the current run from its
 *   start, live, ending where it ends or waits.
 */
export async function postAgUi(
  request: Request,
  registry: RunRegistry,
  userId: string | undefined,
  defaultAgent: string,
): Promise<Response> {
  const input = await readInput(request);
  const threadId = input.threadId;
  const agentKey = agentOf(input, defaultAgent);
  if ((await registry.sessions.access(threadId, userId)) === "theirs")
    throw notFound(`no thread ${threadId}`);
  const results = resultsOf.get(registry) ?? new ClientResults();
  resultsOf.set(registry, results);
  const tools = results.toolsFor(input.tools ?? []);

  const latest = await registry.latestOfSession(threadId, userId);
  const last = input.messages.at(-1);
  const newMessage =
    last?.role === "user" && !(latest && startedBy.get(latest) === last.id) ? last : undefined;
  const live = latest && !latest.finished && latest.status !== "detached" ? latest : undefined;
  if (live) {
    if (tools.length > 0) live.extraTools = tools;
    const from = cursors.get(live) ?? live.all.length;
    if ((await applyAnswers(live, input, registry, results)) > 0) return agUiStream(live, input, from);
    if (!newMessage) return agUiStream(live, input, 0, snapshotBefore(live));
    // A new message supersedes a run of this thread that still waits or runs.
    await registry.cancel(live, "superseded by a new message").catch(() => {});
    const until = Date.now() + 5_000;
    while (!live.finished && Date.now() < until) await live.changed(until - Date.now());
  } else if (!newMessage) {
    return snapshotOnly(input, latest);
  }

  const text = [textOf(newMessage!.content), contextBlock(input)].filter(Boolean).join("\n\n");
  if (text === "") throw new HttpError(400, "bad_request", "the user message has no text");
  if ((await registry.sessions.access(threadId, userId, true)) === "theirs")
    throw notFound(`no thread ${threadId}`);
  let runInput: string | Message[] = text;
  if (!registry.store) {
    const history = latest?.messages ?? historyOf(input.messages.slice(0, -1));
    runInput = [...history, { role: "user", content: text }];
  }
  const log = registry.start(agentKey, runInput, { userId, sessionId: threadId }, tools);
  startedBy.set(log, newMessage!.id);
  return agUiStream(log, input, 0);
}

async function readInput(request: Request): Promise<RunAgentInput> {
  const body = await readJsonObject(request);
  const parsed = RunAgentInputSchema.safeParse(body);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .slice(0, 5)
      .map((issue) => `${issue.path.join(".") || "(body)"}: ${issue.message}`)
      .join("; ");
    throw new HttpError(400, "bad_request", `the body is not an AG-UI RunAgentInput: ${issues}`);
  }
  return parsed.data as RunAgentInput;
}

/** `forwardedProps.agent` picks one of several served agents. */
function agentOf(input: RunAgentInput, defaultAgent: string): string {
  const named = (input.forwardedProps as { agent?: unknown } | undefined)?.agent;
  if (named === undefined || named === null) return defaultAgent;
  if (typeof named !== "string")
    throw new HttpError(400, "bad_request", '"forwardedProps.agent" must be a string');
  return named;
}

/**
 * Applies what the request answers: `resume[]` entries decide approvals and answer questions by
 * interrupt id, `tool` messages give results of the client's own tools. Returns how many applied
 * (an answer to something no longer waiting, e.g. a repeated request, does not count).
 */
async function applyAnswers(
  log: RunLog,
  input: RunAgentInput,
  registry: RunRegistry,
  results: ClientResults,
): Promise<number> {
  const waits = waitsOf(log);
  let applied = 0;
  for (const entry of input.resume ?? []) {
    if (waits.interrupts.some((i) => i.id === entry.interruptId && i.reason === "tool_approval")) {
      const { approved, reason } = decisionOf(entry);
      applied += await ignoreStale(registry.decide(log, entry.interruptId, approved, reason));
    } else if (waits.interrupts.some((i) => i.id === entry.interruptId)) {
      const answer = answerOf(entry);
      applied += await ignoreStale(
        Promise.resolve().then(() => registry.answer(log, entry.interruptId, answer)),
      );
    }
  }
  for (const message of input.messages) {
    if (message.role !== "tool" || !waits.clientCalls.includes(message.toolCallId)) continue;
    results.put(log.runId, message.toolCallId, {
      content: textOf(message.content),
      ...(message.error !== undefined && { error: message.error }),
    });
    const done = await ignoreStale(registry.decide(log, message.toolCallId, true));
    if (done === 0) results.drop(log.runId, message.toolCallId);
    applied += done;
  }
  return applied;
}

/** 1 when applied; 0 when it no longer waited (a 409 from the registry). */
async function ignoreStale(action: Promise<void>): Promise<number> {
  try {
    await action;
    return 1;
  } catch (error) {
    if (error instanceof HttpError && error.status === 409) return 0;
    throw error;
  }
}

/** A resume entry for an approval: `{ approved, reason? }` or `true`/`false`; cancelled denies. */
function decisionOf(entry: ResumeEntry): { approved: boolean; reason?: string } {
  if (entry.status === "cancelled") return { approved: false, reason: "cancelled by the user" };
  const payload = entry.payload as { approved?: unknown; reason?: unknown } | boolean | undefined;
  if (typeof payload === "boolean") return { approved: payload };
  if (payload && typeof payload === "object" && typeof payload.approved === "boolean")
    return {
      approved: payload.approved,
      ...(typeof payload.reason === "string" && { reason: payload.reason }),
    };
  throw new HttpError(
    400,
    "bad_request",
    `resume entry ${entry.interruptId}: an approval's payload is { "approved": true | false, "reason"?: string }`,
  );
}

/** A resume entry for a question: a string, `{ answer }`, or a list of chosen options. */
function answerOf(entry: ResumeEntry): string {
  if (entry.status === "cancelled") return "(no answer: cancelled)";
  const payload = entry.payload as unknown;
  if (typeof payload === "string") return payload;
  if (Array.isArray(payload)) return payload.map(String).join(", ");
  const answer = (payload as { answer?: unknown } | undefined)?.answer;
  if (typeof answer === "string") return answer;
  return JSON.stringify(payload ?? "");
}

/** What the run waits for now, as AG-UI interrupts and pending client calls. */
function waitsOf(log: RunLog): Waits {
  const clientTools = new Set((log.extraTools ?? []).map((t) => t.name));
  const waiting = log.status === "parked" ? log.parked : [...log.asking.values()];
  const interrupts: Interrupt[] = [];
  const clientCalls: string[] = [];
  for (const entry of waiting) {
    const own = entry.runId === log.runId;
    if (own && clientTools.has(entry.call.name)) {
      clientCalls.push(entry.call.id);
      continue;
    }
    interrupts.push({
      id: own ? entry.call.id : callKey(entry.runId, entry.call.id),
      reason: "tool_approval",
      message: `${entry.call.name} needs approval`,
      toolCallId: topCall(log, entry),
      responseSchema: {
        type: "object",
        properties: { approved: { type: "boolean" }, reason: { type: "string" } },
        required: ["approved"],
      },
      metadata: { name: entry.call.name, args: entry.call.args ?? {} },
    });
  }
  for (const open of log.questions.values()) {
    const { question, options, multiSelect } = open.question;
    const labels = options.map((o) => o.label);
    interrupts.push({
      id: open.runId === log.runId ? open.call.id : callKey(open.runId, open.call.id),
      reason: "input_required",
      message: question,
      toolCallId: topCall(log, open),
      // The options are suggestions: any text stays a valid answer.
      responseSchema: multiSelect
        ? { type: "array", items: { type: "string", examples: labels } }
        : { type: "string", ...(labels.length > 0 && { examples: labels }) },
      ...(options.length > 0 && { metadata: { options, multiSelect } }),
    });
  }
  return { interrupts, clientCalls };
}

/** The root run's call a waiting call descends from (itself, for the root run's own calls). */
function topCall(log: RunLog, entry: { runId: string; call: { id: string } }): string {
  let key = callKey(entry.runId, entry.call.id);
  for (;;) {
    const cut = key.lastIndexOf("/");
    const owner = key.slice(0, cut);
    if (owner === log.runId) return key.slice(cut + 1);
    const parent = log.parentCalls.get(owner);
    if (parent === undefined) return entry.call.id;
    key = parent;
  }
}

/**
 * The AG-UI stream of one run from `from` (an index into its events): RUN_STARTED (with the
 * request's run id), a messages snapshot when reconnecting, the translated events, and
 * RUN_FINISHED or RUN_ERROR where the run ends or waits. Produced as the client reads.
 */
function agUiStream(log: RunLog, input: RunAgentInput, from: number, snapshot?: AgUiMessage[]): Response {
  const clientTools = new Set((log.extraTools ?? []).map((t) => t.name));
  const translator: Translator = new AgUiTranslator(log.runId, input.threadId, input.runId, clientTools);
  if (from > 0) translator.prime(log.all.slice(0, from));
  let cursor = from;
  let started = false;
  let lastSent = Date.now();
  const next = async (signal: AbortSignal): Promise<string | null> => {
    for (;;) {
      if (signal.aborted) return null;
      const out: AgUiEvent[] = [];
      if (!started) {
        started = true;
        out.push(runStarted(input, log.runId));
        if (snapshot) out.push({ type: EventType.MESSAGES_SNAPSHOT, messages: snapshot });
      } else if (translator.finished) {
        return null;
      } else if (cursor < log.all.length) {
        const end = Math.min(log.all.length, cursor + 64);
        for (; cursor < end; cursor++) translator.translate(log.all[cursor]!, out);
      } else if (log.blocked) {
        translator.blocked(out, waitsOf(log));
        cursors.set(log, cursor);
      } else if (log.finished || log.status === "detached") {
        translator.end(
          out,
          log.status === "failed" ? "failed" : log.status === "detached" ? "detached" : "completed",
        );
      } else {
        await log.changed(KEEPALIVE_MS, signal);
        if (
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
      let text = "";
      for (const event of out) text += encoder.encodeSSE(event);
      return text;
    }
  };
  return pullResponse(next, SSE_HEADERS);
}

function runStarted(input: RunAgentInput, runId?: string): AgUiEvent {
  return {
    type: EventType.RUN_STARTED,
    threadId: input.threadId,
    runId: input.runId,
    ...(runId !== undefined && { metadata: { quiver: { runId } } }),
  };
}

/** A thread with nothing running: its conversation as a snapshot, and the AG-UI run ends. */
function snapshotOnly(input: RunAgentInput, latest: RunLog | undefined): Response {
  const messages = latest ? toAgUi(latest.messages ?? replay(latest.own).messages, latest.runId) : [];
  const events: AgUiEvent[] = [
    runStarted(input, latest?.runId),
    { type: EventType.MESSAGES_SNAPSHOT, messages },
    {
      type: EventType.RUN_FINISHED,
      threadId: input.threadId,
      runId: input.runId,
      outcome: { type: "success" },
    },
  ];
  return new Response(events.map((e) => encoder.encodeSSE(e)).join(""), { headers: SSE_HEADERS });
}

/** The conversation a run started from (what came before it in its thread). */
function snapshotBefore(log: RunLog): AgUiMessage[] {
  const first = log.own[0];
  return first?.type === "run_started" ? toAgUi(first.input, `${log.runId}-in`) : [];
}

/** Quiver messages as AG-UI messages (text; system messages are the server's and stay there). */
function toAgUi(messages: readonly Message[], prefix: string): AgUiMessage[] {
  const out: AgUiMessage[] = [];
  messages.forEach((message, i) => {
    const id = `${prefix}-m${i}`;
    if (message.role === "user") out.push({ id, role: "user", content: plain(message.content) });
    else if (message.role === "assistant") {
      const content = plain(message.content);
      out.push({
        id,
        role: "assistant",
        ...(content !== "" && { content }),
        ...(message.toolCalls?.length && {
          toolCalls: message.toolCalls.map((call) => ({
            id: call.id,
            type: "function" as const,
            function: { name: call.name, arguments: JSON.stringify(call.args ?? {}) },
          })),
        }),
      });
    } else if (message.role === "tool") {
      const content = plain(message.content);
      out.push({
        id,
        role: "tool",
        toolCallId: message.toolCallId,
        content,
        ...(message.isError && { error: content }),
      });
    }
  });
  return out;
}

function plain(content: string | ContentBlock[]): string {
  if (typeof content === "string") return content;
  return content
    .filter((block): block is Extract<ContentBlock, { type: "text" }> => block.type === "text")
    .map((block) => block.text)
    .join("");
}

/** The text of an AG-UI message's content (a string, or parts whose text parts are joined). */
function textOf(content: unknown): string {
  if (typeof content === "string") return content.trim();
  if (!Array.isArray(content)) return "";
  return content
    .filter(
      (part): part is { type: "text"; text: string } =>
        part?.type === "text" && typeof part.text === "string",
    )
    .map((part) => part.text)
    .join("\n")
    .trim();
}

/** `context[]` entries, put after the user's message so the model sees what the page shared. */
function contextBlock(input: RunAgentInput): string {
  const entries = input.context ?? [];
  if (entries.length === 0) return "";
  return ["Context from the application:", ...entries.map((c) => `- ${c.description}: ${c.value}`)].join(
    "\n",
  );
}

/**
 * A conversation the server has no record of (no store, and not run here since it started):
 * the text of the client's user and assistant messages. Tool calls the client shows are not
 * replayed to the model as calls: the client may not be trusted to report them faithfully.
 */
function historyOf(messages: readonly AgUiMessage[]): Message[] {
  const history: Message[] = [];
  for (const message of messages) {
    if (message.role !== "user" && message.role !== "assistant") continue;
    const text = textOf(message.content);
    if (text) history.push({ role: message.role, content: text });
  }
  return history;
}
