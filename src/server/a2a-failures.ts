import { UserError } from "../index.js";
import type { A2aSdk } from "./a2a-sdk.js";
import { HttpError } from "./http.js";
import { failureOf, reportFailure, requestIdOf, type ServerErrorHandler } from "./server-errors.js";

/** A JSON-RPC error object, as the SDK's transports map an error to one. */
export type RpcError = { code: number; message: string; data?: unknown };

/** JSON-RPC's "internal error": what the SDK answers for any error that is not one of A2A's own. */
const INTERNAL = -32603;
/** JSON-RPC's "invalid params". */
const INVALID_PARAMS = -32602;

/**
 * What one A2A request may answer when something fails. The SDK's transports copy an error's
 * text into the JSON-RPC error they answer, and a store's error can name its file, its host or a
 * connection string with a password; REST routes answer such a failure with a fixed message and a
 * request id, and tell `onError` — so does A2A, through this:
 *
 * - the protocol's own errors (no such task, malformed params, an unsupported operation, a
 *   version not supported…) keep their code and text: they are about the request;
 * - errors the server raises for the client on purpose (an `HttpError`, such as a 409 or
 *   "shutting down", and a `UserError` about the caller's input) keep their text, as on REST;
 * - params the SDK itself could not read (it threw before the handler was called) are "invalid
 *   params" with a fixed message: the caller's mistake, not the operator's;
 * - anything else is `-32603` with a fixed message naming the request id, reported to `onError`
 *   (or `console.error`) under that id — in a plain answer and in a stream's `error` event alike.
 *
 * @example
 * const failures = new A2aFailures(sdk, request, onError);
 * const transport = new JsonRpcTransportHandler(failures.guard(tasks));
 * const answer = failures.answer(await transport.handle(body, context));
 */
export class A2aFailures {
  readonly #sdk: A2aSdk;
  readonly #request: Request;
  readonly #onError: ServerErrorHandler | undefined;
  /** One id for the request, whichever of its steps fails. */
  readonly requestId: string;
  /** True once a failure was reported (the plain answer then carries `x-request-id`). */
  reported = false;
  /** The handler was asked something besides its card: the SDK read the request's params. */
  #called = false;
  /** Texts the caller may read in a `-32603`: the fixed ones, and errors raised for the caller. */
  readonly #shown = new Set<string>();

  constructor(sdk: A2aSdk, request: Request, onError: ServerErrorHandler | undefined) {
    this.#sdk = sdk;
    this.#request = request;
    this.#onError = onError;
    this.requestId = requestIdOf(request);
  }

  /**
   * The request handler with every failure that is not for the caller replaced by one with the
   * fixed message (reported once, here, with the original error and its stack).
   */
  guard<H extends object>(handler: H): H {
    return new Proxy(handler, {
      get: (target, key, receiver) => {
        const value = Reflect.get(target, key, receiver);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          if (key !== "getAgentCard") this.#called = true;
          let answer: unknown;
          try {
            answer = value.apply(target, args);
          } catch (error) {
            throw this.#hidden(error);
          }
          if (answer instanceof Promise)
            return answer.catch((error: unknown) => Promise.reject(this.#hidden(error)));
          if (answer !== null && typeof answer === "object" && Symbol.asyncIterator in answer)
            return guardedStream(answer as AsyncIterable<unknown>, (error) => this.#hidden(error));
          return answer;
        };
      },
    });
  }

  /** The JSON-RPC error to answer for `error`, as `toError` (the SDK's mapping) makes it, made safe. */
  rpcError(error: unknown, toError: (error: unknown) => RpcError): RpcError {
    const mapped = toError(error);
    if (!this.#internal(mapped)) return mapped;
    return { code: INTERNAL, message: this.#report(error) };
  }

  /** The transport's answer, its error (if any) made safe: the transport maps what it catches itself. */
  answer<A extends object>(answer: A): A {
    const error = (answer as { error?: RpcError }).error;
    if (!error || typeof error !== "object" || !this.#internal(error)) return answer;
    // The SDK failed on the params before asking the handler anything (a part that is `null`,
    // bytes that are a number): its text is about its own code, and the mistake the caller's.
    if (!this.#called)
      return {
        ...answer,
        error: { code: INVALID_PARAMS, message: "the params are not a valid A2A request" },
      };
    return {
      ...answer,
      error: { code: INTERNAL, message: this.#report(new Error(`the A2A SDK answered: ${error.message}`)) },
    };
  }

  /** An internal error whose text nobody made for the caller. */
  #internal(mapped: RpcError): boolean {
    return mapped.code === INTERNAL && !this.#shown.has(mapped.message);
  }

  /** The error as the caller may see it. */
  #hidden(error: unknown): unknown {
    if (error instanceof this.#sdk.errors.A2AError) return error;
    if (error instanceof HttpError || error instanceof UserError) {
      this.#shown.add(error.message);
      return error;
    }
    return new Error(this.#report(error));
  }

  /** Tells the operator, and returns the fixed message the caller gets instead. */
  #report(error: unknown): string {
    const { status, message, reported } = failureOf(error);
    reportFailure(reported, this.#request, this.#onError, status, this.requestId);
    this.reported = true;
    const text = `${message} (request ${this.requestId})`;
    this.#shown.add(text);
    return text;
  }
}

async function* guardedStream(stream: AsyncIterable<unknown>, hidden: (error: unknown) => unknown) {
  try {
    yield* stream;
  } catch (error) {
    throw hidden(error);
  }
}
