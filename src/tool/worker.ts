import { Worker } from "node:worker_threads";
import type { RunContext } from "../contract/run-context.js";
import { ToolError } from "../errors.js";

/**
 * Runs a tool's `execute` on its own worker thread, so a CPU-heavy tool neither blocks the
 * event loop nor outlives its timeout: when the attempt's signal aborts (timeout or cancel)
 * the thread is terminated, really stopping the work.
 *
 * JavaScript cannot move a closure to another thread, so the function is sent as source text
 * and must be self-contained: it sees its arguments and a context with the run's ids and
 * `update()`, and loads what it needs with `await import(...)`. Arguments and the return value
 * cross the thread boundary by structured clone.
 */
export function runInWorker(source: string, args: unknown, ctx: RunContext): Promise<unknown> {
  return new Promise((resolve, reject) => {
    if (ctx.signal.aborted) return reject(ctx.signal.reason);
    const worker = new Worker(WORKER_MAIN, {
      eval: true,
      workerData: {
        source,
        args,
        ctx: {
          runId: ctx.runId,
          toolCallId: ctx.toolCallId,
          attempt: ctx.attempt,
          idempotencyKey: ctx.idempotencyKey,
          sessionId: ctx.sessionId,
          userId: ctx.userId,
          agent: ctx.agent,
          turn: ctx.turn,
        },
      },
    });
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      ctx.signal.removeEventListener("abort", onAbort);
      fn();
      void worker.terminate();
    };
    const onAbort = () => settle(() => reject(ctx.signal.reason));
    ctx.signal.addEventListener("abort", onAbort, { once: true });
    worker.on(
      "message",
      (message: {
        kind: "update" | "result" | "error";
        value?: unknown;
        message?: string;
        name?: string;
      }) => {
        if (message.kind === "update") ctx.update(message.value);
        else if (message.kind === "result") settle(() => resolve(message.value));
        else settle(() => reject(workerError(message)));
      },
    );
    worker.on("error", (error) => settle(() => reject(error)));
    worker.on("exit", (code) =>
      settle(() => reject(new Error(`the tool's worker thread exited with code ${code}`))),
    );
  });
}

function workerError(message: { message?: string; name?: string; hint?: string }): Error {
  if (message.name === "ToolError")
    return new ToolError(message.message ?? "tool error", { ...(message.hint && { hint: message.hint }) });
  const error = new Error(message.message ?? "tool failed in its worker thread");
  if (message.name) error.name = message.name;
  return error;
}

// The worker's whole program. It rebuilds the function from its source: a function
// expression (`async ({ n }) => …`, `function f() {}`) or a method (`execute(args) {}`).
const WORKER_MAIN = `
const { parentPort, workerData } = require("node:worker_threads");
const { source, args, ctx } = workerData;
function rebuild(src) {
  try { return (0, eval)("(" + src + ")"); } catch (e) {
    if (!(e instanceof SyntaxError)) throw e;
    const holder = (0, eval)("({" + src + "})");
    return Object.values(holder)[0];
  }
}
(async () => {
  try {
    const fn = rebuild(source);
    const value = await fn(args, { ...ctx, update: (partial) => parentPort.postMessage({ kind: "update", value: partial }) });
    parentPort.postMessage({ kind: "result", value });
  } catch (error) {
    parentPort.postMessage({ kind: "error", name: error && error.name, message: error && error.message ? error.message : String(error), hint: error && error.hint });
  }
})();
`;
