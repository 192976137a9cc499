import { ProviderError } from "../errors.js";
import type {
  ContentBlock,
  FinishReason,
  Model,
  ModelRequest,
  ModelStreamEvent,
  ToolCall,
  Usage,
} from "../model/types.js";
import type { ActiveRun } from "./active-run.js";
import type { EventOf } from "./events.js";

/**
 * A requested call as the model sent it, before the runner gives it a run-unique id. Its
 * fields are always present (`undefined` when unknown): one shape for every call.
 */
export type RawCall = {
  providerId: string | undefined;
  /** The run-unique id claimed when the call's first argument delta streamed. */
  claimedId: string | undefined;
  name: string;
  args: string;
  repairs: string[] | undefined;
};

/** One model turn, assembled from its stream. */
export type ModelTurn = {
  text: string;
  reasoning: ContentBlock[];
  calls: RawCall[];
  usage: Partial<Usage>;
  finish: FinishReason;
  providerData: Record<string, unknown> | undefined;
};

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
  const stopper = run.modelStopper();
  if (stopper.aborted) return Promise.resolve(undefined);
  const reading = { abandoned: false };
  run.modelStreaming = true;
  const chat = run.tracing?.startChat(model, request);
  return new Promise<ModelTurn | undefined>((resolve, reject) => {
    const stop = () => {
      reading.abandoned = true;
      run.modelStreaming = false;
      chat?.abandon();
      resolve(undefined);
    };
    stopper.watch(stop);
    // An abandoned reader settles late, maybe during a later turn: it must not touch the run.
    const settle: Settle = {
      done(turn) {
        if (reading.abandoned) return;
        stopper.unwatch(stop);
        run.modelStreaming = false;
        chat?.end(turn);
        resolve(turn);
      },
      failed(error) {
        if (reading.abandoned) return;
        stopper.unwatch(stop);
        run.modelStreaming = false;
        chat?.fail(error);
        reject(error);
      },
    };
    if (chat) chat.within(() => readTurn(run, model, request, reading, settle));
    else void readTurn(run, model, request, reading, settle);
  });
}

/** How `readTurn` reports: callbacks, not its promise, which saves a reaction per turn. */
type Settle = { done(turn: ModelTurn): void; failed(error: unknown): void };

/** Reads the model's stream into a turn and reports it to `settle`; never rejects. */
async function readTurn(
  run: ActiveRun,
  model: Model,
  request: ModelRequest,
  reading: { abandoned: boolean },
  settle: Settle,
): Promise<void> {
  let turn = freshTurn();
  let calls = new Map<number, PartialCall>();
  let finished = false;
  let iterator: AsyncIterator<ModelStreamEvent> | undefined;
  try {
    iterator = model.stream(request)[Symbol.asyncIterator]();
    while (true) {
      const step = await iterator.next();
      if (reading.abandoned) return;
      if (step.done) break;
      const event = step.value;
      switch (event.type) {
        case "text_delta":
          turn.text += event.delta;
          run.emit({ type: "text_delta", delta: event.delta, runId: "", seq: 0, at: 0, agent: "" });
          break;
        case "reasoning_delta": {
          const last = turn.reasoning.at(-1);
          if (last?.type === "reasoning" && !event.providerData && !last.providerData)
            last.text += event.delta;
          else
            turn.reasoning.push({
              type: "reasoning",
              text: event.delta,
              ...(event.providerData && { providerData: event.providerData }),
            });
          run.emit({ type: "reasoning_delta", delta: event.delta, runId: "", seq: 0, at: 0, agent: "" });
          break;
        }
        case "tool_call_delta": {
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
          call.claimedId ??= run.claimCallId(call.id);
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
          run.emit(delta);
          break;
        }
        case "tool_call": {
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
          run.emit({ type: "warning", message: event.message, code: event.code ?? "provider" });
          break;
        case "usage":
          Object.assign(turn.usage, event.usage);
          break;
        case "reset":
          turn = freshTurn();
          calls = new Map();
          run.emit({
            type: "warning",
            code: "model_reset",
            message: `model output restarted: ${event.reason}`,
          });
          break;
        case "finish":
          turn.finish = event.reason;
          if (event.providerData) turn.providerData = event.providerData;
          finished = true;
          break;
      }
    }
  } catch (error) {
    return settle.failed(error);
  } finally {
    if (reading.abandoned) iterator?.return?.()?.catch?.(() => {});
  }
  if (!finished) {
    return settle.failed(
      new ProviderError(`model "${model.name}" ended its stream without a finish event`, {
        provider: model.name,
        retryable: true,
      }),
    );
  }
  // Calls in index order (providers number them; deltas may interleave).
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
  settle.done(turn);
}

/** `text.trim() === ""`, without trimming (a copy) when the first character cannot be white space. */
function isBlank(text: string): boolean {
  if (text.length === 0) return true;
  const first = text.charCodeAt(0);
  return (first <= 0x20 || first >= 0xa0) && text.trim() === "";
}

function freshTurn(): ModelTurn {
  return { text: "", reasoning: [], calls: [], usage: {}, finish: "stop", providerData: undefined };
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
  const id = raw.claimedId ?? run.claimCallId(raw.providerId);
  const call: ToolCall = { id, name: raw.name, args: undefined };
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
