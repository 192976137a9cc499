import { AsyncLocalStorage } from "node:async_hooks";
import type { RunContext } from "../../contract/run-context.js";
import { UserError } from "../../errors.js";

const storage = new AsyncLocalStorage<RunContext<any>>();

/**
 * The run context of the tool call this code runs inside.
 *
 * @example
 * const ordersTool = tool({ name: "orders", description: "List my orders.", parameters: z.object({}),
 *   execute: async () => db.orders(getRunContext().userId) });
 */
export function getRunContext<Deps = unknown>(): RunContext<Deps> {
  const ctx = storage.getStore();
  if (!ctx) {
    throw new UserError(
      "getRunContext() was called outside a tool call: call it while a tool's execute runs (instructions " +
        "functions and guardrails get the context as an argument; work a tool leaves running after it " +
        "returns must keep the ctx its execute was given)",
    );
  }
  return ctx as RunContext<Deps>;
}

// On Node 20 an enabled AsyncLocalStorage puts hooks on every promise in the process (measured:
// ~35 % of the loop's time when left on, ~25 % of a one-call run), and switching it on and off
// costs about as much as one model turn under the hooks. It is enabled when a tool call starts.
// Once no call is running it goes off again when the run has ended, or when the run made calls
// in this turn only: most runs with calls make them in one turn and then answer (a chat
// request), and that answer streams unhooked. A run that makes calls turn after turn keeps it
// on from its second turn of calls to its end (switching per turn would cost more than it saves).
let callsInFlight = 0;

/**
 * Calls `fn(arg)` with `ctx` as the current run context (used by the executor). The caller must call
 * `leaveRunContext()` once the returned promise settles: the context stays available to the
 * tool's code until then.
 */
export function enterRunContext<T, A>(ctx: RunContext<any>, fn: (arg: A) => Promise<T>, arg: A): Promise<T> {
  callsInFlight++;
  try {
    return storage.run(ctx, fn, arg);
  } catch (error) {
    leaveRunContext(false);
    throw error;
  }
}

/**
 * One call that entered its context has settled; `keepOn` when its run goes on and made calls
 * in an earlier turn too (see above).
 */
export function leaveRunContext(keepOn: boolean): void {
  if (--callsInFlight === 0 && !keepOn) storage.disable();
}

/** A run ended: with no call of any run still running, the context stops being tracked. */
export function runEnded(): void {
  if (callsInFlight === 0) storage.disable();
}
