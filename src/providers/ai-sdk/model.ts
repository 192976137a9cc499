/**
 * `fromAiSdk()`: any Vercel AI SDK language model (specification v2 or v3) as a Quiver
 * `Model`, so every provider of that ecosystem works with Quiver. Only the AI SDK's types
 * are imported: the AI SDK is an optional peer, and the model object is the user's own.
 */
import type { LanguageModelV2, LanguageModelV3 } from "@ai-sdk/provider";
import { ProviderError, UserError } from "../../errors.js";
import type { Model, ModelRequest, ModelStreamEvent } from "../../model/types.js";
import { abortedError } from "../http-stream.js";
import { mediaOf, unsupportedPart } from "../message-content.js";
import {
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_TIMEOUT_MS,
  type HttpProviderOptions,
} from "../provider-options.js";
import { DEFAULT_MAX_RETRIES, DEFAULT_MAX_RETRY_AFTER_MS } from "../retry.js";
import { retryingStream } from "../retrying-stream.js";
import { encodingError, type Warn } from "../streaming-turn.js";
import { defaultWarningHandler } from "../warnings.js";
import { providerErrorFrom } from "./errors.js";
import { type CallOptions, callOptions, type SpecVersion } from "./prompt.js";
import { AiSdkStreamDecoder, type StreamPart } from "./stream.js";

/** The AI SDK's own model types, used inside this adapter only. */
type SpecModel = LanguageModelV2 | LanguageModelV3;

/**
 * Any AI SDK language model Quiver can drive (specification v2 or v3), described by shape so
 * that Quiver's public types never name the optional `@ai-sdk/provider` package: a project
 * without the AI SDK still type-checks with `skipLibCheck: false`.
 */
export type AiSdkLanguageModel = {
  readonly specificationVersion: "v2" | "v3";
  readonly provider: string;
  readonly modelId: string;
  doStream(options: never): PromiseLike<unknown>;
};

/** Retries and timeouts as for the HTTP providers (the AI SDK's own retries live in `generateText`, not in the model). */
export type FromAiSdkOptions = Omit<HttpProviderOptions, "fetch" | "headers">;

/**
 * Wraps an AI SDK language model.
 *
 * @example
 * import { createOpenAI } from "@ai-sdk/openai";
 * import { fromAiSdk } from "quiver-agents/providers";
 * const agent = new Agent({ name: "helper", model: fromAiSdk(createOpenAI()("gpt-4.1-mini")) });
 */
export function fromAiSdk(aiSdkModel: AiSdkLanguageModel, options: FromAiSdkOptions = {}): Model {
  const model = aiSdkModel as unknown as SpecModel;
  const version = (model as { specificationVersion?: unknown }).specificationVersion;
  if (version !== "v2" && version !== "v3") {
    throw new UserError(
      `fromAiSdk: unsupported language model specification ${JSON.stringify(version)}; Quiver supports "v2" and "v3" (AI SDK 5 and 6 providers)`,
    );
  }
  const provider = model.provider;
  const onWarning = options.onWarning ?? defaultWarningHandler;
  const retry = {
    provider,
    maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES,
    retryBackoff: options.retryBackoff ?? {},
    maxRetryAfterMs: options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS,
  };
  const limits = {
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    idleTimeoutMs: options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
  };
  return {
    name: `${provider}:${model.modelId}`,
    stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
      const warnings: string[] = [];
      const warn: Warn = (message, tool) => {
        warnings.push(message);
        onWarning(tool === undefined ? { provider, message } : { provider, message, tool });
      };
      return (async function* () {
        let base: CallOptions;
        try {
          // The real signal is set per attempt.
          base = callOptions(request, version, provider, new AbortController().signal, warn);
        } catch (error) {
          throw encodingError(provider, error);
        }
        await refuseUnsupportedUrls(model, request);
        for (const message of warnings.splice(0))
          yield { type: "warning", message, code: `${provider}_degraded` };
        yield* retryingStream(retry, request, () =>
          attempt(model, base, version, request.signal, limits, warn),
        );
      })();
    },
  };
}

/**
 * A part given by URL goes to the model as a URL only where the model says it takes one
 * (`supportedUrls`); elsewhere the AI SDK's `generateText` would download it, which Quiver does
 * not do on a caller's behalf: a `UserError` before the request says to pass the bytes instead.
 */
async function refuseUnsupportedUrls(model: SpecModel, request: ModelRequest): Promise<void> {
  const byUrl = request.messages.flatMap((message) =>
    message.role === "user" ? mediaOf(message.content).filter((block) => block.url !== undefined) : [],
  );
  if (byUrl.length === 0) return;
  let supported: Record<string, RegExp[]> | undefined;
  try {
    supported = await (model as { supportedUrls?: PromiseLike<Record<string, RegExp[]>> }).supportedUrls;
  } catch {
    return; // the model cannot say: the provider decides
  }
  if (supported === undefined || supported === null) return;
  for (const block of byUrl) {
    const mediaType = (block.mimeType ?? "image/*").toLowerCase();
    const patterns = Object.entries(supported)
      .filter(([type]) => typeMatches(type.toLowerCase(), mediaType))
      .flatMap(([, list]) => list);
    if (!patterns.some((pattern) => pattern.test(block.url!)))
      throw unsupportedPart(
        model.provider,
        block,
        "in a user message",
        "this model does not take that URL (its supportedUrls); fetch it and pass its bytes as data",
      );
  }
}

/** A pattern such as `image/png`, `image/` plus a star, or a star alone, matching a media type. */
function typeMatches(pattern: string, mediaType: string): boolean {
  if (pattern === "*" || pattern === "*/*" || pattern === mediaType) return true;
  const [major] = mediaType.split("/");
  return pattern.endsWith("/*") && (pattern.slice(0, -2) === major || mediaType.endsWith("/*"));
}

type Limits = { timeoutMs: number; idleTimeoutMs: number };

/**
 * A stream that errors mid-way is a dropped connection as far as we can tell: retryable,
 * unless the model's own error says otherwise.
 */
function streamBroke(provider: string, error: unknown): ProviderError {
  if (error instanceof ProviderError) return error;
  const wrapped = providerErrorFrom(provider, error);
  if (error instanceof Error && ("isRetryable" in error || "statusCode" in error)) return wrapped;
  return new ProviderError(`${provider}: the stream broke: ${wrapped.message.replace(`${provider}: `, "")}`, {
    provider,
    type: "connection_error",
    retryable: true,
    cause: error,
  });
}

/** setTimeout overflows above this and would fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * One `doStream` call, with the request timeout, the idle timeout between parts, and the
 * caller's signal all enforced here: an AI SDK model may ignore its `abortSignal`, so a
 * stalled or aborted read is abandoned rather than awaited.
 */
async function* attempt(
  model: SpecModel,
  base: CallOptions,
  version: SpecVersion,
  signal: AbortSignal | undefined,
  limits: Limits,
  warn: Warn,
): AsyncGenerator<ModelStreamEvent> {
  const provider = model.provider;
  if (signal?.aborted) throw abortedError(provider, signal);
  const controller = new AbortController();
  let stoppedBy: "caller" | "timeout" | "idle" | undefined;
  const stop = (why: "caller" | "timeout" | "idle") => {
    stoppedBy ??= why;
    controller.abort();
  };
  const onCallerAbort = () => stop("caller");
  signal?.addEventListener("abort", onCallerAbort, { once: true });
  const requestTimer = setTimeout(() => stop("timeout"), Math.min(limits.timeoutMs, MAX_TIMER_MS));
  const explain = (error: unknown): ProviderError => {
    if (stoppedBy === "caller") return abortedError(provider, signal);
    if (stoppedBy === "timeout") {
      return new ProviderError(`${provider}: request timed out after ${limits.timeoutMs} ms`, {
        provider,
        type: "timeout",
        retryable: true,
      });
    }
    if (stoppedBy === "idle") {
      return new ProviderError(`${provider}: no data from the model for ${limits.idleTimeoutMs} ms`, {
        provider,
        type: "idle_timeout",
        retryable: true,
      });
    }
    return providerErrorFrom(provider, error);
  };
  /**
   * Waits for `promise`, never past an abort and, when `idle`, no longer than the idle
   * timeout; a failure of `promise` itself is mapped by `otherwise`.
   */
  const within = async <T>(
    promise: PromiseLike<T>,
    otherwise: (error: unknown) => ProviderError,
    idle: boolean,
  ): Promise<T> => {
    const pending = Promise.resolve(promise);
    pending.catch(() => {}); // a read abandoned after a timeout may still reject later
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stopped = new Promise<never>((_, reject) => {
      if (idle) {
        timer = setTimeout(
          () => {
            stop("idle");
            reject(new Error("idle"));
          },
          Math.min(limits.idleTimeoutMs, MAX_TIMER_MS),
        );
      }
      onAbort = () => reject(new Error("aborted"));
      if (controller.signal.aborted) onAbort();
      else controller.signal.addEventListener("abort", onAbort, { once: true });
    });
    try {
      return await Promise.race([pending, stopped]);
    } catch (error) {
      throw stoppedBy === undefined ? otherwise(error) : explain(error);
    } finally {
      clearTimeout(timer);
      if (onAbort) controller.signal.removeEventListener("abort", onAbort);
    }
  };

  let reader: ReadableStreamDefaultReader<StreamPart> | undefined;
  let finished = false;
  try {
    const options = { ...base, abortSignal: controller.signal };
    const result =
      version === "v3"
        ? await within(
            (model as LanguageModelV3).doStream(options as Parameters<LanguageModelV3["doStream"]>[0]),
            explain,
            true,
          )
        : await within(
            (model as LanguageModelV2).doStream(options as Parameters<LanguageModelV2["doStream"]>[0]),
            explain,
            true,
          );
    reader = (result.stream as ReadableStream<StreamPart>).getReader();
    const decoder = new AiSdkStreamDecoder(provider, (message) => warn(message));
    // Before the first output a silent model may be thinking: only the request timeout applies.
    let outputStarted = false;
    for (;;) {
      const next = await within(reader.read(), (error) => streamBroke(provider, error), outputStarted);
      if (next.done) break;
      const decoded = decoder.decode(next.value);
      if (decoded.length > 0) outputStarted = true;
      yield* decoded;
    }
    yield* decoder.end();
    finished = true;
  } finally {
    clearTimeout(requestTimer);
    signal?.removeEventListener("abort", onCallerAbort);
    if (!finished) {
      controller.abort();
      reader?.cancel().catch(() => {});
    }
  }
}
