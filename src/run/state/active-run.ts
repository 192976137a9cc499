import { randomUUID } from "node:crypto";
import { Stopper } from "../../abort.js";
import type { EventBase, EventBody, RunEvent } from "../../contract/events.js";
import type { RunContext } from "../../contract/run-context.js";
import type { TracerLike } from "../../contract/tracer.js";
import { BudgetExceeded } from "../../errors.js";
import type { Message, Usage } from "../../model/types.js";
import type { RunStore } from "../../store/types.js";
import type { Agent } from "../config/agent.js";
import { type Budget, BudgetTracker } from "../config/budget.js";
import { EventWriter } from "../durability/event-writer.js";
import { runEnded } from "../engine/call-scope.js";
import { openTracing, type RunTracing } from "../tracing/run-tracing.js";
import { Approvals } from "./approval-channel.js";
import type { EventQueue } from "./event-queue.js";
import { addUsage, emptyUsage, type ToolCallRecord } from "./result.js";

/** What `Runner.run()` and `Runner.stream()` accept besides the agent and input. */
export interface RunOptions<Deps = unknown> {
  /** Your dependencies (database handles, clients), reachable as `ctx.deps` in every tool. */
  deps?: Deps;
  sessionId?: string;
  userId?: string;
  /** Model turns across every agent of the run. Default 50. */
  maxTurns?: number;
  /** Further limits; exceeding them stops the run with `stopReason: "budget"`. */
  budget?: Budget;
  /** Aborting it cancels the run (`stopReason: "cancelled"`). */
  signal?: AbortSignal;
  /** Use this id instead of a fresh one. */
  runId?: string;
  /**
   * Persist the run: every event is appended here before anyone sees it, so the run can be
   * resumed after a crash (`Runner.resume`), approvals can wait across restarts, and a
   * `sessionId` continues its conversation.
   */
  store?: RunStore;
  /** How long this process's claim on the run lasts without renewal. Default 30,000. */
  leaseTtlMs?: number;
  /**
   * An OpenTelemetry `Tracer` (needs `@opentelemetry/api`): the run emits GenAI spans
   * (`invoke_agent`, `chat`, `execute_tool`). Default: the one `instrument()` from
   * "quiver-agents/otel" set, if any; `false` turns tracing off for this run.
   */
  tracer?: TracerLike | false;
  /** Record prompts, answers, tool arguments and results on spans. Default false (they may hold personal data). */
  captureContent?: boolean;
}

export const DEFAULT_MAX_TURNS = 50;

/** A child run's link to the call that started it. */
export type ParentLink = { run: ActiveRun; callId: string };

/**
 * The state of one run while it executes. Everything here is either append-only (transcript,
 * records) or derived from the events it emits, so `replay()` can rebuild it from the log.
 */
export class ActiveRun {
  readonly runId: string;
  readonly options: RunOptions<any>;
  /**
   * What the loop and every call read from `options`, copied once: code that read the
   * caller's options object per turn or per call depended on its hidden class, which a full
   * GC drops once no such object is left (see shapes.ts).
   */
  readonly maxTurns: number;
  readonly sessionId: string | undefined;
  readonly userId: string | undefined;
  readonly deps: unknown;
  /**
   * The run's stop: `abort(reason)` stops it, waits race it with one Set entry each, and its
   * `signal` (an AbortController) is made only when something reads it — a run nobody cancels
   * and no tool or model asks the signal of never pays for one.
   */
  readonly stopper = new Stopper();
  readonly transcript: Message[] = [];
  readonly records: ToolCallRecord[] = [];
  readonly usage = emptyUsage();
  readonly path: string[];
  readonly parent: ParentLink | undefined;
  /** This run's own budget first, then every ancestor's (shared with them). */
  readonly budgets: BudgetTracker[];
  /** The out-of-band approval channel (`handle.approvals`), shared by child runs. */
  readonly approvals: Approvals;
  agent: Agent<any, any>;
  turn = 0;
  /** The last text the model said: the output of most stops. */
  lastText = "";
  /** False under `Runner.run()`: nobody can answer an approval, so "ask" denies at once. */
  hasChannel = true;
  /** Set (to a description of the source) once untrusted output entered the run. */
  tainted: string | undefined;
  /** Messages `handle.inject()` queued for before the next model request. */
  readonly inbox: Message[] = [];
  /** Messages `handle.followUp()` queued for after the run would otherwise stop. */
  readonly followUps: Message[] = [];
  /** The budget that stopped the run (its own or an ancestor's), for agents-as-tools to report. */
  budgetStop: BudgetExceeded | undefined;
  /** True while a model turn streams (an interrupt only aborts that). */
  modelStreaming = false;
  #model: { stopper: Stopper; unlink: () => void } | undefined;
  #seq = 0;
  #callIds = new Set<string>();
  #callCounter = 0;
  #deadline: NodeJS.Timeout | undefined;
  readonly #closers: Array<() => void> = [];
  readonly #queue: EventQueue;
  /**
   * Stores events before the reader sees them; only a run with a store (and its child runs,
   * which share it) has one: without, events go straight to the reader.
   */
  readonly writer: EventWriter | undefined;
  /** This run's spans; `undefined` when it is not traced (then no event does any tracing work). */
  readonly tracing: RunTracing | undefined;

  constructor(agent: Agent<any, any>, options: RunOptions<any>, queue: EventQueue, parent?: ParentLink) {
    this.runId = options.runId ?? `run_${randomUUID()}`;
    this.agent = agent;
    this.options = options;
    this.maxTurns = options.maxTurns ?? DEFAULT_MAX_TURNS;
    this.sessionId = options.sessionId;
    this.userId = options.userId;
    this.deps = options.deps;
    this.#queue = queue;
    this.writer = parent
      ? parent.run.writer
      : options.store
        ? new EventWriter(queue, options.store, (error) => this.abort(error), options.leaseTtlMs)
        : undefined;
    this.parent = parent;
    this.path = parent ? [...parent.run.path, agent.name] : [agent.name];
    this.approvals = parent ? parent.run.approvals : new Approvals();
    if (parent) this.hasChannel = parent.run.hasChannel;
    const own = options.budget ? [new BudgetTracker(this.runId, options.budget, this.usage)] : [];
    this.budgets = [...own, ...(parent?.run.budgets ?? [])];
    if (options.signal) {
      const outer = options.signal;
      if (outer.aborted) this.abort(outer.reason);
      else outer.addEventListener("abort", () => this.abort(outer.reason), { once: true });
    }
    const ms = options.budget?.limits.maxDurationMs;
    if (ms !== undefined) {
      // The deadline aborts running calls' signals; the stop reason is "budget", not "cancelled".
      this.#deadline = setTimeout(
        () =>
          this.abort(
            new BudgetExceeded(this.runId, "maxDurationMs", `budget exceeded: maxDurationMs is ${ms} ms`),
          ),
        ms,
      );
      this.#deadline.unref?.();
    }
    this.tracing = openTracing(this);
  }

  /** The run's signal (made on first read: see `stopper`). */
  get signal(): AbortSignal {
    return this.stopper.signal;
  }

  /** Stops the run (cancel, a store failure, a deadline): as `AbortController.abort(reason)`. */
  abort(reason?: unknown): void {
    this.stopper.abort(reason);
  }

  /** This run and every run above it: a `BudgetExceeded` owned by any of them stops this run. */
  owns(error: BudgetExceeded): boolean {
    for (let run: ActiveRun | undefined = this; run; run = run.parent?.run)
      if (run.runId === error.runId) return true;
    return false;
  }

  /** Adds a turn's usage here and to every ancestor (a child's tokens count toward their budgets too). */
  addUsage(delta: Partial<Usage>): void {
    addUsage(this.usage, delta);
    this.emit({ type: "usage", usage: delta, total: { ...this.usage }, runId: "", seq: 0, at: 0, agent: "" });
    for (let up = this.parent?.run; up; up = up.parent?.run) {
      addUsage(up.usage, delta);
      up.emit({
        type: "usage",
        usage: delta,
        total: { ...up.usage },
        source: this.runId,
        runId: "",
        seq: 0,
        at: 0,
        agent: "",
      });
    }
  }

  /** Counts one requested call against every budget in force; returns the first one it passes. */
  countToolCall(): BudgetExceeded | undefined {
    for (const tracker of this.budgets) tracker.toolCalls++;
    return this.budgetExceeded();
  }

  /** The first budget (own or an ancestor's) this run is past. */
  budgetExceeded(): BudgetExceeded | undefined {
    for (const tracker of this.budgets) {
      const exceeded = tracker.exceeded();
      if (exceeded) return exceeded;
    }
    return undefined;
  }

  /**
   * Stamps the common base on an event and hands it to the reader. Every body is a fresh
   * literal at its call site, so it is stamped in place rather than copied. The events of
   * every turn and call carry placeholder base fields (`runId: "", seq: 0, at: 0, agent: ""`)
   * in their literal: stamping then overwrites fields the object has instead of growing it
   * by four, ~45 → ~12 ns per event (these stores see every event shape).
   */
  emit(body: EventBody & Partial<EventBase>): RunEvent {
    const event = body as RunEvent;
    event.runId = this.runId;
    event.seq = ++this.#seq;
    // An event that goes nowhere (`Runner.run()` with no store and no tracer, or a stream whose
    // reader stopped) is not timed: nobody can read its `at`, and reading the clock (~50 ns) is
    // the largest part of emitting one.
    event.at = this.writer || this.tracing || !this.#queue.dropping ? Date.now() : 0;
    event.agent = this.agent.name;
    if (this.parent) {
      event.path = this.path;
      event.parentRunId = this.parent.run.runId;
    }
    this.tracing?.observe(event);
    if (this.writer) this.writer.write(event);
    else this.#queue.push(event);
    return event;
  }

  /** The store of this run, if it is persisted. */
  get store(): RunStore | undefined {
    return this.writer?.store;
  }

  /** Resolves once every event emitted so far is stored; `undefined` (no await needed) without a store. */
  flushed(): Promise<void> | undefined {
    return this.writer?.flushed();
  }

  /** Continues a stored run: its seq and call ids go on from the log. */
  restore(lastSeq: number, callIds: Iterable<string>): void {
    this.#seq = lastSeq;
    for (const id of callIds) this.#callIds.add(id);
  }

  /** Resolves when the consumer has pulled past `event` (at once when nobody is reading). */
  whenPassed(event: RunEvent): Promise<void> {
    return this.#queue.whenPassed(event);
  }

  /** A child run (agent as tool) sharing this run's event stream and approval channel. */
  child(agent: Agent<any, any>, options: RunOptions<any>, callId: string): ActiveRun {
    return new ActiveRun(agent, options, this.#queue, { run: this, callId });
  }

  /**
   * The stop of model requests (their `signal`): the run's own, plus interrupts from
   * `inject(…, { interrupt })`. One stopper serves every turn until an interrupt uses it up —
   * none per turn — and `Runner.run()` runs, which cannot be interrupted, use the run's as it is.
   */
  modelStopper(): Stopper {
    if (!this.hasChannel) return this.stopper;
    if (!this.#model) {
      const stopper = new Stopper();
      const run = this.stopper;
      const onAbort = () => stopper.abort(run.reason);
      if (run.aborted) stopper.abort(run.reason);
      else run.watch(onAbort);
      this.#model = { stopper, unlink: () => run.unwatch(onAbort) };
      this.onClose(() => this.#model?.unlink());
    }
    return this.#model.stopper;
  }

  /** Aborts the model turn that is streaming, if one is (a steering message with `interrupt`). */
  interruptModel(reason: unknown): void {
    if (!this.modelStreaming || !this.#model) return;
    const { stopper, unlink } = this.#model;
    this.#model = undefined;
    unlink();
    stopper.abort(reason);
  }

  /** Runs `fn` when the run stops (host watches, timers). */
  onClose(fn: () => void): void {
    this.#closers.push(fn);
  }

  /** True once `close()` ran. */
  closed = false;

  /** Releases timers and watches; called once the run has stopped. */
  close(): void {
    this.closed = true;
    clearTimeout(this.#deadline);
    for (const fn of this.#closers.splice(0)) fn();
    runEnded();
  }

  /** The provider's id when it is new to this run, else a fresh one (the caller keeps the original as `providerCallId`). */
  claimCallId(providerId: string | undefined): string {
    if (providerId && !this.#callIds.has(providerId)) {
      this.#callIds.add(providerId);
      return providerId;
    }
    let id: string;
    do id = `call_q${++this.#callCounter}`;
    while (this.#callIds.has(id));
    this.#callIds.add(id);
    return id;
  }

  /** The parts of a `RunContext` that are the same for every call of this run. */
  baseContext(): Omit<
    RunContext<any>,
    "toolCallId" | "attempt" | "idempotencyKey" | "update" | "signal" | "turn"
  > {
    return {
      runId: this.runId,
      ...(this.parent && { parentRunId: this.parent.run.runId, parentCallId: this.parent.callId }),
      path: this.path,
      ...(this.sessionId !== undefined && { sessionId: this.sessionId }),
      ...(this.userId !== undefined && { userId: this.userId }),
      deps: this.deps,
      agent: this.agent.name,
      transcript: this.transcript,
      usage: this.usage,
    };
  }
}
