import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { ToolError } from "../errors.js";
import type { ConvertedHtml } from "./html-to-markdown.js";
import { shorten } from "./url.js";

/**
 * HTML → Markdown off the main thread. Parsing a page is synchronous JavaScript, so on the
 * main thread no timeout could stop it and every other run in the process would wait; here
 * each conversion runs on a worker thread with a hard deadline, and a conversion that misses
 * it (or whose read is cancelled) has its thread terminated: the work really stops.
 *
 * A small pool of threads is started on the first page and kept while in use; idle threads
 * do not keep the process alive and are ended after a minute. The HTML stack (linkedom,
 * Readability, mdream) loads inside the threads, never on the main thread.
 */

/** What a conversion works on: the page's bytes (decoded in the worker) or its text. */
export type ConversionInput =
  | { bytes: Uint8Array; charset?: string | undefined; html?: undefined }
  | { html: string; bytes?: undefined };

export interface ConversionOptions {
  /** The page's final URL: links resolve against it, and errors name it. */
  url: string;
  /** Extract the main content with Readability (default true). */
  mainContent?: boolean;
  /** The hard deadline for the conversion itself, once a thread has taken it. */
  timeoutMs: number;
  /** Aborts the conversion (queued or running); the promise rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
}

/** A message to a worker. */
export interface ConversionJob {
  id: number;
  url: string;
  mainContent: boolean;
  html?: string;
  bytes?: Uint8Array;
  charset?: string;
}

/** A worker's answer, or its first message: it has loaded the HTML stack. */
export type ConversionReply =
  | { ready: true }
  | { id: number; ok: true; result: ConvertedHtml; heapUsed: number }
  | { id: number; ok: false; error: { name: string; message: string }; heapUsed: number };

/** A thread is replaced after this many pages, or once its heap holds more than this. */
const RECYCLE_AFTER_JOBS = 500;
const RECYCLE_ABOVE_HEAP = 256 * 1024 * 1024;
/** An idle thread ends after this long. */
const IDLE_MS = 60_000;
/** By default, a page that needs more heap than this to convert fails instead of growing the process. */
const HEAP_LIMIT_MB = 512;

interface Pending {
  job: ConversionJob;
  transfer: ArrayBuffer[];
  options: ConversionOptions;
  resolve(value: ConvertedHtml): void;
  reject(error: unknown): void;
  onAbort?: () => void;
  slot?: Slot;
  timer?: NodeJS.Timeout;
}

interface Slot {
  worker: Worker;
  /** The thread has loaded the HTML stack and takes pages. */
  ready: boolean;
  /** The thread failed; its exit is expected. */
  failed?: boolean;
  jobs: number;
  current?: Pending | undefined;
  idleTimer?: NodeJS.Timeout | undefined;
}

/**
 * A pool of HTML → Markdown threads.
 *
 * @example
 * const pool = new ConversionPool(2);
 * const { markdown } = await pool.convert({ html: "<h1>Hi</h1>" }, { url: "https://example.com/", timeoutMs: 5_000 });
 */
export class ConversionPool {
  readonly size: number;
  /** The heap each thread may use (its old generation), in MB. */
  readonly heapLimitMb: number;
  readonly #idle: Slot[] = [];
  readonly #slots = new Set<Slot>();
  readonly #queue: Pending[] = [];
  #nextId = 1;

  constructor(size: number, options: { heapLimitMb?: number } = {}) {
    this.size = Math.max(1, Math.floor(size));
    this.heapLimitMb = options.heapLimitMb ?? HEAP_LIMIT_MB;
  }

  /** Converts one page. Rejects with a `ToolError` that names the page when it cannot. */
  convert(input: ConversionInput, options: ConversionOptions): Promise<ConvertedHtml> {
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<ConvertedHtml>((resolve, reject) => {
      const job: ConversionJob = {
        id: this.#nextId++,
        url: options.url,
        mainContent: options.mainContent ?? true,
      };
      const transfer: ArrayBuffer[] = [];
      if (input.bytes !== undefined) {
        // The bytes move to the thread instead of being copied; a view on a larger or shared
        // buffer is copied first, so the caller's other data never moves with it.
        const owned =
          input.bytes.byteOffset === 0 &&
          input.bytes.byteLength === input.bytes.buffer.byteLength &&
          input.bytes.buffer instanceof ArrayBuffer
            ? input.bytes
            : input.bytes.slice();
        job.bytes = owned;
        if (input.charset) job.charset = input.charset;
        transfer.push(owned.buffer as ArrayBuffer);
      } else {
        job.html = input.html;
      }
      const pending: Pending = { job, transfer, options, resolve, reject };
      if (signal) {
        pending.onAbort = () => this.#abort(pending);
        signal.addEventListener("abort", pending.onAbort, { once: true });
      }
      this.#queue.push(pending);
      this.#pump();
    });
  }

  /** Ends every thread; queued and running conversions reject. The pool starts new threads if used again. */
  async close(): Promise<void> {
    const error = new ToolError("the HTML conversion pool was closed");
    for (const pending of this.#queue.splice(0)) this.#settle(pending, error);
    const slots = [...this.#slots];
    for (const slot of slots) {
      if (slot.current) this.#settle(slot.current, error);
    }
    await Promise.all(slots.map((slot) => this.#retire(slot)));
  }

  #pump(): void {
    while (this.#queue.length > 0) {
      const slot = this.#idle.pop();
      if (slot) {
        this.#run(slot, this.#queue.shift()!);
        continue;
      }
      // Start threads for the pages that wait, up to the pool's size; each takes a page once ready.
      const starting = [...this.#slots].filter((s) => !s.ready).length;
      if (this.#slots.size >= this.size || starting >= this.#queue.length) return;
      try {
        this.#spawn();
      } catch (error) {
        const pending = this.#queue.shift()!;
        this.#settle(pending, toolError(pending.job.url, error, this.heapLimitMb));
      }
    }
  }

  #run(slot: Slot, pending: Pending): void {
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    slot.idleTimer = undefined;
    slot.current = pending;
    pending.slot = slot;
    // A running conversion keeps the process alive, as any pending I/O would.
    slot.worker.ref();
    const { timeoutMs, url } = pending.options;
    pending.timer = setTimeout(() => {
      this.#settle(
        pending,
        new ToolError(
          `converting ${shorten(url)} to Markdown timed out after ${timeoutMs.toLocaleString("en-US")} ms`,
          {
            hint: "The page is too large or too complex to convert; try a more specific page or another source.",
          },
        ),
      );
      void this.#retire(slot);
      this.#pump();
    }, timeoutMs);
    slot.worker.postMessage(pending.job, pending.transfer);
  }

  #spawn(): Slot {
    const worker = startWorker(this.heapLimitMb);
    const slot: Slot = { worker, ready: false, jobs: 0 };
    this.#slots.add(slot);
    // Starting keeps the process alive only while pages wait for it.
    if (this.#queue.length === 0) worker.unref();
    worker.on("message", (reply: ConversionReply) => {
      if ("ready" in reply) {
        slot.ready = true;
        this.#park(slot);
        this.#pump();
        return;
      }
      const pending = slot.current;
      if (!pending || pending.job.id !== reply.id) return;
      slot.current = undefined;
      slot.jobs++;
      if (reply.ok) this.#settle(pending, undefined, reply.result);
      else this.#settle(pending, toolError(pending.job.url, reply.error, this.heapLimitMb));
      if (slot.jobs >= RECYCLE_AFTER_JOBS || reply.heapUsed > RECYCLE_ABOVE_HEAP) void this.#retire(slot);
      else this.#park(slot);
      this.#pump();
    });
    worker.on("error", (error) => {
      // A thread that fails before it is ready fails the page that waits longest, so that a
      // broken installation is an error on every call rather than a wait.
      const victim = slot.current ?? (slot.ready ? undefined : this.#queue.shift());
      slot.failed = true;
      if (victim) this.#settle(victim, toolError(victim.job.url, error, this.heapLimitMb));
      void this.#retire(slot);
      this.#pump();
    });
    worker.on("exit", (code) => {
      const victim = slot.current ?? (slot.ready || slot.failed ? undefined : this.#queue.shift());
      if (victim) {
        this.#settle(
          victim,
          new ToolError(
            `the thread converting ${shorten(victim.job.url)} to Markdown stopped (exit code ${code})`,
          ),
        );
      }
      this.#forget(slot);
      this.#pump();
    });
    return slot;
  }

  /** An idle thread waits for the next page without keeping the process alive. */
  #park(slot: Slot): void {
    slot.worker.unref();
    slot.idleTimer = setTimeout(() => void this.#retire(slot), IDLE_MS);
    slot.idleTimer.unref();
    this.#idle.push(slot);
  }

  #forget(slot: Slot): void {
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    this.#slots.delete(slot);
    const at = this.#idle.indexOf(slot);
    if (at !== -1) this.#idle.splice(at, 1);
  }

  async #retire(slot: Slot): Promise<void> {
    this.#forget(slot);
    slot.current = undefined;
    await slot.worker.terminate().catch(() => {});
  }

  #abort(pending: Pending): void {
    const reason = pending.options.signal?.reason;
    const queued = this.#queue.indexOf(pending);
    if (queued !== -1) this.#queue.splice(queued, 1);
    const slot = pending.slot;
    this.#settle(pending, reason ?? new Error("aborted"));
    // The thread may be deep inside a parse: stop it for real.
    if (slot && queued === -1) {
      void this.#retire(slot);
      this.#pump();
    }
  }

  #settle(pending: Pending, error: unknown, value?: ConvertedHtml): void {
    if (pending.timer) clearTimeout(pending.timer);
    pending.timer = undefined;
    if (pending.onAbort) pending.options.signal?.removeEventListener("abort", pending.onAbort);
    pending.onAbort = undefined;
    if (pending.slot?.current === pending) pending.slot.current = undefined;
    const { resolve, reject } = pending;
    // Settle once: later calls (a deadline racing a reply) find no-ops.
    pending.resolve = () => {};
    pending.reject = () => {};
    if (error === undefined) resolve(value!);
    else reject(error);
  }
}

let shared: ConversionPool | undefined;

/**
 * The process-wide pool web_fetch uses: one thread fewer than the cores (one at least, four
 * at most), so that the event loop's thread always has a core to itself.
 */
export function sharedConversionPool(): ConversionPool {
  shared ??= new ConversionPool(Math.max(1, Math.min(4, availableParallelism() - 1)));
  return shared;
}

/** A failure inside a thread, as a tool error that says what happened to which page. */
function toolError(url: string, error: unknown, heapLimitMb: number): ToolError {
  if (error instanceof ToolError) return error;
  const name = (error as { name?: unknown })?.name;
  const code = (error as { code?: unknown })?.code;
  const message = String((error as { message?: unknown })?.message ?? error);
  if (name === "RangeError" && /call stack/i.test(message)) {
    return new ToolError(`could not convert ${shorten(url)} to Markdown: the page is nested too deeply`, {
      hint: "The page's structure is too deep to read; try another source.",
    });
  }
  if (code === "ERR_WORKER_OUT_OF_MEMORY") {
    return new ToolError(
      `could not convert ${shorten(url)} to Markdown: it needed more than ${heapLimitMb} MB of memory`,
      {
        hint: "The page is too large or too complex to convert; try a more specific page or another source.",
      },
    );
  }
  return new ToolError(`could not convert ${shorten(url)} to Markdown: ${shorten(message, 300)}`, {
    hint: "The page could not be read as HTML; try another source.",
  });
}

/**
 * Starts one thread. From the built package the worker is a plain module beside this one;
 * from the TypeScript sources (tests, tsx) it is loaded through tsx's module hooks, which
 * the thread registers first.
 */
function startWorker(heapLimitMb: number): Worker {
  const resourceLimits = { maxOldGenerationSizeMb: heapLimitMb };
  if (!import.meta.url.endsWith(".ts")) {
    return new Worker(new URL("./conversion-worker.js", import.meta.url), { resourceLimits });
  }
  const entry = new URL("./conversion-worker.ts", import.meta.url).href;
  const loader = tsxModuleApi();
  const code =
    `import(${JSON.stringify(loader)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); })` +
    ".catch((error) => { setImmediate(() => { throw error; }); });";
  return new Worker(code, { eval: true, resourceLimits });
}

let tsxApi: string | undefined;

/** The file URL of tsx's ESM API (its `register()`), found through its package exports. */
function tsxModuleApi(): string {
  if (tsxApi) return tsxApi;
  try {
    const require = createRequire(import.meta.url);
    const manifest = require.resolve("tsx/package.json");
    const exported = JSON.parse(readFileSync(manifest, "utf8")).exports?.["./esm/api"]?.import;
    const target = typeof exported === "string" ? exported : exported?.default;
    if (typeof target !== "string") throw new Error("tsx/package.json has no ./esm/api export");
    tsxApi = pathToFileURL(path.join(path.dirname(manifest), target)).href;
    return tsxApi;
  } catch (error) {
    throw new Error(
      `converting HTML from the TypeScript sources needs tsx to load the worker thread (${(error as Error).message})`,
    );
  }
}
