import { randomUUID } from "node:crypto";
import type { RunContext } from "../../contract/run-context.js";
import type { Message, ToolCall, Usage } from "../../model/types.js";
import type { Agent, ChildRunRequest } from "../config/agent.js";
import { DEFAULT_MAX_TURNS, type RunOptions } from "../config/run-options.js";
import { Approvals } from "./approval-channel.js";
import { CallIds } from "./call-ids.js";
import type { EventQueue } from "./event-queue.js";
import type { EventSink } from "./event-sink.js";
import { Mailbox } from "./mailbox.js";
import { addUsage, emptyUsage, type ToolCallRecord } from "./result.js";
import { RunControl } from "./run-control.js";
import { RunEvents } from "./run-events.js";
import { RunLimits } from "./run-limits.js";
import type { RunTracer } from "./run-tracer.js";
import { SharedState } from "./shared-state.js";

/** Who a run acts for when nobody said: `ctx.userId` is always set. */
export const ANONYMOUS_USER_ID = "anonymous";

/** A child run's link to the call that started it. */
export type ParentLink = { run: ActiveRun; callId: string };

/** Runs an agent as a child run of `parent` for one of its calls (agents as tools); the output is the tool's result. */
export type ChildRunner = (parent: ActiveRun, request: ChildRunRequest, ctx: RunContext) => Promise<string>;

/**
 * What a run is given by whoever starts it (the runner): where its events go, how it is traced,
 * and how its calls start child runs. Passed in, so the run's state knows none of the layers
 * above it (the store's writer, the tracing, the loop).
 */
export type RunWiring = {
  queue: EventQueue;
  /** With a store: the writer that stores events before the reader sees them. */
  sink?: EventSink | undefined;
  /** Opens the run's tracing once its state exists (`undefined`: not traced). */
  trace?: (run: ActiveRun) => RunTracer | undefined;
  childRuns?: ChildRunner | undefined;
};

/**
 * The state of one run while it executes: who it is (id, agent, session, parent), the
 * conversation (transcript, records, usage, turn), and one part per job — its events, its
 * limits, how it is stopped, its mailbox, its call ids and its approval channel. Everything here
 * is either append-only (transcript, records) or derived from the events it emits, so
 * `replay()` can rebuild it from the log.
 */
export class ActiveRun {
  readonly runId: string;
  readonly options: RunOptions<any>;
  /**
   * What the loop and every call read from `options`, copied once: code that read the
   * caller's options object per turn or per call depended on its hidden class, which a full
   * GC drops once no such object is left (see shapes.ts).
   */
  readonly sessionId: string | undefined;
  readonly userId: string | undefined;
  /**
   * The session and user as tools see them (`ctx.sessionId`, `ctx.userId`): always set. A run
   * with no session has its own, derived from its id so a resume sees the same; a child run
   * shares its parent's. No user reads as `"anonymous"`.
   */
  readonly contextSessionId: string;
  readonly contextUserId: string;
  readonly deps: unknown;
  readonly path: string[];
  readonly parent: ParentLink | undefined;
  readonly transcript: Message[] = [];
  readonly records: ToolCallRecord[] = [];
  readonly usage = emptyUsage();
  #agent: Agent<any, any>;
  turn = 0;
  /** The last text the model said: the output of most stops. */
  lastText = "";
  /** Set (to a description of the source) once untrusted output entered the run. */
  tainted: string | undefined;
  /**
   * Calls whose result carries untrusted text although their tool is not marked so: an agent
   * tool whose run read some (its answer may repeat it), so the transcript keeps the taint.
   */
  untrustedCalls: Set<string> | undefined = undefined;
  readonly events: RunEvents;
  readonly limits: RunLimits;
  readonly control = new RunControl();
  readonly mailbox: Mailbox;
  readonly callIds = new CallIds();
  /** The out-of-band approval channel (`handle.approvals`), shared by child runs. */
  readonly approvals: Approvals;
  /** This run's spans; `undefined` when it is not traced. */
  readonly tracing: RunTracer | undefined;
  /** How this run's calls start child runs (agents as tools); shared with its child runs. */
  readonly childRuns: ChildRunner | undefined;
  /** The shared state (`ctx.state`): the root run's, shared by its child runs. */
  readonly state: SharedState;

  /** The run at the top of this one's tree: itself, unless it is a child run. */
  get root(): ActiveRun {
    let run: ActiveRun = this;
    while (run.parent) run = run.parent.run;
    return run;
  }
  /** Guardrail outcomes so far (restored from the log on resume), so no check runs twice. */
  readonly guardrailOutcomes = new Map<string, { tripped: boolean; reason?: string; info?: unknown }>();

  constructor(agent: Agent<any, any>, options: RunOptions<any>, wiring: RunWiring, parent?: ParentLink) {
    this.runId = options.runId ?? `run_${randomUUID()}`;
    this.#agent = agent;
    this.options = options;
    this.sessionId = options.sessionId;
    this.userId = options.userId;
    this.contextSessionId = options.sessionId ?? parent?.run.contextSessionId ?? `session_${this.runId}`;
    this.contextUserId = options.userId ?? parent?.run.contextUserId ?? ANONYMOUS_USER_ID;
    this.mailbox = new Mailbox(parent?.run.mailbox);
    this.deps = options.deps;
    this.parent = parent;
    this.state = parent ? parent.run.state : new SharedState(options.state);
    this.path = parent ? [...parent.run.path, agent.name] : [agent.name];
    this.events = new RunEvents(
      this.runId,
      agent.name,
      wiring.queue,
      wiring.sink,
      parent && { path: this.path, parentRunId: parent.run.runId, parentCallId: parent.callId },
    );
    this.limits = new RunLimits(
      this.runId,
      options.maxTurns ?? DEFAULT_MAX_TURNS,
      options.budget,
      this.usage,
      parent?.run.limits,
    );
    this.approvals = parent ? parent.run.approvals : new Approvals();
    this.childRuns = wiring.childRuns;
    if (parent) this.control.hasChannel = parent.run.control.hasChannel;
    if (options.signal) {
      const outer = options.signal;
      if (outer.aborted) this.control.abort(outer.reason);
      else {
        // Removed when the run ends: a caller's signal may outlive thousands of runs (a server's
        // shutdown signal, one MCP connection's), and each listener would keep its run alive.
        const onAbort = () => this.control.abort(outer.reason);
        outer.addEventListener("abort", onAbort, { once: true });
        this.control.onClose(() => outer.removeEventListener("abort", onAbort));
      }
    }
    const ms = options.budget?.limits.maxDurationMs;
    if (ms !== undefined) {
      this.limits.startDeadline(this.runId, ms, (error) => this.control.abort(error));
      this.control.onClose(() => this.limits.clearDeadline());
    }
    this.tracing = wiring.trace?.(this);
    this.events.tracer = this.tracing;
  }

  /** The agent speaking now. */
  get agent(): Agent<any, any> {
    return this.#agent;
  }

  /** A handoff (or a resumed run) makes another agent the speaker; its events carry its name. */
  switchAgent(agent: Agent<any, any>): void {
    this.#agent = agent;
    this.events.agent = agent.name;
  }

  /**
   * Adds the tokens `model` spent here and to every ancestor (a child's tokens count toward
   * their budgets too).
   */
  addUsage(delta: Partial<Usage>, model: string): void {
    addUsage(this.usage, delta);
    this.events.emit({
      type: "usage",
      usage: delta,
      total: { ...this.usage },
      model,
      runId: "",
      seq: 0,
      at: 0,
      agent: "",
    });
    for (let up = this.parent?.run; up; up = up.parent?.run) {
      addUsage(up.usage, delta);
      up.events.emit({
        type: "usage",
        usage: delta,
        total: { ...up.usage },
        model,
        source: this.runId,
        runId: "",
        seq: 0,
        at: 0,
        agent: "",
      });
    }
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
      sessionId: this.contextSessionId,
      userId: this.contextUserId,
      deps: this.deps,
      agent: this.agent.name,
      transcript: this.transcript,
      usage: this.usage,
      mailbox: this.mailbox.view(),
      state: this.state.value,
      setState: (next) => this.setState(next),
    };
  }

  /**
   * Replaces the shared state (`ctx.setState`) and emits `state_updated` on the root run, whose
   * log then holds every change (a child run's call ids mean nothing there, so `call` is named
   * only when the root run's own tool changed it).
   */
  setState(next: unknown, call?: ToolCall): void {
    const state = this.state.set(next);
    const root = this.root;
    root.events.emit(
      root === this && call ? { type: "state_updated", state, call } : { type: "state_updated", state },
    );
  }
}
