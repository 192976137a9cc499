import { randomUUID } from "node:crypto";
import { StoreError } from "../store/types.js";

/** What `onError` is told besides the error: the request that failed and the id its client was given. */
export type ServerErrorContext = {
  request: Request;
  /** Also in the response's body (`error.requestId`) and its `x-request-id` header. */
  requestId: string;
  /** The status the client got: 500, or 503 when the `auth` function or the store (retryably) failed. */
  status: number;
};

/** Where the server reports a failure it answered with a 5xx (the client sees none of it). */
export type ServerErrorHandler = (error: unknown, context: ServerErrorContext) => void;

/**
 * An `auth` function that threw: its backend (a session store, an identity provider) failed,
 * which says nothing about the request's credentials, so it is answered 503, not 401.
 */
export class AuthFailure extends Error {
  override name = "AuthFailure";
  constructor(cause: unknown) {
    super("the auth function threw", { cause });
  }
}

/**
 * The id a failed request is known by: the client's own `x-request-id` when it is a plain token
 * (a proxy's, so its logs and ours meet), else a new one. Only `[\w.:-]`, at most 128 characters,
 * so a client cannot forge lines in the log it lands in.
 */
export function requestIdOf(request: Request): string {
  const given = request.headers.get("x-request-id")?.trim();
  return given && /^[\w.:-]{1,128}$/.test(given) ? given : `req_${randomUUID()}`;
}

/**
 * The response to a failure the client cannot act on: a fixed message and the request's id,
 * never the error's own text (it may carry file paths, hosts, SQL or another user's data).
 * The error goes to `onError`, or by default to `console.error`, under the same id.
 */
export function internalError(
  error: unknown,
  request: Request,
  onError: ServerErrorHandler | undefined,
): Response {
  const { status, code, message, reported } = failureOf(error);
  const requestId = reportFailure(reported, request, onError, status);
  // The documented `{ error: { code, message } }`, plus the id a user can quote to an operator.
  return Response.json(
    { error: { code, message: `${message} (request ${requestId})`, requestId } },
    { status, headers: { "cache-control": "no-store", "x-request-id": requestId } },
  );
}

/**
 * How a failure the client cannot act on is answered — its status, code and fixed message, the
 * same on every endpoint — and the error the operator is told of.
 *
 * @example
 * failureOf(new StoreError("down", { retryable: true })).status; // 503
 */
export function failureOf(error: unknown): {
  status: number;
  code: string;
  message: string;
  reported: unknown;
} {
  if (error instanceof AuthFailure)
    return {
      status: 503,
      code: "auth_unavailable",
      message: "the server could not check this request's credentials; try again later",
      reported: error.cause,
    };
  // A store that fails for a while (a database restarting): the client may try again.
  if (error instanceof StoreError && error.retryable)
    return {
      status: 503,
      code: "store_unavailable",
      message: "the server's store is not answering; try again shortly",
      reported: error,
    };
  return {
    status: 500,
    code: "internal",
    message: "the server failed to answer this request",
    reported: error,
  };
}

/**
 * Tells the operator of a failure the client is answered without its text (`onError`, or
 * `console.error`), and returns the request id the client is given instead (`requestId` when
 * given: the failures of one request share one).
 *
 * @example
 * const requestId = reportFailure(error, request, options.onError, 500);
 */
export function reportFailure(
  error: unknown,
  request: Request,
  onError: ServerErrorHandler | undefined,
  status: number,
  requestId = requestIdOf(request),
): string {
  try {
    (onError ?? logToConsole)(error, { request, requestId, status });
  } catch (failure) {
    // A logger that throws must not turn a 500 into a dropped connection; say both.
    logToConsole(error, { request, requestId, status });
    console.error(`quiver-agents/server: onError threw for request ${requestId}:`, failure);
  }
  return requestId;
}

/** The default `onError`: one line naming the request, then the error with its stack. */
function logToConsole(error: unknown, { request, requestId, status }: ServerErrorContext): void {
  const path = safePath(request.url);
  console.error(
    `quiver-agents/server: ${status} for ${request.method} ${path} (request ${requestId}):`,
    error,
  );
}

function safePath(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return "?";
  }
}
