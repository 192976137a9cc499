import type { EventBase, EventBody, RunEvent } from "../../contract/events.js";
import type { RunStore } from "../../store/types.js";
import type { EventQueue } from "./event-queue.js";
import type { EventSink } from "./event-sink.js";
import type { RunTracer } from "./run-tracer.js";

/**
 * One run's events: stamps each with its base (run id, seq, time, agent, path) and hands it to
 * the tracing, then to the store (with a sink) or straight to the reader.
 */
export class RunEvents {
  readonly runId: string;
  /** The name of the agent speaking now (a handoff changes it). */
  agent: string;
  readonly #path: string[] | undefined;
  readonly #parentRunId: string | undefined;
  readonly #parentCallId: string | undefined;
  readonly queue: EventQueue;
  /**
   * Stores events before the reader sees them; only a run with a store (and its child runs,
   * which share it) has one: without, events go straight to the reader.
   */
  readonly sink: EventSink | undefined;
  /** This run's spans; `undefined` when it is not traced (then no event does any tracing work). */
  tracer: RunTracer | undefined;
  #seq = 0;

  constructor(
    runId: string,
    agent: string,
    queue: EventQueue,
    sink: EventSink | undefined,
    child?: { path: string[]; parentRunId: string; parentCallId: string },
  ) {
    this.runId = runId;
    this.agent = agent;
    this.queue = queue;
    this.sink = sink;
    this.#path = child?.path;
    this.#parentRunId = child?.parentRunId;
    this.#parentCallId = child?.parentCallId;
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
    event.at = this.sink || this.tracer || !this.queue.dropping ? Date.now() : 0;
    event.agent = this.agent;
    if (this.#path) {
      event.path = this.#path;
      event.parentRunId = this.#parentRunId!;
      event.parentCallId = this.#parentCallId!;
    }
    this.tracer?.observe(event);
    if (this.sink) this.sink.write(event);
    else this.queue.push(event);
    return event;
  }

  /** The store of this run, if it is persisted. */
  get store(): RunStore | undefined {
    return this.sink?.store;
  }

  /** Resolves once every event emitted so far is stored; `undefined` (no await needed) without a store. */
  flushed(): Promise<void> | undefined {
    return this.sink?.flushed();
  }

  /** Resolves when the consumer has pulled past `event` (at once when nobody is reading). */
  whenPassed(event: RunEvent): Promise<void> {
    return this.queue.whenPassed(event);
  }

  /** Continues a stored run: its seq goes on from the log. */
  restore(lastSeq: number): void {
    this.#seq = lastSeq;
  }
}
