import { randomUUID } from "node:crypto";
import type { Message } from "../model/types.js";
import type { Agent } from "./agent.js";
import { Approvals } from "./approvals.js";
import type { RunContext } from "./context.js";
import type { EventQueue } from "./event-queue.js";
import type { EventBody, RunEvent } from "./events.js";
import { emptyUsage, type ToolCallRecord } from "./result.js";

/** What `Runner.run()` and `Runner.stream()` accept besides the agent and input. */
export interface RunOptions<Deps = unknown> {
  /** Your dependencies (database handles, clients), reachable as `ctx.deps` in every tool. */
  deps?: Deps;
  sessionId?: string;
  userId?: string;
  /** Model turns across every agent of the run. Default 50. */
  maxTurns?: number;
  /** Aborting it cancels the run (`stopReason: "cancelled"`). */
  signal?: AbortSignal;
  /** Use this id instead of a fresh one. */
  runId?: string;
}

export const DEFAULT_MAX_TURNS = 50;

/**
 * The state of one run while it executes. Everything here is either append-only (transcript,
 * records) or derived from the events it emits, so `replay()` can rebuild it from the log.
 */
export class ActiveRun {
  readonly runId: string;
  readonly options: RunOptions<any>;
  readonly controller = new AbortController();
  readonly transcript: Message[] = [];
  readonly records: ToolCallRecord[] = [];
  readonly usage = emptyUsage();
  readonly path: string[];
  agent: Agent<any, any>;
  turn = 0;
  /** The out-of-band approval channel (`handle.approvals`). */
  readonly approvals = new Approvals();
  /** False under `Runner.run()`: nobody can answer an approval, so "ask" denies at once. */
  hasChannel = true;
  /** Set (to a description of the source) once untrusted output entered the run. */
  tainted: string | undefined;
  #seq = 0;
  #callIds = new Set<string>();
  #callCounter = 0;
  readonly #queue: EventQueue;

  constructor(agent: Agent<any, any>, options: RunOptions<any>, queue: EventQueue) {
    this.runId = options.runId ?? `run_${randomUUID()}`;
    this.agent = agent;
    this.options = options;
    this.#queue = queue;
    this.path = [agent.name];
    if (options.signal) {
      const outer = options.signal;
      if (outer.aborted) this.controller.abort(outer.reason);
      else outer.addEventListener("abort", () => this.controller.abort(outer.reason), { once: true });
    }
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get maxTurns(): number {
    return this.options.maxTurns ?? DEFAULT_MAX_TURNS;
  }

  /** Stamps the common base on an event and hands it to the reader. */
  emit(body: EventBody): RunEvent {
    const event = {
      ...body,
      runId: this.runId,
      seq: ++this.#seq,
      at: Date.now(),
      agent: this.agent.name,
    } as RunEvent;
    this.#queue.push(event);
    return event;
  }

  /** Resolves when the consumer has pulled past `event` (at once when nobody is reading). */
  whenPassed(event: RunEvent): Promise<void> {
    return this.#queue.whenPassed(event);
  }

  /** The provider's id when it is new to this run, else a fresh one (the original kept as `providerCallId`). */
  claimCallId(providerId: string | undefined): { id: string; providerCallId?: string } {
    if (providerId && !this.#callIds.has(providerId)) {
      this.#callIds.add(providerId);
      return { id: providerId };
    }
    let id: string;
    do id = `call_q${++this.#callCounter}`;
    while (this.#callIds.has(id));
    this.#callIds.add(id);
    return providerId ? { id, providerCallId: providerId } : { id };
  }

  /** The parts of a `RunContext` that are the same for every call of this run. */
  baseContext(): Omit<
    RunContext<any>,
    "toolCallId" | "attempt" | "idempotencyKey" | "update" | "signal" | "turn"
  > {
    return {
      runId: this.runId,
      path: this.path,
      ...(this.options.sessionId !== undefined && { sessionId: this.options.sessionId }),
      ...(this.options.userId !== undefined && { userId: this.options.userId }),
      deps: this.options.deps,
      agent: this.agent.name,
      transcript: this.transcript,
      usage: this.usage,
    };
  }
}
