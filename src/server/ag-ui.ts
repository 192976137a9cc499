// AG-UI at POST /api/ag-ui. Loaded on the route's first request (create-server imports it
// lazily), so `import "quiver-agents/server"` never pulls in @ag-ui/* and the zod and protobuf
// code their schemas and encoder bring.
import {
  type Event as AgUiEvent,
  type Message as AgUiMessage,
  EventType,
  type RunAgentInput,
} from "@ag-ui/core";
import { RunAgentInputSchema } from "@ag-ui/core/schemas";
import { type RunInput, replay } from "../index.js";
import { AgUiTranslator, hasState } from "./ag-ui-events.js";
import { applyAnswers, waitsOf } from "./ag-ui-interrupts.js";
import { contentOf, contextBlock, historyOf, toAgUi } from "./ag-ui-messages.js";
import { type AgUiWire, agUiWire } from "./ag-ui-wire.js";
import { refusingBadInput } from "./attachments.js";
import { ClientResults } from "./client-tools.js";
import { HttpError, MAX_MESSAGE_BODY_BYTES, notFound, readJsonObject } from "./http.js";
import type { RunLog } from "./run-log.js";
import type { RunRegistry } from "./runs.js";
import { startInSession } from "./session-claim.js";
import { framed, translatedStream } from "./translated-stream.js";

/** Per server: results of client-tool calls on their way into runs. */
const resultsOf = new WeakMap<RunRegistry, ClientResults>();
/** Where the last AG-UI response of a run ended (an index into its events): a continuation starts there. */
const cursors = new WeakMap<RunLog, number>();
/** The id of the AG-UI user message that started a run: the same message again is a reconnect. */
const startedBy = new WeakMap<RunLog, string>();

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
  const wire = agUiWire(request.headers.get("accept"));
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
    const added = registry.toolsBesides(live.agentKey, tools);
    if (added.length > 0) live.extraTools = added;
    const from = cursors.get(live) ?? live.all.length;
    if ((await applyAnswers(live, input, registry, results)) > 0) return agUiStream(live, input, wire, from);
    if (!newMessage) return agUiStream(live, input, wire, 0, snapshotBefore(live));
    // A new message supersedes a run of this thread that still waits or runs.
    await registry.cancel(live, "superseded by a new message").catch(() => {});
    const until = Date.now() + 5_000;
    while (!live.finished && Date.now() < until) await live.changed(until - Date.now());
  } else if (!newMessage) {
    return snapshotOnly(input, latest, wire);
  }

  const content = contentOf(newMessage!.content, contextBlock(input));
  if (content.length === 0)
    throw new HttpError(400, "bad_request", "the user message has no text and no media");
  let runInput: RunInput = content;
  if (!registry.store) {
    const history = latest?.messages ?? historyOf(input.messages.slice(0, -1));
    runInput = [...history, { role: "user", content }];
  }
  // As `POST /api/runs`: the stream begins once the run's start is stored. The thread becomes
  // the caller's with this run, not with a request refused before it.
  const log = await startInSession(
    registry,
    threadId,
    userId,
    () => notFound(`no thread ${threadId}`),
    () => {
      const started = refusingBadInput(() =>
        // The client's state is the thread's as the client holds it (it applies every STATE_SNAPSHOT).
        registry.start(agentKey, runInput, { userId, sessionId: threadId }, tools, { state: input.state }),
      );
      startedBy.set(started, newMessage!.id);
      return started;
    },
  );
  return agUiStream(log, input, wire, 0);
}

async function readInput(request: Request): Promise<RunAgentInput> {
  const body = await readJsonObject(request, MAX_MESSAGE_BODY_BYTES);
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
 * The AG-UI stream of one run from `from` (an index into its events): RUN_STARTED (with the
 * request's run id), a messages snapshot when reconnecting, the translated events, and
 * RUN_FINISHED or RUN_ERROR where the run ends or waits. Produced as the client reads.
 */
function agUiStream(
  log: RunLog,
  input: RunAgentInput,
  wire: AgUiWire,
  from: number,
  snapshot?: AgUiMessage[],
): Response {
  const clientTools = new Set((log.extraTools ?? []).map((t) => t.name));
  const translator = new AgUiTranslator(log.runId, input.threadId, input.runId, clientTools);
  if (from > 0) translator.prime(log.all.slice(0, from));
  return translatedStream<AgUiEvent>(log, from, {
    opening: () => {
      const out: AgUiEvent[] = [runStarted(input, log.runId)];
      if (snapshot) out.push({ type: EventType.MESSAGES_SNAPSHOT, messages: snapshot });
      return out;
    },
    finished: () => translator.finished,
    translate: (event, out) => translator.translate(event, out),
    blocked: (out, cursor) => {
      translator.blocked(out, waitsOf(log));
      cursors.set(log, cursor);
    },
    ended: (out) =>
      translator.end(
        out,
        log.status === "failed" ? "failed" : log.status === "detached" ? "detached" : "completed",
      ),
    frame: wire.frame,
    headers: wire.headers,
  });
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
function snapshotOnly(input: RunAgentInput, latest: RunLog | undefined, wire: AgUiWire): Response {
  const replayed = latest && replay(latest.own);
  const messages = latest ? toAgUi(latest.messages ?? replayed!.messages, latest.runId) : [];
  const events: AgUiEvent[] = [
    runStarted(input, latest?.runId),
    { type: EventType.MESSAGES_SNAPSHOT, messages },
    ...(hasState(replayed?.state)
      ? [{ type: EventType.STATE_SNAPSHOT, snapshot: replayed!.state } as AgUiEvent]
      : []),
    {
      type: EventType.RUN_FINISHED,
      threadId: input.threadId,
      runId: input.runId,
      outcome: { type: "success" },
    },
  ];
  return new Response(framed(events.map(wire.frame)), { headers: wire.headers });
}

/** The conversation a run started from (what came before it in its thread). */
function snapshotBefore(log: RunLog): AgUiMessage[] {
  const first = log.own[0];
  return first?.type === "run_started" ? toAgUi(first.input, `${log.runId}-in`) : [];
}
