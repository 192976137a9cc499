import { sleep } from "../abort.js";
import { ProviderError } from "../errors.js";
import type { FinishReason, Model, ModelRequest, ModelStreamEvent, Usage } from "./types.js";

/** One scripted model turn. `args` given as a string is passed through raw (malformed JSON tests). */
export type ScriptedTurn = {
  text?: string;
  reasoning?: string;
  toolCalls?: Array<{ id?: string; name: string; args: unknown }>;
  usage?: Partial<Usage>;
  finish?: FinishReason;
  /** Milliseconds to wait before the turn's first event (honours the request's signal). */
  delayMs?: number;
};

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
  readonly name: string;
  /** Every request received, in order (snapshots, not live arrays). */
  readonly requests: ModelRequest[] = [];
  readonly #turns: Array<ScriptedTurn | ((request: ModelRequest) => ScriptedTurn)>;
  readonly #record: boolean;
  #next = 0;
  #callCounter = 0;

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

  async *stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
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
    if (turn.delayMs) await sleep(turn.delayMs, request.signal);
    if (turn.reasoning) yield { type: "reasoning_delta", delta: turn.reasoning };
    if (turn.text) yield { type: "text_delta", delta: turn.text };
    const calls = turn.toolCalls ?? [];
    for (const [index, call] of calls.entries()) {
      const id = call.id ?? `call_${++this.#callCounter}`;
      const args = typeof call.args === "string" ? call.args : JSON.stringify(call.args ?? {});
      yield { type: "tool_call", index, id, name: call.name, args };
    }
    if (turn.usage) yield { type: "usage", usage: turn.usage };
    yield { type: "finish", reason: turn.finish ?? (calls.length ? "tool_calls" : "stop") };
  }
}
