/**
 * One streaming HTTP request with every wait bounded: a whole-request timeout, an idle
 * timeout for the response headers and between chunks once output has started, and the
 * caller's abort signal, which tears the connection down at once.
 */
import { ProviderError } from "../errors.js";
import { describeErrorBody } from "./error-responses.js";
import { SseDecoder, type SseEvent } from "./sse.js";

export type StreamingPost = {
  /** Provider name for errors (`"openai"`, `"anthropic"`…). */
  provider: string;
  url: string;
  headers: Record<string, string>;
  body: string;
  fetch: typeof fetch;
  signal?: AbortSignal;
  timeoutMs: number;
  idleTimeoutMs: number;
  /** Turns a non-2xx response into the provider's error (status, type, message, retryable). */
  errorFromResponse(status: number, headers: Headers, body: string): ProviderError;
  /**
   * Set by the caller once the model produced output. Until then a silent body is a model
   * thinking (OpenAI streams nothing while a reasoning model reasons), bounded by
   * `timeoutMs` only; from then on the idle timeout applies between chunks.
   */
  progress?: { outputStarted: boolean; finished?: boolean };
};

/**
 * How long a stream whose model has said why it stopped may stay quiet before its end is
 * taken as read: the usage chunk and `[DONE]` follow the finish at once from every server
 * seen; one that leaves the connection open without them has still answered.
 */
const TRAILING_MS = 2_000;

/** The error for a request stopped by the caller's signal. Never retried. */
export function abortedError(provider: string, signal: AbortSignal | undefined): ProviderError {
  return new ProviderError(`${provider}: request aborted`, {
    provider,
    type: "aborted",
    retryable: false,
    cause: signal?.reason,
  });
}

/** setTimeout overflows above this and would fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * POSTs `body` and yields the server-sent events of the response as they arrive.
 * Stopping the iteration early (break, return, a thrown error) cancels the request.
 *
 * @example
 * for await (const ev of postServerSentEvents({ provider: "openai", url, headers, body,
 *   fetch, timeoutMs: 600_000, idleTimeoutMs: 60_000, errorFromResponse })) console.log(ev.data);
 */
export async function* postServerSentEvents(request: StreamingPost): AsyncGenerator<SseEvent> {
  const { provider, signal } = request;
  if (signal?.aborted) throw abortedError(provider, signal);
  const controller = new AbortController();
  let stoppedBy: "request_timeout" | "idle_timeout" | "trailing" | "caller" | undefined;
  const stop = (why: "request_timeout" | "idle_timeout" | "trailing" | "caller") => {
    if (stoppedBy === undefined) stoppedBy = why;
    controller.abort();
  };
  const onCallerAbort = () => stop("caller");
  signal?.addEventListener("abort", onCallerAbort, { once: true });
  const requestTimer = setTimeout(() => stop("request_timeout"), Math.min(request.timeoutMs, MAX_TIMER_MS));
  let idleTimer: NodeJS.Timeout | undefined;
  const armIdle = () => {
    clearTimeout(idleTimer);
    idleTimer = setTimeout(() => stop("idle_timeout"), Math.min(request.idleTimeoutMs, MAX_TIMER_MS));
  };

  // Why a failure happened matters more than the low-level error the abort produced.
  const explain = (error: unknown): ProviderError => {
    if (stoppedBy === "caller") return abortedError(provider, signal);
    if (stoppedBy === "request_timeout") {
      return new ProviderError(`${provider}: request timed out after ${request.timeoutMs} ms`, {
        provider,
        type: "timeout",
        retryable: true,
      });
    }
    if (stoppedBy === "idle_timeout") {
      return new ProviderError(`${provider}: no data from the server for ${request.idleTimeoutMs} ms`, {
        provider,
        type: "idle_timeout",
        retryable: true,
      });
    }
    if (error instanceof ProviderError) return error;
    return new ProviderError(`${provider}: connection failed: ${describeNetworkError(error)}`, {
      provider,
      type: "connection_error",
      retryable: true,
      cause: error,
    });
  };

  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  let finished = false;
  try {
    armIdle();
    let response: Response;
    try {
      response = await untilAborted(
        request.fetch(request.url, {
          method: "POST",
          headers: request.headers,
          body: request.body,
          signal: controller.signal,
        }),
        controller.signal,
      );
    } catch (error) {
      throw explain(error);
    }
    armIdle();
    if (!response.ok) {
      let text = "";
      try {
        text = await untilAborted(response.text(), controller.signal);
      } catch (error) {
        // The status alone still says what went wrong, unless we were stopped.
        if (stoppedBy !== undefined) throw explain(error);
      }
      throw request.errorFromResponse(response.status, response.headers, text);
    }
    if (!response.body) {
      throw new ProviderError(`${provider}: the response has no body`, { provider, retryable: true });
    }
    const contentType = response.headers.get("content-type") ?? "";
    // A body labelled JSON may still be a stream (servers that mislabel it), or a JSON answer
    // or error; an HTML page is a wrong URL or a proxy's page. Either is held until its first
    // bytes say which, read chunk by chunk under the idle timeout all the same.
    const labelled = contentType.includes("application/json")
      ? "json"
      : contentType.includes("text/html")
        ? "html"
        : undefined;
    let held = labelled === undefined ? undefined : "";
    reader = response.body.getReader();
    const decoder = new TextDecoder();
    const sse = new SseDecoder();
    const idleBetweenChunks = () => {
      if (request.progress?.finished) {
        clearTimeout(idleTimer);
        idleTimer = setTimeout(() => stop("trailing"), Math.min(request.idleTimeoutMs, TRAILING_MS));
      } else if (request.progress === undefined || request.progress.outputStarted) armIdle();
      else if (held !== undefined) armIdle();
      else clearTimeout(idleTimer);
    };
    idleBetweenChunks();
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await untilAborted(reader.read(), controller.signal);
      } catch (error) {
        // The model had finished its turn: a connection that then drops or goes quiet loses
        // at most the usage, not the answer (the connection is torn down in finally).
        if (request.progress?.finished && stoppedBy !== "caller") return;
        throw explain(error);
      }
      if (chunk.done) break;
      // The idle clock measures the server's silence, not a slow consumer: pause it while
      // the events are handed out (unread bytes wait in the socket meanwhile).
      clearTimeout(idleTimer);
      let text = decoder.decode(chunk.value, { stream: true });
      if (held !== undefined) {
        held += text;
        if (labelled === "json" && looksLikeEventStream(held)) {
          text = held;
          held = undefined;
        } else {
          if (held.length > MAX_HELD_CHARS) break;
          idleBetweenChunks();
          continue;
        }
      }
      const events = sse.push(text);
      for (const ev of events) yield ev;
      idleBetweenChunks();
    }
    if (held !== undefined) {
      held += decoder.decode();
      if (labelled === "json" && looksLikeEventStream(held)) {
        for (const ev of [...sse.push(held), ...sse.end()]) yield ev;
        finished = true;
        return;
      }
      if (labelled === "json" && isChatCompletion(held)) {
        // A server that ignored `stream: true` and answered whole: the Chat Completions
        // decoder reads a whole `choices[].message` as it reads a delta.
        yield { data: held };
        finished = true;
        return;
      }
      throw unexpectedBody(provider, contentType, held);
    }
    for (const ev of sse.push(decoder.decode())) yield ev;
    for (const ev of sse.end()) yield ev;
    finished = true;
  } finally {
    clearTimeout(requestTimer);
    clearTimeout(idleTimer);
    signal?.removeEventListener("abort", onCallerAbort);
    if (!finished) {
      // Stopped early (error, break, abort): release the connection now, never leave it open.
      controller.abort();
      reader?.cancel().catch(() => {});
    }
  }
}

/** The most of a body that is not a stream read to say what it was. */
const MAX_HELD_CHARS = 1_000_000;

/** Whether a body's first bytes are server-sent events (`data:`, `event:`, a comment). */
function looksLikeEventStream(text: string): boolean {
  const start = text.trimStart();
  return start.startsWith("data:") || start.startsWith("event:") || start.startsWith(":");
}

/** A whole Chat Completions answer (`object: "chat.completion"`, or `choices` with messages). */
function isChatCompletion(text: string): boolean {
  try {
    const value = JSON.parse(text) as { choices?: Array<{ message?: unknown }> } | null;
    return Array.isArray(value?.choices) && value.choices.some((choice) => choice?.message !== undefined);
  } catch {
    return false;
  }
}

/**
 * A 200 answer that is not a stream: a JSON error (or answer in another API's shape), or an
 * HTML page — most often a `baseURL` that misses its `/v1` or points at a web UI. Not retried.
 */
function unexpectedBody(provider: string, contentType: string, body: string): ProviderError {
  if (contentType.includes("text/html")) {
    const title = /<title[^>]*>([^<]*)<\/title>/i.exec(body)?.[1]?.trim();
    return new ProviderError(
      `${provider}: expected a streamed response (text/event-stream) but got an HTML page${title ? ` ("${title.slice(0, 120)}")` : ""}: check the baseURL (an OpenAI-compatible one ends in /v1)`,
      { provider, type: "unexpected_response", retryable: false },
    );
  }
  const { message, type, code } = describeErrorBody(body);
  return new ProviderError(
    `${provider}: expected a streamed response (text/event-stream) but got JSON: ${message.slice(0, 300)}`,
    { provider, type: type ?? "unexpected_response", retryable: false, ...(code ? { code } : {}) },
  );
}

/**
 * `promise`, or a rejection as soon as `signal` aborts. The global fetch honours its signal
 * by itself; a custom `fetch` might not, and a wait must never outlive its timeout.
 */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(new Error("aborted"));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      promise.catch(() => {}); // settles later, unobserved
      reject(new Error("aborted"));
    };
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

function describeNetworkError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
  return `${error.message}${cause}`;
}
