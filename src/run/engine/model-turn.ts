import type { Stopper } from "../../abort.js";
import type { EventOf } from "../../contract/events.js";
import { ProviderError } from "../../errors.js";
import type { Model, ModelRequest, ModelStreamEvent, ToolCall } from "../../model/types.js";
import type { ActiveRun } from "../state/active-run.js";
import type { ModelTurn, RawCall } from "../state/model-answer.js";
import type { ChatTracer } from "../state/run-tracer.js";
import { toolCallOf } from "../state/transcript-objects.js";

/** A call while it streams; every field present, so every call has one shape. */
type PartialCall = {
  id: string | undefined;
  claimedId: string | undefined;
  name: string | undefined;
  args: string;
  complete: boolean;
  repairs: string[] | undefined;
};

/**
 * Streams one model turn, forwarding deltas as events, and assembles text, reasoning and
 * tool calls. A complete `tool_call` replaces the deltas with the same index; `reset` discards
 * what the turn streamed so far. Returns `undefined` when `request.signal` aborted meanwhile
 * (the run was cancelled, or a steering message interrupted the turn).
 */
export function streamModelTurn(
  run: ActiveRun,
  model: Model,
  request: ModelRequest & { signal: AbortSignal },
): Promise<ModelTurn | undefined> {
  // The whole turn races the signal once (not every stream event): a model that ignores its
  // signal is abandoned at once, and the abandoned reader stops emitting.
  const stopper = run.control.modelStopper();
  if (stopper.aborted) return Promise.resolve(undefined);
  run.control.modelStreaming = true;
  const chat = run.tracing?.startChat(model, request);
  // One executor for every turn, not a closure per turn (see TurnReader).
  const turn = new Promise<ModelTurn | undefined>(captureResolvers);
  const resolve = capturedResolve!;
  const reject = capturedReject!;
  capturedResolve = capturedReject = undefined;
  try {
    const reader = new TurnReader(run, model, stopper, chat, resolve, reject);
    stopper.watch(reader.stop);
    if (chat) chat.within(() => reader.start(request));
    else reader.start(request);
  } catch (error) {
    reject(error);
  }
  return turn;
}

let capturedResolve: ((turn: ModelTurn | undefined) => void) | undefined;
let capturedReject: ((error: unknown) => void) | undefined;

/** The executor of every turn's promise: it hands the promise's resolvers to `streamModelTurn`. */
function captureResolvers(
  resolve: (turn: ModelTurn | undefined) => void,
  reject: (error: unknown) => void,
): void {
  capturedResolve = resolve;
  capturedReject = reject;
}

/**
 * Reads one model stream into a turn. Driven by the stream's promises (`then`), not an async
 * function: an `await` allocates two closures and a context each time, per event; here the
 * two handlers are made once per turn. It never rejects; it reports through `resolve` /
 * `reject`, once, unless the turn was abandoned first.
 *
 * The handlers are methods bound to the reader, not arrow functions: V8 keeps a function's
 * optimized code only weakly once no closure that ran it is alive, so with a closure made per
 * turn every full GC between runs (a quiet spell) threw away `#onStep`'s code, and each turn
 * read its events unoptimized until it was compiled again (tens of ms on a busy machine). A
 * bound function has no code of its own: it calls the method, whose code the class keeps.
 */
class TurnReader {
  turn = freshTurn();
  /** The turn's calls by index, made with its first call event (a text-only turn has none). */
  calls: Map<number, PartialCall> | undefined = undefined;
  finished = false;
  /** The run stopped the turn: the reader reports nothing more and closes the stream. */
  abandoned = false;
  iterator: AsyncIterator<ModelStreamEvent> | undefined = undefined;
  readonly run: ActiveRun;
  readonly model: Model;
  readonly stopper: Stopper;
  chat: ChatTracer | undefined;
  readonly resolve: (turn: ModelTurn | undefined) => void;
  readonly reject: (error: unknown) => void;

  constructor(
    run: ActiveRun,
    model: Model,
    stopper: Stopper,
    chat: ChatTracer | undefined,
    resolve: (turn: ModelTurn | undefined) => void,
    reject: (error: unknown) => void,
  ) {
    this.run = run;
    this.model = model;
    this.stopper = stopper;
    this.chat = chat;
    this.resolve = resolve;
    this.reject = reject;
  }

  /** The stop came first: the turn reads as abandoned at once, whatever the model does. */
  readonly stop: () => void = this.#abandon.bind(this);
  readonly #onStep: (step: IteratorResult<ModelStreamEvent>) => void = this.#step.bind(this);
  readonly #onError: (error: unknown) => void = this.#failed.bind(this);

  #abandon(): void {
    this.abandoned = true;
    this.run.control.modelStreaming = false;
    this.chat?.abandon();
    this.resolve(undefined);
  }

  start(request: ModelRequest): void {
    try {
      this.iterator = this.model.stream(request)[Symbol.asyncIterator]();
      this.#pull();
    } catch (error) {
      this.#failed(error);
    }
  }

  /** Asks for the next event; `Promise.resolve` takes a native promise as it is, and anything else as `await` would. */
  #pull(): void {
    Promise.resolve(this.iterator!.next()).then(this.#onStep, this.#onError);
  }

  #step(step: IteratorResult<ModelStreamEvent>): void {
    if (this.abandoned) {
      this.#close();
      return;
    }
    try {
      if (step.done) this.#ended();
      else {
        this.#apply(step.value);
        this.#pull();
      }
    } catch (error) {
      this.#failed(error);
    }
  }

  #apply(event: ModelStreamEvent): void {
    switch (event.type) {
      case "text_delta":
        this.turn.text += event.delta;
        this.run.events.emit({ type: "text_delta", delta: event.delta, runId: "", seq: 0, at: 0, agent: "" });
        break;
      case "reasoning_delta": {
        const last = this.turn.reasoning.at(-1);
        if (last?.type === "reasoning" && !event.providerData && !last.providerData) last.text += event.delta;
        else
          this.turn.reasoning.push({
            type: "reasoning",
            text: event.delta,
            ...(event.providerData && { providerData: event.providerData }),
          });
        this.run.events.emit({
          type: "reasoning_delta",
          delta: event.delta,
          runId: "",
          seq: 0,
          at: 0,
          agent: "",
        });
        break;
      }
      case "tool_call_delta": {
        const calls = this.#callsByIndex();
        const call = calls.get(event.index) ?? {
          id: undefined,
          claimedId: undefined,
          name: undefined,
          args: "",
          complete: false,
          repairs: undefined,
        };
        calls.set(event.index, call);
        if (call.complete) break;
        if (event.id) call.id = event.id;
        if (event.name) call.name = (call.name ?? "") + event.name;
        call.args += event.argsDelta;
        // Claimed now, so a UI can key the streamed input by the id the call's later events carry.
        call.claimedId ??= this.run.callIds.claim(call.id);
        const delta: EventOf<"tool_call_input_delta"> = {
          type: "tool_call_input_delta",
          index: event.index,
          callId: call.claimedId,
          delta: event.argsDelta,
          runId: "",
          seq: 0,
          at: 0,
          agent: "",
        };
        if (call.name !== undefined) delta.name = call.name;
        this.run.events.emit(delta);
        break;
      }
      case "tool_call": {
        const calls = this.#callsByIndex();
        const index = event.index ?? nextFreeIndex(calls);
        calls.set(index, {
          id: event.id,
          claimedId: calls.get(index)?.claimedId,
          name: event.name,
          args: event.args,
          complete: true,
          repairs: event.repairs?.length ? event.repairs : undefined,
        });
        break;
      }
      case "warning":
        this.run.events.emit({ type: "warning", message: event.message, code: event.code ?? "provider" });
        break;
      case "usage":
        Object.assign(this.turn.usage, event.usage);
        break;
      case "fallback":
        this.turn = freshTurn();
        this.turn.model = event.to;
        this.calls = undefined;
        this.run.events.emit({
          type: "model_fallback",
          from: event.from,
          to: event.to,
          reason: event.reason,
          turn: this.run.turn,
        });
        if (this.chat) this.chat = this.chat.fellBack(event.to, event.reason);
        break;
      case "reset": {
        // A provider's own retry: the model that answers stays the same.
        const model = this.turn.model;
        this.turn = freshTurn();
        this.turn.model = model;
        this.calls = undefined;
        this.run.events.emit({
          type: "warning",
          code: "model_reset",
          message: `model output restarted: ${event.reason}`,
        });
        break;
      }
      case "finish":
        this.turn.finish = event.reason;
        if (event.providerData) this.turn.providerData = event.providerData;
        this.finished = true;
        break;
    }
  }

  /** The turn's calls by index, made on first use. */
  #callsByIndex(): Map<number, PartialCall> {
    if (this.calls === undefined) this.calls = new Map();
    return this.calls;
  }

  #failed(error: unknown): void {
    if (this.abandoned) {
      this.#close();
      return;
    }
    this.stopper.unwatch(this.stop);
    this.run.control.modelStreaming = false;
    this.chat?.fail(error);
    this.reject(error);
  }

  /** An abandoned stream is told to stop (a provider then releases its connection). */
  #close(): void {
    try {
      this.iterator?.return?.()?.catch?.(() => {});
    } catch {
      // A stream that throws on return() has nothing left to release.
    }
  }

  #ended(): void {
    const { turn, calls } = this;
    if (!this.finished) {
      this.#failed(
        new ProviderError(`model "${this.model.name}" ended its stream without a finish event`, {
          provider: this.model.name,
          retryable: true,
        }),
      );
      return;
    }
    // Calls in index order (providers number them; deltas may interleave).
    if (calls) {
      const indexes = calls.size > 1 ? [...calls.keys()].sort((a, b) => a - b) : calls.keys();
      for (const index of indexes) {
        const call = calls.get(index)!;
        turn.calls.push({
          providerId: call.id,
          claimedId: call.claimedId,
          name: call.name ?? "",
          args: call.args,
          repairs: call.repairs,
        });
      }
    }
    this.stopper.unwatch(this.stop);
    this.run.control.modelStreaming = false;
    this.chat?.end(turn);
    this.resolve(turn);
  }
}

/** An idle reader (never started), kept so its hidden class outlives a full GC (see shapes.ts). */
export function turnReaderShape(run: ActiveRun, model: Model): unknown {
  return new TurnReader(
    run,
    model,
    run.control.stopper,
    undefined,
    () => {},
    () => {},
  );
}

/** `text.trim() === ""`, without trimming (a copy) when the first character cannot be white space. */
function isBlank(text: string): boolean {
  if (text.length === 0) return true;
  const first = text.charCodeAt(0);
  return (first <= 0x20 || first >= 0xa0) && text.trim() === "";
}

function freshTurn(): ModelTurn {
  return {
    text: "",
    reasoning: [],
    calls: [],
    usage: {},
    finish: "stop",
    providerData: undefined,
    model: undefined,
  };
}

function nextFreeIndex(calls: Map<number, PartialCall>): number {
  let index = calls.size;
  while (calls.has(index)) index++;
  return index;
}

/**
 * Turns the model's raw call into a stored `ToolCall`: a run-unique id, and arguments that
 * replay safely to any provider (`{}` plus `rawArgs` when the JSON did not parse).
 */
export function toToolCall(
  run: ActiveRun,
  raw: RawCall,
): { call: ToolCall; parseError?: string; repairs?: string[] } {
  const id = raw.claimedId ?? run.callIds.claim(raw.providerId);
  const call = toolCallOf(id, raw.name);
  if (raw.providerId !== undefined && raw.providerId !== id) call.providerCallId = raw.providerId;
  try {
    call.args = JSON.parse(isBlank(raw.args) ? "{}" : raw.args);
  } catch (error) {
    call.args = {};
    call.rawArgs = raw.args;
    return { call, parseError: (error as Error).message };
  }
  return raw.repairs ? { call, repairs: raw.repairs } : { call };
}
