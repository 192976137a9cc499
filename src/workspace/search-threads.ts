import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { ToolError } from "../errors.js";
import type { SearchRequest, SearchResult } from "./grep-search.js";

// The worker runs the compiled module next to this one. From the TypeScript sources (tests,
// tsx) it is the .ts file, loaded through tsx's API (a worker's `--import` comes too late on
// Node 20 for its entry module).
const ext = path.extname(fileURLToPath(import.meta.url));
const WORKER_URL = new URL(`./grep-worker${ext}`, import.meta.url).href;
const BOOTSTRAP =
  ext === ".ts"
    ? `import(${JSON.stringify(tsxApi())}).then((api) => api.register()).then(() => import(${JSON.stringify(WORKER_URL)}))`
    : `import(${JSON.stringify(WORKER_URL)})`;

/** tsx's register API as resolved from this file (the worker's own base would be the working directory). */
function tsxApi(): string {
  try {
    // `require` resolves the CommonJS build; the worker imports the ES module beside it.
    const esm = createRequire(import.meta.url)
      .resolve("tsx/esm/api")
      .replace(/\.cjs$/, ".mjs");
    if (existsSync(esm)) return pathToFileURL(esm).href;
  } catch {}
  return "tsx/esm/api";
}
/** Idle threads kept for the next search (starting one costs tens of milliseconds). */
const MAX_IDLE = 2;
const idle: Worker[] = [];

function startThread(): Worker {
  const worker = new Worker(BOOTSTRAP, { eval: true });
  // An idle search thread never keeps the process alive.
  worker.unref();
  return worker;
}

/**
 * Runs the Node search on a worker thread, so a slow pattern never holds the run's event loop:
 * an abort (cancel, the call's timeout) or `timeLimitMs` terminates the thread, which really
 * stops the search. Threads are reused one search at a time.
 */
export function searchOnThread(
  request: SearchRequest,
  signal: AbortSignal | undefined,
  timeLimitMs: number,
): Promise<SearchResult> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const worker = idle.pop() ?? startThread();
    worker.ref();
    let settled = false;
    const settle = (reusable: boolean, fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      worker.off("message", onMessage);
      worker.off("error", onError);
      worker.off("exit", onExit);
      worker.unref();
      if (reusable && idle.length < MAX_IDLE) idle.push(worker);
      else void worker.terminate();
      fn();
    };
    const onAbort = () => settle(false, () => reject(signal!.reason));
    const onMessage = (message: { ok: boolean; result?: SearchResult; message?: string }) =>
      settle(true, () =>
        message.ok
          ? resolve(message.result!)
          : reject(new ToolError(`the search failed: ${message.message}`)),
      );
    const onError = (error: Error) =>
      settle(false, () => reject(new ToolError(`the search failed: ${error.message}`)));
    const onExit = (code: number) =>
      settle(false, () =>
        reject(new ToolError(`the search thread stopped unexpectedly (exit code ${code})`)),
      );
    const timer = setTimeout(
      () =>
        settle(false, () =>
          reject(
            new ToolError(
              `the search took longer than ${timeLimitMs.toLocaleString("en-US")} ms and was stopped`,
              {
                hint: "Narrow it with path or glob, or simplify the pattern (nested quantifiers such as (a+)+ can take exponential time).",
              },
            ),
          ),
        ),
      timeLimitMs,
    );
    signal?.addEventListener("abort", onAbort, { once: true });
    worker.on("message", onMessage);
    worker.on("error", onError);
    worker.on("exit", onExit);
    worker.postMessage(request);
  });
}
