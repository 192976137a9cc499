import type { RunEvent } from "../../contract/events.js";
import { UserError } from "../../errors.js";
import type { Message } from "../../model/types.js";
import { STORE_UNAVAILABLE } from "../../store/log-rules.js";
import type { RunFilter, RunStore, RunSummary } from "../../store/types.js";
import type { Agent } from "../config/agent.js";
import { Handoff } from "../config/agent.js";
import { rememberView, restoreView } from "../conversation/compaction.js";
import type { PriorTurn, RequestedCall } from "../engine/executor.js";
import { guardrailKey } from "../engine/guardrail-checks.js";
import { type AgentSetup, endRun, finishWithOutput, prepareAgent, turns } from "../engine/loop.js";
import type { CallResult } from "../engine/tool-result.js";
import type { ActiveRun } from "../state/active-run.js";
import type { RunResult } from "../state/result.js";
import { closeStoredRun } from "./close-run.js";
import { type OpenTurn, type RunState, replay } from "./replay.js";

/** Reads a stored run and rebuilds its state; a run the store does not know is a `UserError`. */
export async function loadRun(store: RunStore, runId: string): Promise<RunState> {
  const events = await store.read(runId);
  if (events.length === 0) throw new UserError(`the store has no run ${runId}`);
  return replay(events);
}

/**
 * True for a run whose log ends with a failure of its store (disk full, lost connection, no
 * answer), not of the run: it is unfinished, and resuming continues it from what was stored.
 */
export function resumesAfterFailure(state: RunState): boolean {
  return state.status === "failed" && state.error?.kind === STORE_UNAVAILABLE;
}

/** The result a finished stored run ended with, rebuilt from its log. */
export function storedResult(state: RunState, agent: Agent<any, any>): RunResult<any> {
  if (state.status === "failed") {
    const error = new Error(state.error?.message ?? "the run failed");
    error.name = state.error?.name ?? "Error";
    throw error;
  }
  return {
    runId: state.runId!,
    output: state.output ?? "",
    messages: state.messages,
    toolCalls: state.toolCalls,
    usage: state.usage,
    stopReason: state.stopReason ?? "completed",
    lastAgent: findAgent(agent, state.agent) ?? agent,
    state: state.state,
  };
}

/**
 * Continues a stored run in `run` (a fresh ActiveRun with the same id): restores its transcript,
 * records, usage, turn and seq from the log, finishes the turn it stopped in — completed calls
 * are never run again; a call that had started re-runs only if its tool is idempotent, else it
 * gets an `interrupted` result; stored approval decisions stand; undecided ones are asked again
 * — and then goes on like any run.
 */
export async function resumeLoop(run: ActiveRun, state: RunState): Promise<RunResult<any>> {
  try {
    return await continueRun(run, state);
  } finally {
    // As a fresh run's loop does: plugins set up for this run are torn down, host watches end.
    const ending = endRun(run);
    if (ending) await ending;
  }
}

async function continueRun(run: ActiveRun, state: RunState): Promise<RunResult<any>> {
  const speaker = findAgent(run.agent, state.agent);
  if (!speaker) {
    throw new UserError(
      `run ${run.runId} was last driven by agent "${state.agent}", which is neither "${run.agent.name}" nor reachable through its handoffs`,
    );
  }
  run.switchAgent(speaker);
  const assistantCallIds = state.openTurn?.assistant?.toolCalls?.map((c) => c.id) ?? [];
  run.events.restore(state.lastSeq);
  run.callIds.restore([...state.callIds, ...assistantCallIds]);
  run.transcript.push(...state.messages);
  restoreView(run, state.compaction);
  Object.assign(run.usage, state.usage);
  if (state.state !== undefined && !run.parent) run.state.restore(state.state);
  if (state.tainted) run.tainted = state.tainted;
  for (const logged of state.guardrails ?? []) {
    const outcome: { tripped: boolean; reason?: string; info?: unknown } = { tripped: logged.tripped };
    if (logged.reason !== undefined) outcome.reason = logged.reason;
    if (logged.info !== undefined) outcome.info = logged.info;
    run.guardrailOutcomes.set(
      guardrailKey(logged.stage, logged.guardrail, logged.agent, logged.callId),
      outcome,
    );
  }
  const open = state.openTurn;
  const openIds = new Set(open?.calls.map((c) => c.id) ?? []);
  run.records.push(...state.toolCalls.filter((r) => !openIds.has(r.call.id)));
  run.turn = state.turn;
  const lastText = [...state.messages]
    .reverse()
    .find((m) => m.role === "assistant" && typeof m.content === "string" && m.content);
  if (lastText && typeof lastText.content === "string") run.lastText = lastText.content;
  const own = run.limits.budgets[0]?.runId === run.runId ? run.limits.budgets[0] : undefined;
  if (own) {
    own.turns = state.turn;
    own.toolCalls = state.toolCalls.length + (open ? open.started.size + open.decisions.size : 0);
  }
  run.tracing?.linkTo(state.traceparent, open?.decisions);
  run.events.emit({ type: "run_resumed", fromSeq: state.lastSeq });
  // Messages injected before the crash and never delivered: the model reads them next, and calls
  // of the open turn that had not started are skipped for them, as they would have been.
  if (state.queued.length) run.mailbox.restore(state.queued);
  run.mailbox.recordTo(run.events);

  const setup = await prepareAgent(run, run.agent);
  if (!open) {
    // Between turns. If the model's last word was its final answer, only run_completed was lost.
    const last = state.messages.at(-1);
    if (last?.role === "assistant" && !last.toolCalls?.length && !state.parked) {
      return finalAnswer(run, setup, typeof last.content === "string" ? last.content : run.lastText);
    }
    return turns(run, setup);
  }
  if (!open.assistant) {
    // The model turn itself was cut off: ask again, under the same turn number.
    run.turn = open.turn - 1;
    return turns(run, setup);
  }
  await closeInterruptedChildren(run, open, setup);
  const assistantAt = state.messages.lastIndexOf(open.assistant);
  const appended = new Set(
    state.messages.slice(assistantAt + 1).flatMap((m) => (m.role === "tool" ? [m.toolCallId] : [])),
  );
  const prior: PriorTurn = { results: new Map(), started: open.started, decisions: open.decisions, appended };
  for (const [id, logged] of open.completed) {
    const { record } = logged;
    const result: CallResult = {
      record,
      message: {
        role: "tool",
        toolCallId: record.call.id,
        name: record.call.name,
        content: logged.content ?? record.output,
        isError: !record.ok,
        ...(logged.details !== undefined && { details: logged.details }),
      },
    };
    prior.results.set(id, result);
  }
  // The assistant message is the authority on what was requested: a crash may have come before
  // its tool_call_requested events were stored.
  const calls = open.assistant.toolCalls ?? [];
  if (calls.length === 0) {
    // The model had given its final answer; only the closing events were lost.
    run.events.emit({
      type: "turn_completed",
      turn: run.turn,
      finish: "stop",
      ...(open.usage && { usage: open.usage }),
      ...(open.model !== undefined && { model: open.model }),
    });
    return finalAnswer(
      run,
      setup,
      typeof open.assistant.content === "string" ? open.assistant.content : run.lastText,
    );
  }
  for (const call of calls) {
    if (!open.calls.some((c) => c.id === call.id))
      run.events.emit({ type: "tool_call_requested", call, index: calls.indexOf(call) });
  }
  const requested: RequestedCall[] = calls.map((call) =>
    call.rawArgs !== undefined ? { call, parseError: "the arguments were not valid JSON" } : { call },
  );
  const text = typeof open.assistant.content === "string" ? open.assistant.content : "";
  // What the turn's live `turn_completed` would have said: an answer that requested calls ended
  // with "tool_calls"; its tokens and, after a fallback, its model are in the log.
  const ended = { finish: "tool_calls" as const, usage: open.usage, model: open.model };
  return turns(run, setup, { text, requested, prior, ended });
}

/** Ends a resumed run whose model had already answered (checked against `outputType` if set). */
async function finalAnswer(run: ActiveRun, setup: AgentSetup, text: string): Promise<RunResult<any>> {
  const checked = setup.contract ? await setup.contract.check(text) : undefined;
  if (!checked) return finishWithOutput(run, setup, "completed", text, text);
  if (checked.ok) return finishWithOutput(run, setup, "completed", checked.value, text);
  return turns(run, setup);
}

/** The agent named `name`: `root` or one reachable through handoffs. */
function findAgent(root: Agent<any, any>, name: string | undefined): Agent<any, any> | undefined {
  if (name === undefined) return root;
  const seen = new Set<Agent<any, any>>();
  const queue = [root];
  while (queue.length) {
    const agent = queue.shift()!;
    if (seen.has(agent)) continue;
    seen.add(agent);
    if (agent.name === name) return agent;
    for (const h of agent.config.handoffs ?? []) queue.push(h instanceof Handoff ? h.target : h);
  }
  return undefined;
}

/**
 * The conversation so far of a session: the transcript of its latest stored run. What a
 * guardrail kept out stays out: a run whose input tripped adds nothing (the session goes on
 * from the run before it), and a run whose output tripped ends before its withheld answer.
 *
 * @example
 * const history = await loadSession(store, "chat-42");
 */
export async function loadSession(store: RunStore, sessionId: string): Promise<Message[]> {
  return (await sessionHistory(store, sessionId)).messages;
}

/**
 * Whose a session is: the `userId` of its first top-level run (`started` once it has one, even
 * a run that added nothing to the conversation). Every later run of the session must be that
 * user's; the server judges a chat's owner the same way.
 */
export async function sessionOwner(
  store: RunStore,
  sessionId: string,
  listed?: readonly RunSummary[],
): Promise<{ started: boolean; userId?: string; runs: RunSummary[] }> {
  // Child runs (agents as tools) share the session id; the conversation is the top-level runs'.
  const runs = (listed ?? (await store.listRuns(sessionEnds(sessionId)))).filter((s) => !s.parentRunId);
  const first = runs[0];
  if (!first) return { started: false, runs };
  const userId = await ownerOf(store, sessionId, first);
  return { started: true, runs, ...(userId !== undefined && { userId }) };
}

/**
 * The `userId` of a session's first run, read once per store and session: a run's `run_started`
 * never changes, so the owner stays known for as long as the session's first run is that run
 * (a cleared session started again has a new first run — by its start time too, should a
 * caller reuse the id — and is read again). Reading it every time read the whole first run,
 * with every image of its first message, for each message of the chat.
 */
async function ownerOf(store: RunStore, sessionId: string, first: RunSummary): Promise<string | undefined> {
  const cached = sessionOwners.get(store)?.get(sessionId);
  if (cached?.runId === first.runId && cached.startedAt === first.startedAt) return cached.userId;
  const userId = userOf(await store.read(first.runId));
  const known = sessionOwners.get(store) ?? new Map();
  sessionOwners.set(store, known);
  known.delete(sessionId);
  known.set(sessionId, { runId: first.runId, startedAt: first.startedAt, userId });
  // The oldest entries go first: a store serving many chats keeps the recent ones.
  if (known.size > MAX_KNOWN_OWNERS) known.delete(known.keys().next().value!);
  return userId;
}

type KnownOwner = { runId: string; startedAt: number; userId: string | undefined };
const sessionOwners = new WeakMap<RunStore, Map<string, KnownOwner>>();
const MAX_KNOWN_OWNERS = 10_000;

/**
 * `loadSession`, with the `userId` the session belongs to (see `sessionOwner`) and the shared
 * state its conversation ended with.
 */
export async function sessionHistory(
  store: RunStore,
  sessionId: string,
  listed?: readonly RunSummary[],
): Promise<{ messages: Message[]; started: boolean; userId?: string; state?: unknown }> {
  const { started, userId: owner, runs: ends } = await sessionOwner(store, sessionId, listed);
  const base = { started, ...(owner !== undefined && { userId: owner }) };
  const read = new Set<string>();
  // Almost always the latest run holds the conversation; only when it adds nothing (its input
  // refused by a guardrail, another user's run) are the runs between the ends listed.
  const found =
    (await latestConversation(store, ends, owner, read)) ??
    (await latestConversation(store, await store.listRuns({ sessionId, topLevel: true }), owner, read));
  if (!found) return { messages: [], ...base };
  return { ...found, ...base };
}

/**
 * The conversation of the latest of `runs` that adds to its owner's, newest first, skipping the
 * runs in `read` (and adding those it reads).
 */
async function latestConversation(
  store: RunStore,
  runs: readonly RunSummary[],
  owner: string | undefined,
  read: Set<string>,
): Promise<{ messages: Message[]; state?: unknown } | undefined> {
  for (let i = runs.length - 1; i >= 0; i--) {
    const { runId, parentRunId } = runs[i]!;
    if (parentRunId || read.has(runId)) continue;
    read.add(runId);
    const events = await store.read(runId);
    // A run of another user (stored before every run naming a session was checked) is not part
    // of its owner's conversation.
    if (userOf(events) !== owner) continue;
    const state = replay(events);
    const messages = conversationOf(state);
    if (!messages?.length) continue;
    rememberView(messages, state.compaction);
    return { messages, ...(state.state !== undefined && { state: state.state }) };
  }
  return undefined;
}

/**
 * The listing a session's next run starts from: its first top-level run (which names its
 * owner) and its last two (the latest, besides a run that is this one).
 */
export function sessionEnds(sessionId: string): RunFilter {
  return { sessionId, topLevel: true, first: 1, last: 2 };
}

/** The `userId` a stored run was started with. */
function userOf(events: readonly RunEvent[]): string | undefined {
  const first = events[0];
  return first?.type === "run_started" ? first.userId : undefined;
}

/**
 * What a stored run adds to its session's conversation: its transcript, except what a guardrail
 * of its agent refused — nothing when its input tripped, all but the withheld answer (the last
 * model turn) when its output did.
 */
function conversationOf(state: RunState): Message[] | undefined {
  if (state.status !== "failed" || state.error?.kind !== "guardrail_tripped") return state.messages;
  const tripped = state.guardrails?.findLast(
    (g) => g.tripped && (g.stage === "input" || g.stage === "output"),
  );
  if (tripped?.stage === "input") return undefined;
  if (tripped?.stage !== "output") return state.messages;
  const answer = state.messages.findLastIndex((m) => m.role === "assistant");
  return answer < 0 ? state.messages : state.messages.slice(0, answer);
}

/**
 * The sub-agent runs of calls the restart interrupted for good (an agent tool that is not
 * idempotent: its call gets an `interrupted` result and is not run again) are closed with it:
 * left `running`, a resume of one would act for a parent that had moved on.
 */
async function closeInterruptedChildren(run: ActiveRun, open: OpenTurn, setup: AgentSetup): Promise<void> {
  const store = run.events.store;
  if (!store) return;
  for (const call of open.calls) {
    if (!open.started.has(call.id) || open.completed.has(call.id)) continue;
    if (setup.toolset.get(call.name)?.idempotent) continue;
    const childId = `${run.runId}.${call.id}`;
    if ((await store.getRun(childId))?.status !== "running") continue;
    await closeStoredRun(
      store,
      childId,
      "its parent's call was interrupted by a restart and is not run again",
    ).catch(() => {});
  }
}
