import { AsyncLocalStorage } from "node:async_hooks";
import type { RunContext } from "../../contract/run-context.js";

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
  if (!ctx) throw new Error("getRunContext() was called outside a tool call");
  return ctx as RunContext<Deps>;
}

// On Node 20 an enabled AsyncLocalStorage puts hooks on every promise in the process (measured:
// ~35 % of the loop's time when left on), and switching it on and off costs ~1 µs each time.
// It is enabled when a tool call starts and stays on while a run that made calls goes on (its
// model turns then pay the hooks, less than switching per call); it goes off once no call is
// running when a run ends — or when a call outlives its run.
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

/** One call that entered its context has settled; `runOpen` when its run goes on. */
export function leaveRunContext(runOpen: boolean): void {
  if (--callsInFlight === 0 && !runOpen) storage.disable();
}

/** A run ended: with no call of any run still running, the context stops being tracked. */
export function runEnded(): void {
  if (callsInFlight === 0) storage.disable();
}
