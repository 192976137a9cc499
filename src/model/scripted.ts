import { sleep } from "../abort.js";
import { ProviderError } from "../errors.js";
import type { FinishReason, Model, ModelRequest, ModelStreamEvent, Usage } from "./types.js";

/** One scripted model turn. `args` given as a string is passed through raw (malformed JSON tests). */
export type ScriptedTurn = {
  /** The answer's text, streamed as one `text_delta`. */
  text?: string;
  /** Reasoning streamed before the text. */
  reasoning?: string;
  /** Calls to request; `id` defaults to `call_1`, `call_2`… */
  toolCalls?: Array<{ id?: string; name: string; args: unknown }>;
  /** Tokens to report for the turn (none by default). */
  usage?: Partial<Usage>;
  /** Default: `tool_calls` when the turn has calls, else `stop`. */
  finish?: FinishReason;
  /** Milliseconds to wait before the turn's first event (honours the request's signal). */
  delayMs?: number;
};

/** How `ScriptedStream` plays its turn: a symbol, so it stays off the model's public surface. */
const PLAY = Symbol("play");

type Played = { events: ModelStreamEvent[]; delayMs?: number };

/**
 * A deterministic model for tests, demos and benchmarks: it plays back the turns it was
 * given, in order, and records every request. It is not a language model and never claims to be.
 *
 * @example
 * const model = new ScriptedModel([
 *   { toolCalls: [{ name: "add", args: { a: 1, b: 2 } }] },
 *   (req) => ({ text: `the tool said ${req.messages.at(-1)?.content}` }),
 * ]);
 */
export class ScriptedModel implements Model {
  /** The name events and traces show (`options.name`). Default "scripted". */
  readonly name: string;
  /** Every request received, in order (snapshots, not live arrays). */
  readonly requests: ModelRequest[] = [];
  readonly #turns: Array<ScriptedTurn | ((request: ModelRequest) => ScriptedTurn)>;
  readonly #record: boolean;
  #next = 0;
  #callCounter = 0;

  /** `turns` play in order, one per request; `record: false` keeps no requests (benchmarks). */
  constructor(
    turns: Array<ScriptedTurn | ((request: ModelRequest) => ScriptedTurn)>,
    options: { record?: boolean; name?: string } = {},
  ) {
    this.#turns = turns;
    this.#record = options.record ?? true;
    this.name = options.name ?? "scripted";
  }

  /** How many scripted turns have not been played yet. */
  get remaining(): number {
    return this.#turns.length - this.#next;
  }

  /**
   * Plays the next turn. Nothing happens until the first `next()`, as with a real provider's
   * request; a hand-written iterator rather than an async generator, which costs two extra
   * promises per event (the loop's benchmarks run through this).
   */
  stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
    return new ScriptedStream(request, this);
  }

  /** Records the request and turns the next scripted turn into its stream events. */
  [PLAY](request: ModelRequest): Played {
    if (this.#record) {
      // A snapshot: the runner keeps appending to its transcript after this call returns.
      const { signal: _signal, ...rest } = request;
      this.requests.push({ ...rest, messages: [...request.messages], tools: [...request.tools] });
    }
    const entry = this.#turns[this.#next];
    if (entry === undefined) {
      throw new ProviderError(
        `ScriptedModel has no turn left: it was given ${this.#turns.length} and was asked for turn ${this.#next + 1}`,
        { provider: "scripted", retryable: false },
      );
    }
    this.#next++;
    const turn = typeof entry === "function" ? entry(request) : entry;
    const events: ModelStreamEvent[] = [];
    if (turn.reasoning) events.push({ type: "reasoning_delta", delta: turn.reasoning });
    if (turn.text) events.push({ type: "text_delta", delta: turn.text });
    const calls = turn.toolCalls ?? [];
    for (let index = 0; index < calls.length; index++) {
      const call = calls[index]!;
      const id = call.id ?? `call_${++this.#callCounter}`;
      const args = typeof call.args === "string" ? call.args : JSON.stringify(call.args ?? {});
      events.push({ type: "tool_call", index, id, name: call.name, args });
    }
    if (turn.usage) events.push({ type: "usage", usage: turn.usage });
    events.push({ type: "finish", reason: turn.finish ?? (calls.length ? "tool_calls" : "stop") });
    return turn.delayMs ? { events, delayMs: turn.delayMs } : { events };
  }
}

/** One scripted turn as a stream: it is played on the first `next()`, like a provider's request. */
class ScriptedStream implements AsyncIterable<ModelStreamEvent>, AsyncIterator<ModelStreamEvent> {
  #events: ModelStreamEvent[] | undefined;
  #index = 0;
  #done = false;
  readonly #request: ModelRequest;
  readonly #model: ScriptedModel;

  // The model, not a closure over it: a stream made per turn then holds no per-turn function.
  constructor(request: ModelRequest, model: ScriptedModel) {
    this.#request = request;
    this.#model = model;
  }

  [Symbol.asyncIterator](): AsyncIterator<ModelStreamEvent> {
    return this;
  }

  next(): Promise<IteratorResult<ModelStreamEvent>> {
    if (this.#done) return Promise.resolve({ value: undefined, done: true });
    if (!this.#events) {
      let played: Played;
      try {
        played = this.#model[PLAY](this.#request);
      } catch (error) {
        this.#done = true;
        return Promise.reject(error);
      }
      this.#events = played.events;
      // `done` stays false across the wait: a `return()` meanwhile ends the stream.
      if (played.delayMs) return sleep(played.delayMs, this.#request.signal).then(() => this.next());
    }
    if (this.#index >= this.#events.length) {
      this.#done = true;
      return Promise.resolve({ value: undefined, done: true });
    }
    return Promise.resolve({ value: this.#events[this.#index++]!, done: false });
  }

  return(): Promise<IteratorResult<ModelStreamEvent>> {
    this.#done = true;
    return Promise.resolve({ value: undefined, done: true });
  }

  /**
   * One played stream kept for the life of the process. V8 keeps the hidden class of a class
   * with fields only while an instance lives: after a quiet spell and a full GC, every turn's
   * optimized code that built these streams would be thrown away (as src/run/shapes.ts explains).
   * A static field, not a module constant: a constant no function reads is not kept once the
   * module has run (such a constant left the streams' code deoptimized by every full GC).
   */
  static readonly kept = ScriptedStream.#played();

  static #played(): ScriptedStream {
    const stream = new ScriptedStream({ messages: [], tools: [], settings: {} }, new ScriptedModel([{}]));
    void stream.next();
    return stream;
  }
}
