import { ProviderError, UserError } from "../errors.js";
import type { Model, ModelRequest, ModelStreamEvent } from "./types.js";

/**
 * The longest wait a server may ask for (`Retry-After`) that a provider in a fallback chain still
 * honours while a next model waits: past it, the turn moves on at once.
 */
export const FALLBACK_WAIT_MS = 2_000;

/** Why a model of a fallback chain failed a turn: an error it threw, or a content-filter refusal. */
export type FallbackFailure = { error: unknown } | { contentFilter: true };

/** What `fallback()` takes besides the models. */
export type FallbackOptions = {
  /**
   * Which failures move a turn to the next model. Default (`fallsOver`): a retryable provider
   * error after the provider's own retries (429, 5xx, overloaded, timeouts, a connection refused
   * or reset) and a model that does not exist or may not be used (404, or the error code
   * `model_not_found`, which OpenAI sends with a 403). Request errors (400-class) and content-filter
   * refusals stay with the model that failed unless this says otherwise.
   */
  on?: (failure: FallbackFailure) => boolean;
};

/**
 * The default rule of `fallback()`: a provider's retryable error (after its own retries) or a
 * model that does not exist or this key may not use (404, or the code `model_not_found`, which
 * OpenAI sends with a 403 for a model the project has no access to).
 *
 * @example
 * // also move on when the prompt is over the first model's context
 * const overflow = (f: FallbackFailure) => "error" in f && f.error instanceof ProviderError && f.error.code === "context_length_exceeded";
 * fallback(primary, longContext, { on: (failure) => fallsOver(failure) || overflow(failure) });
 */
export function fallsOver(failure: FallbackFailure): boolean {
  if (!("error" in failure)) return false;
  const error = failure.error;
  if (!(error instanceof ProviderError)) return false;
  return (
    error.retryable ||
    error.status === 404 ||
    error.code === "model_not_found" ||
    /model_not_found|not_found_error/.test(error.type ?? "")
  );
}

/**
 * A model that is a chain of models: each turn asks the first; when it fails in a way `on`
 * accepts, the same request goes to the next, and so on. The turn's stream says so with a
 * `fallback` event (the run emits `model_fallback`), and usage and cost name the model that
 * answered. A failure none of the models survived is the last one's.
 *
 * @example
 * const agent = new Agent({ name: "support", model: fallback(openai({ model: "gpt-4.1-mini" }), anthropic({ model: "claude-sonnet-4-5" })) });
 * // the same, with model ids: new Agent({ name: "support", model: ["openai:gpt-4.1-mini", "anthropic:claude-sonnet-4-5"] })
 */
export function fallback(...args: Array<Model | FallbackOptions>): FallbackModel {
  const last = args.at(-1);
  const options = last !== undefined && !isModel(last) ? (args.pop() as FallbackOptions) : {};
  return new FallbackModel(args as Model[], options);
}

/** A fallback chain (`fallback(...)`, or an agent's `model: [a, b]`). */
export class FallbackModel implements Model {
  readonly models: readonly Model[];
  readonly name: string;
  readonly #on: (failure: FallbackFailure) => boolean;

  constructor(models: readonly Model[], options: FallbackOptions = {}) {
    if (models.length === 0) throw new UserError("a fallback chain needs at least one model");
    for (const model of models) {
      if (!isModel(model))
        throw new UserError(
          "every model of a fallback chain must be a Model (an object with name and stream())",
        );
    }
    if (options.on !== undefined && typeof options.on !== "function")
      throw new UserError("fallback(): `on` must be a function (failure) => boolean");
    this.models = [...models];
    // The model asked first: what a turn starts with, and what `turn_started` names.
    this.name = models[0]!.name;
    this.#on = options.on ?? fallsOver;
  }

  async *stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
    for (let i = 0; i < this.models.length; i++) {
      const model = this.models[i]!;
      const next = this.models[i + 1];
      // What this model streamed is held back only as long as a content-filter refusal could
      // still send the turn to the next model; otherwise events pass through as they come.
      const holdForFilter = next !== undefined && this.#on({ contentFilter: true });
      const held: ModelStreamEvent[] = [];
      let reason: string | undefined;
      try {
        const asked = next === undefined ? request : { ...request, fallbackWaiting: true };
        for await (const event of model.stream(asked)) {
          if (holdForFilter) {
            if (event.type === "finish" && event.reason === "content_filter") {
              reason = `${model.name} refused the request (content filter)`;
              break;
            }
            held.push(event);
            if (event.type === "finish") break;
            continue;
          }
          yield event;
        }
      } catch (error) {
        if (next === undefined || request.signal?.aborted || !this.#on({ error })) throw error;
        reason = describe(error);
      }
      if (reason === undefined) {
        yield* held;
        return;
      }
      yield { type: "fallback", from: model.name, to: next!.name, reason };
    }
  }
}

function isModel(value: unknown): value is Model {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as Model).name === "string" &&
    typeof (value as Model).stream === "function"
  );
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
