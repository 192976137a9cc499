/**
 * The driver every HTTP provider shares: send one model request, decode its event stream,
 * retry retryable failures with backoff, and emit `reset` when a retry follows partial
 * output. A provider only supplies its `WireFormat`: how to encode a request, decode a
 * stream and read an error response.
 */
import { ProviderError, UserError } from "../errors.js";
import type { ModelRequest, ModelStreamEvent } from "../model/types.js";
import { postServerSentEvents } from "./http-stream.js";
import type { HttpSettings } from "./provider-options.js";
import { retryingStream } from "./retrying-stream.js";
import type { SseEvent } from "./sse.js";

export type EncodedRequest = { url: string; headers: Record<string, string>; body: unknown };

/** Reports a degradation (`tool` names the tool it concerns). */
export type Warn = (message: string, tool?: string) => void;

/** One attempt's stream decoding state. */
export interface TurnDecoder {
  /** The events one server-sent event stands for. Throws `ProviderError` for an error event or malformed data. */
  decode(event: SseEvent): ModelStreamEvent[];
  /** True once the terminal event arrived (the rest of the body is not read). */
  readonly done: boolean;
  /**
   * True once the model said why it stopped: what may still come is usage and the terminal
   * event, so a server that then goes quiet or drops the connection has still answered.
   */
  readonly finished: boolean;
  /**
   * The closing events (complete tool calls, usage, finish) once the body ended. Throws a
   * retryable `ProviderError` when the stream ended without a finish reason: a cut-off
   * stream must not pass for a short answer.
   */
  end(): ModelStreamEvent[];
}

export interface WireFormat {
  encode(request: ModelRequest, warn: Warn): EncodedRequest;
  decoder(): TurnDecoder;
  errorFromResponse(status: number, headers: Headers, body: string): ProviderError;
}

/**
 * Streams one model turn with retries. `reset` is emitted only when the failed attempt had
 * already produced output; usage is reported once, for the attempt that succeeded.
 */
export async function* streamTurn(
  wire: WireFormat,
  settings: HttpSettings,
  request: ModelRequest,
): AsyncGenerator<ModelStreamEvent> {
  const { provider } = settings;
  // Degradations found while encoding reach the caller twice: as `onWarning` and as stream
  // events, which the runner turns into `warning` events of the run.
  const warnings: string[] = [];
  const warn: Warn = (message, tool) => {
    warnings.push(message);
    settings.onWarning(tool === undefined ? { provider, message } : { provider, message, tool });
  };
  let encoded: EncodedRequest;
  let body: string;
  try {
    encoded = wire.encode(request, warn);
    body = JSON.stringify(encoded.body);
  } catch (error) {
    throw encodingError(provider, error);
  }
  for (const message of warnings) yield { type: "warning", message, code: `${provider}_degraded` };
  yield* retryingStream(settings, request, async function* () {
    const decoder = wire.decoder();
    const progress = { outputStarted: false, finished: false };
    const events = postServerSentEvents({
      progress,
      provider,
      url: encoded.url,
      headers: encoded.headers,
      body,
      fetch: settings.fetch,
      timeoutMs: settings.timeoutMs,
      idleTimeoutMs: settings.idleTimeoutMs,
      errorFromResponse: (status, headers, text) => wire.errorFromResponse(status, headers, text),
      ...(request.signal ? { signal: request.signal } : {}),
    });
    for await (const sse of events) {
      const decoded = decoder.decode(sse);
      if (decoded.length > 0) progress.outputStarted = true;
      if (decoder.finished) progress.finished = true;
      yield* decoded;
      if (decoder.done) break;
    }
    yield* decoder.end();
  });
}

/**
 * Parses one JSON chunk of a stream. Malformed data is a retryable error: the stream is
 * corrupt (a proxy, a truncated write), and a fresh attempt usually is not.
 */
export function parseChunk(provider: string, data: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    throw new ProviderError(`${provider}: malformed stream chunk: ${data.slice(0, 200)}`, {
      provider,
      type: "malformed_chunk",
      retryable: true,
    });
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new ProviderError(`${provider}: unexpected stream chunk: ${data.slice(0, 200)}`, {
      provider,
      type: "malformed_chunk",
      retryable: true,
    });
  }
  return value as Record<string, unknown>;
}

/**
 * A request that could not be built (a value JSON cannot hold, say): never retried. A
 * `UserError` (a part the provider cannot take) stays one: the caller's input is at fault.
 */
export function encodingError(provider: string, error: unknown): ProviderError | UserError {
  if (error instanceof UserError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new ProviderError(`${provider}: could not build the request: ${message}`, {
    provider,
    type: "invalid_request",
    retryable: false,
    cause: error,
  });
}

/** The error for a stream that ended before the model said why it stopped. */
export function unfinishedStreamError(provider: string): ProviderError {
  return new ProviderError(`${provider}: the stream ended before the model finished its turn`, {
    provider,
    type: "incomplete_stream",
    retryable: true,
  });
}
