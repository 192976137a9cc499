import type { HumanChannel, HumanQuestion } from "../builtin-tools/ask-human.js";
import {
  type Agent,
  type RunContext,
  type RunEvent,
  type RunHandle,
  type RunInput,
  Runner,
  Tool,
  type ToolCall,
  type ToolHost,
  UserError,
} from "../index.js";
import { undecidedIn } from "../run/durability/replay.js";
import { ownerIsGone } from "../store/lease-owner.js";
import { LeaseConflict, type RunStore } from "../store/types.js";
import { askingAgent } from "./asking-agent.js";
import { HttpError, notFound } from "./http.js";
import { callKey, RunLog } from "./run-log.js";
import { SessionOwners } from "./session-owners.js";

export type RunRegistryOptions = {
  agents: Map<string, Agent<any, any>>;
  store?: RunStore;
  human?: HumanChannel;
  /** Finished runs kept in memory for replay; older ones are evicted (from the store they reload). */
  retainFinishedRuns: number;
  /** The most memory (bytes, estimated) finished runs kept for replay may hold together. */
  retainFinishedBytes: number;
  /** The most runs one named user may have running here at once; a start beyond it is a 429. */
  maxRunningRunsPerUser: number;
  /** Passed to every run (dependencies, budgets, limits). */
  runOptions?: (ctx: {
    userId: string | undefined;
    sessionId: string | undefined;
  }) => Record<string, unknown>;
};

/**
 * Every run the server knows: started here, resumed here, or loaded from the store on request.
 * Each run's handle is drained at once into its `RunLog` (the run never waits for a client), and
 * decisions, answers, messages and cancels reach the run through here.
 */
export class RunRegistry {
  readonly store: RunStore | undefined;
  /** Who each session belongs to: a caller may use only their own. */
  readonly sessions: SessionOwners;
  readonly #agents = new Map<string, Agent<any, any>>();
  readonly #names = new Map<string, string>();
  readonly #options: RunRegistryOptions;
  readonly #logs = new Map<string, RunLog>();
  /** Child run id → its root run's log. */
  readonly #roots = new Map<string, RunLog>();
  /** Questions that arrived before their call's `tool_call_started` was seen, by run id. */
  readonly #unmatched = new Map<string, HumanQuestion[]>();
  readonly #loading = new Map<string, Promise<RunLog | undefined>>();
  readonly #human: HumanChannel | undefined;
  /** The drains of the runs driven here, each settled once its run has ended and stored that. */
  readonly #driving = new Set<Promise<void>>();
  #closing = false;

  constructor(options: RunRegistryOptions) {
    this.#options = options;
    this.store = options.store;
    this.#human = options.human;
    this.sessions = new SessionOwners(options.store, {
      userOfRun: (runId) => this.#logs.get(runId),
      userOfSession: (sessionId) => {
        for (const log of this.#logs.values()) if (log.sessionId === sessionId) return log;
        return undefined;
      },
    });
    for (const [key, agent] of options.agents) {
      this.#agents.set(
        key,
        askingAgent(agent, (call, ctx) => this.#onAsk(call, ctx)),
      );
      this.#names.set(agent.name, key);
    }
    if (options.human) void this.#listen(options.human);
  }

  get agentKeys(): string[] {
    return [...this.#agents.keys()];
  }

  /** The root runs held in memory (started here, or loaded from the store), for listing chats. */
  held(): IterableIterator<RunLog> {
    return this.#logs.values();
  }

  /**
   * Starts a run and begins draining it. `extraTools` are offered to the agent for this run only
   * (an AG-UI client's own tools) and always wait for a person's decision, whatever the agent's
   * approval handler says; they apply again when the run resumes.
   */
  start(
    agentKey: string,
    input: RunInput,
    context: { userId: string | undefined; sessionId: string | undefined },
    extraTools?: readonly Tool<any, any>[],
    given?: { state?: unknown },
  ): RunLog {
    this.#refuseWhenClosing();
    const known = this.#agents.get(agentKey);
    if (!known) throw new HttpError(400, "unknown_agent", `no agent named ${JSON.stringify(agentKey)}`);
    this.#refuseOverRunningCap(context.userId);
    const added = this.toolsBesides(agentKey, extraTools ?? []);
    const agent = this.#withTools(agentKey, added) ?? known;
    const extra = this.#options.runOptions?.(context) ?? {};
    const handle = Runner.stream(agent, input, {
      ...extra,
      ...(context.userId !== undefined && { userId: context.userId }),
      ...(context.sessionId !== undefined && { sessionId: context.sessionId }),
      ...(given?.state !== undefined && { state: given.state }),
      ...(this.store && { store: this.store }),
    });
    const log = new RunLog(handle.runId, agentKey, context.userId, context.sessionId);
    if (added.length) log.extraTools = added;
    if (typeof extra.storeWaitMs === "number") log.storeWaitMs = extra.storeWaitMs;
    this.#logs.set(log.runId, log);
    this.#drive(log, handle);
    this.#evict();
    return log;
  }

  /**
   * One named user's runs driven here at once are capped (`maxRunningRunsPerUser`), so that one
   * user cannot take the memory and the model budget every other user shares. Runs without a
   * user (no per-user `auth`: one caller for everybody) are not counted.
   */
  #refuseOverRunningCap(userId: string | undefined): void {
    if (userId === undefined) return;
    const cap = this.#options.maxRunningRunsPerUser;
    let running = 0;
    for (const log of this.#logs.values()) if (log.userId === userId && log.status === "running") running++;
    if (running >= cap)
      throw new HttpError(
        429,
        "too_many_runs",
        `you have ${running} runs running, the most this server runs for one user at once; wait for one to end, or cancel one, then try again`,
      );
  }

  /** `tools` minus the names the agent has tools of: the agent's own tool wins over a client's. */
  toolsBesides(agentKey: string, tools: readonly Tool<any, any>[]): Tool<any, any>[] {
    const own = toolsOf(this.#options.agents.get(agentKey));
    const taken = new Set(own.flatMap((t) => (t instanceof Tool ? [t.name] : [])));
    return tools.filter((t) => !taken.has(t.name));
  }

  /** The served agent with `tools` added (asked about every call), or undefined without any. */
  #withTools(agentKey: string, tools: readonly Tool<any, any>[] | undefined): Agent<any, any> | undefined {
    if (!tools?.length) return undefined;
    const original = this.#options.agents.get(agentKey)!;
    const combined = [...toolsOf(original), ...tools];
    const asked = new Set(tools.map((t) => t.name));
    return askingAgent(original.clone({ tools: combined }), (call, ctx) => this.#onAsk(call, ctx), asked);
  }

  /**
   * The run's log if `userId` may see it, else `undefined` (so another user's run and an
   * unknown run look the same: 404). Loads a run this process has not seen from the store.
   */
  async get(runId: string, userId: string | undefined): Promise<RunLog | undefined> {
    // A child run (an agent used as a tool) is reached through its root run, never by its own id.
    const log = this.#logs.get(runId) ?? (this.#roots.has(runId) ? undefined : await this.#load(runId));
    if (!log || log.userId !== userId) return undefined;
    // Only its owner's asking picks up a run nobody drives: anyone else who knows its id gets
    // the same 404 as for an unknown one, and sets nothing going.
    if (this.#unchecked.delete(log) && log.status === "detached" && (await this.#abandoned(runId)))
      this.#resume(log);
    return log;
  }

  /** Runs loaded from the store as `detached` whose pickup waits for their owner's first request. */
  readonly #unchecked = new WeakSet<RunLog>();

  /** Like `get`, but a 404 `HttpError` when the run is not there for this user. */
  async require(runId: string, userId: string | undefined): Promise<RunLog> {
    const log = await this.get(runId, userId);
    if (!log) throw notFound(`no run ${runId}`);
    return log;
  }

  /** The most recent root run of a session this user can see, from memory or the store. */
  async latestOfSession(sessionId: string, userId: string | undefined): Promise<RunLog | undefined> {
    let latest: RunLog | undefined;
    for (const log of this.#logs.values())
      if (log.sessionId === sessionId && log.userId === userId) latest = log;
    if (latest || !this.store) return latest;
    const runs = (await this.store.listRuns({ sessionId, topLevel: true, last: 1 })).filter(
      (r) => r.parentRunId === undefined,
    );
    const last = runs.at(-1);
    return last ? this.get(last.runId, userId) : undefined;
  }

  /**
   * Decides a call waiting for approval. `callId` is the call's id, or `childRunId/callId` for
   * a call of a child run. A stored, parked run resumes once every call it waits on is decided.
   */
  async decide(log: RunLog, callId: string, approved: boolean, reason?: string): Promise<void> {
    const parking = [...log.asking.values()].some((entry) => entry.runId === log.runId);
    if (log.status === "running" && this.store && parking) {
      // Asked a moment ago: the run is about to park (its decision is then stored). A child
      // run's call never parks: it waits in memory, answered through the root handle.
      const until = Date.now() + 5_000;
      while (log.status === "running" && Date.now() < until) await log.changed(until - Date.now());
    }
    if (log.status === "parked") {
      // Deciding the last call resumes the run, which a server on its way down could not drive.
      this.#refuseWhenClosing();
      const i = log.parked.findIndex((p) => matches(p, callId));
      if (i < 0) throw notWaiting(log, callId);
      const target = log.parked[i]!;
      try {
        await Runner.decide(this.store!, target.runId, target.call.id, {
          approved,
          ...(reason !== undefined && { reason }),
        });
      } catch (error) {
        if (error instanceof UserError) throw notWaiting(log, callId);
        if (error instanceof LeaseConflict)
          throw new HttpError(
            409,
            "busy",
            `run ${log.runId} is still held by a process that stopped while parking it; try again once its lease expires (${error.message})`,
          );
        throw error;
      }
      log.parked.splice(i, 1);
      await this.#catchUp(log);
      if (log.parked.length === 0) await this.#resume(log);
      return;
    }
    const entry = [...log.asking.values()].find((p) => matches(p, callId));
    const handle = log.handle;
    if (log.status !== "running" || !entry || !handle) throw notWaiting(log, callId);
    const ok = approved
      ? handle.approvals.approve(entry.call.id)
      : handle.approvals.reject(entry.call.id, reason);
    if (!ok) throw notWaiting(log, callId);
    // Decided now, though its approval_resolved event is still on its way: a response that
    // starts meanwhile must not end at once as if the run still waited for this call.
    log.asking.delete(callKey(entry.runId, entry.call.id));
    log.touch();
  }

  /** Answers the open `ask_human` question of call `callId`. */
  answer(log: RunLog, callId: string, text: string): void {
    const open = [...log.questions.values()].find((q) => matches(q, callId));
    if (!open || !this.#human?.answer(open.question.id, text))
      throw new HttpError(409, "not_waiting", `run ${log.runId} has no question waiting on call ${callId}`);
    log.questions.delete(callKey(open.runId, open.call.id));
    log.touch();
  }

  /** Steers a running run with a user message. */
  inject(log: RunLog, message: string): void {
    if (log.status === "parked")
      throw new HttpError(
        409,
        "not_running",
        `run ${log.runId} is waiting for a decision: approve or deny its calls (or cancel it) before sending it a message`,
      );
    if (log.status !== "running" || !log.handle)
      throw new HttpError(409, "not_running", `run ${log.runId} is ${log.status}; start a new run instead`);
    try {
      log.handle.inject(message);
    } catch (error) {
      throw new HttpError(409, "not_running", (error as Error).message);
    }
  }

  /** Stops a run: a running one is cancelled, a parked one resumes only to stop as cancelled. */
  async cancel(log: RunLog, reason = "cancelled by the user"): Promise<void> {
    if (log.status === "running" && log.handle) {
      log.handle.cancel(reason);
      return;
    }
    if (log.status === "parked") {
      this.#refuseWhenClosing();
      const stop = new AbortController();
      stop.abort(new Error(reason));
      await this.#resume(log, stop.signal);
      return;
    }
    if (log.finished) return;
    throw new HttpError(409, "not_running", `run ${log.runId} is not driven by this server`);
  }

  /** Appends what was stored without passing through a handle here (a decision from `Runner.decide`). */
  async #catchUp(log: RunLog): Promise<void> {
    const missed = await this.store!.read(log.runId, log.lastSeq);
    for (const event of missed) if (event.seq > log.lastSeq) this.#track(log, event);
  }

  /** Resumes a parked run under the same id; its events continue in the same log. */
  async #resume(log: RunLog, signal?: AbortSignal): Promise<void> {
    const agent = this.#withTools(log.agentKey, log.extraTools) ?? this.#agents.get(log.agentKey)!;
    const extra = this.#options.runOptions?.({ userId: log.userId, sessionId: log.sessionId }) ?? {};
    const handle = Runner.resume(agent, log.runId, {
      ...extra,
      store: this.store!,
      ...(signal && { signal }),
    });
    log.status = "running";
    log.parked = [];
    log.asking.clear();
    this.#drive(log, handle);
    log.touch();
  }

  #drive(log: RunLog, handle: RunHandle<any>): void {
    log.handle = handle;
    const done: Promise<void> = (async () => {
      try {
        for await (const event of handle) this.#track(log, event);
      } catch {
        // The failure is in the log as run_failed; result() below says how it ended.
      }
      try {
        const result = await handle.result();
        log.status = result.stopReason === "awaiting_approval" ? "parked" : "completed";
        log.messages = result.messages;
      } catch (error) {
        log.status = "failed";
        log.failure = error;
      }
      if (log.status !== "parked") log.parked = [];
      log.asking.clear();
      log.running.clear();
      log.handle = undefined;
      log.touch();
      this.#evict();
    })().finally(() => this.#driving.delete(done));
    this.#driving.add(done);
  }

  #track(log: RunLog, event: RunEvent): void {
    switch (event.type) {
      case "run_started":
        if (event.runId !== log.runId) {
          this.#roots.set(event.runId, log);
          if (event.parentRunId !== undefined && event.parentCallId !== undefined)
            log.parentCalls.set(event.runId, callKey(event.parentRunId, event.parentCallId));
        }
        break;
      case "tool_call_started": {
        log.running.set(callKey(event.runId, event.call.id), { call: event.call, runId: event.runId });
        const waiting = this.#unmatched.get(event.runId);
        if (waiting) for (const q of [...waiting]) this.#match(q);
        break;
      }
      case "tool_call_completed": {
        const key = callKey(event.runId, event.call.id);
        log.running.delete(key);
        log.questions.delete(key);
        log.asking.delete(key);
        break;
      }
      case "approval_resolved": {
        log.asking.delete(callKey(event.runId, event.call.id));
        // Decided while parked (read back from the store): no longer waited on.
        const id = event.call.id;
        if (log.parked.length)
          log.parked = log.parked.filter((p) => p.runId !== event.runId || p.call.id !== id);
        break;
      }
      case "run_resumed":
        // A park before this resume is over (read back from the store, a run may have parked twice).
        if (event.runId === log.runId) log.parked = [];
        break;
      case "run_parked": {
        // The calls a decision is asked for now: those asked and not yet decided. A call after
        // one that parks is asked only when the run goes on (its preflight stopped there), so
        // the run resumes once these are decided, and asks the next.
        const open = new Set(undecidedIn(log.all));
        for (const call of event.pending)
          if (open.has(call.id)) log.parked.push({ call, runId: event.runId });
        break;
      }
    }
    log.append(event);
  }

  #onAsk(call: ToolCall, ctx: RunContext<any>): void {
    const log = this.#logs.get(ctx.runId) ?? this.#roots.get(ctx.runId);
    if (!log) return;
    log.asking.set(callKey(ctx.runId, call.id), { call, runId: ctx.runId });
    log.touch();
  }

  async #listen(channel: HumanChannel): Promise<void> {
    try {
      for await (const question of channel.questions()) this.#match(question);
    } catch {
      // Another consumer owns the channel: answers can still go through `channel.answer`.
    }
  }

  /** Ties a question to the call that asked it: by `callId` when the channel gives one, else by its text. */
  #match(question: HumanQuestion): void {
    const log = this.#logs.get(question.runId) ?? this.#roots.get(question.runId);
    const unmatched = this.#unmatched.get(question.runId) ?? [];
    const forget = () => {
      const i = unmatched.indexOf(question);
      if (i >= 0) unmatched.splice(i, 1);
      if (unmatched.length === 0) this.#unmatched.delete(question.runId);
    };
    if (!log) {
      forget();
      return;
    }
    const declared = (question as { callId?: string }).callId;
    let found: { call: ToolCall; runId: string } | undefined;
    for (const entry of log.running.values()) {
      if (entry.runId !== question.runId) continue;
      const args = entry.call.args as { question?: unknown } | undefined;
      if (declared !== undefined ? entry.call.id === declared : args?.question === question.question)
        found = entry;
    }
    if (!found) {
      if (!unmatched.includes(question)) unmatched.push(question);
      this.#unmatched.set(question.runId, unmatched);
      return;
    }
    forget();
    log.questions.set(callKey(found.runId, found.call.id), { question, ...found });
    log.touch();
  }

  async #load(runId: string): Promise<RunLog | undefined> {
    if (!this.store) return undefined;
    const pending = this.#loading.get(runId);
    if (pending) return pending;
    const loading = this.#loadFromStore(runId).finally(() => this.#loading.delete(runId));
    this.#loading.set(runId, loading);
    return loading;
  }

  async #loadFromStore(runId: string): Promise<RunLog | undefined> {
    const events = await this.store!.read(runId);
    const first = events[0];
    if (first?.type !== "run_started") return undefined;
    // A child run is reached through its root, whose log holds its events too.
    if (first.parentRunId !== undefined) return undefined;
    const agentKey = this.#names.get(first.agent) ?? this.agentKeys[0]!;
    const log = new RunLog(runId, agentKey, first.userId, first.sessionId);
    for (const event of events) this.#track(log, event);
    // Decisions stored while it was parked (and a plugin's teardown warning) do not end the park.
    const last =
      events.findLast((e) => e.type !== "approval_resolved" && e.type !== "warning") ?? events.at(-1)!;
    if (last.type === "run_failed") log.status = "failed";
    else if (last.type === "run_completed")
      log.status = last.stopReason === "awaiting_approval" ? "parked" : "completed";
    else if (last.type === "run_parked") log.status = "parked";
    else log.status = "detached";
    if (log.status !== "parked") log.parked = [];
    log.running.clear();
    log.asking.clear();
    const raced = this.#logs.get(runId);
    if (raced) return raced;
    this.#logs.set(runId, log);
    if (log.status === "detached") this.#unchecked.add(log);
    this.#evict();
    return log;
  }

  /**
   * A running run nobody drives any more — its server was killed, or its process died — is
   * picked up here (as `Runner.recover` would), so its client's stream goes on to its end; one a
   * live process holds stays `detached`.
   */
  async #abandoned(runId: string): Promise<boolean> {
    if (this.#closing) return false;
    const summary = await this.store!.getRun(runId);
    if (summary?.status !== "running") return false;
    const owner = summary.leaseOwner;
    return owner === undefined || (summary.leaseExpiresAt ?? 0) <= Date.now() || ownerIsGone(owner);
  }

  /**
   * Keeps at most `retainFinishedRuns` finished runs in memory, holding at most
   * `retainFinishedBytes` together, dropping the least recently used first: a run's attachments
   * stay in its log, so a count alone would let a few users' files fill the process. Without a
   * store the most recent one stays whatever its size (its client may still reconnect to it).
   */
  #evict(): void {
    const { retainFinishedRuns: maxRuns, retainFinishedBytes: maxBytes } = this.#options;
    const finished = [...this.#logs.values()].filter((l) => l.finished || l.status === "detached");
    let count = finished.length;
    let bytes = 0;
    for (const log of finished) bytes += log.bytes;
    if (count <= maxRuns && bytes <= maxBytes) return;
    finished.sort((a, b) => a.touchedAt - b.touchedAt);
    // Without a store nothing else holds the newest one: it stays whatever its size.
    const keepOne = this.store ? 0 : 1;
    for (const log of finished) {
      if (count <= maxRuns && (bytes <= maxBytes || count === keepOne)) break;
      this.#logs.delete(log.runId);
      for (const [child, root] of this.#roots) if (root === log) this.#roots.delete(child);
      count--;
      bytes -= log.bytes;
    }
  }

  /**
   * Shuts down: refuses new runs, cancels every run driven here and resolves once each has ended
   * (its last events in the log, and in the store with one), or after `timeoutMs`. Then every
   * stream ends once it has sent what the log holds: a client following a parked run gets its
   * events so far and a closed stream, not a dropped connection.
   */
  async closeAll(reason: string, timeoutMs: number): Promise<void> {
    this.#closing = true;
    for (const log of this.#logs.values()) log.handle?.cancel(reason);
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<void>((resolve) => {
      if (Number.isFinite(timeoutMs)) timer = setTimeout(resolve, timeoutMs);
    });
    // A run resumed while this waits (it cannot be: `#refuseWhenClosing`) would be awaited too.
    const settled = (async () => {
      while (this.#driving.size > 0) await Promise.allSettled([...this.#driving]);
    })();
    await Promise.race([settled, expired]);
    clearTimeout(timer);
    for (const log of this.#logs.values()) {
      log.released = true;
      log.touch();
    }
  }

  /** True once `closeAll` began. */
  get closing(): boolean {
    return this.#closing;
  }

  #refuseWhenClosing(): void {
    if (this.#closing)
      throw new HttpError(503, "shutting_down", "the server is shutting down; try again shortly");
  }
}

function toolsOf(agent: Agent<any, any> | undefined): Array<Tool<any, any> | ToolHost> {
  const given = agent?.config.tools;
  return given === undefined ? [] : Array.isArray(given) ? [...given] : [given];
}

function matches(entry: { call: ToolCall; runId: string }, callId: string): boolean {
  return entry.call.id === callId || callKey(entry.runId, entry.call.id) === callId;
}

function notWaiting(log: RunLog, callId: string): HttpError {
  return new HttpError(409, "not_waiting", `run ${log.runId} has no call ${callId} waiting for approval`);
}
