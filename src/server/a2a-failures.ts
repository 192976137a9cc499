import { UserError } from "../index.js";
import type { A2aSdk } from "./a2a-sdk.js";
import { HttpError } from "./http.js";

/**
 * The A2A request handler, with every failure that is not about the caller's request turned
 * into a fixed message naming a request id (`report` tells the operator, and gives the id).
 * The SDK's transport copies an error's text into the JSON-RPC error it answers, and a store's
 * error can name its file, its host or a connection string with a password; REST routes answer
 * such a failure with a 500 that says nothing but the id, and A2A now does the same. The
 * protocol's own errors (no such task, a malformed request…) and the caller's mistakes keep
 * their text: they are the answer.
 *
 * @example
 * const tasks = guardFailures(new A2aTasks(...), sdk, (error) => reportFailure(error, request, onError, 500));
 */
export function guardFailures<H extends object>(
  handler: H,
  sdk: A2aSdk,
  report: (error: unknown) => string,
): H {
  const forCaller = (error: unknown) =>
    error instanceof sdk.errors.A2AError ||
    error instanceof UserError ||
    (error instanceof HttpError && error.status < 500);
  const hidden = (error: unknown): unknown =>
    forCaller(error)
      ? error
      : new Error(`the server failed to answer this request (request ${report(error)})`);
  return new Proxy(handler, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        let answer: unknown;
        try {
          answer = value.apply(target, args);
        } catch (error) {
          throw hidden(error);
        }
        if (answer instanceof Promise) return answer.catch((error: unknown) => Promise.reject(hidden(error)));
        if (answer !== null && typeof answer === "object" && Symbol.asyncIterator in answer)
          return guardedStream(answer as AsyncIterable<unknown>, hidden);
        return answer;
      };
    },
  });
}

async function* guardedStream(stream: AsyncIterable<unknown>, hidden: (error: unknown) => unknown) {
  try {
    yield* stream;
  } catch (error) {
    throw hidden(error);
  }
}
