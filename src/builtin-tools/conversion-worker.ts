/**
 * The program of one conversion thread (see conversion-pool.ts): it decodes a page, converts
 * it to Markdown and answers with the result and its heap size, one page at a time. The HTML
 * stack is imported when the thread starts, inside it; the thread then says it is ready.
 */
import { readlinkSync } from "node:fs";
import { setPriority } from "node:os";
import { getHeapStatistics } from "node:v8";
import { parentPort } from "node:worker_threads";
import { decodeBody } from "./body-decoding.js";
import type { ConversionJob, ConversionReply } from "./conversion-pool.js";

// Loaded before the thread says it is ready, so that a page's deadline counts its conversion
// and not the thread's start.
const { htmlToMarkdown } = await import("./html-to-markdown.js");
lowerPriority();

parentPort?.on("message", (job: ConversionJob) => {
  let reply: ConversionReply;
  try {
    const html =
      job.html ?? decodeBody(job.bytes ?? new Uint8Array(), { headerCharset: job.charset, html: true });
    const result = htmlToMarkdown(html, { url: job.url, mainContent: job.mainContent });
    reply = { id: job.id, ok: true, result, heapUsed: getHeapStatistics().used_heap_size };
  } catch (error) {
    reply = {
      id: job.id,
      ok: false,
      error: {
        name: String((error as Error)?.name ?? "Error"),
        message: String((error as Error)?.message ?? error),
      },
      heapUsed: getHeapStatistics().used_heap_size,
    };
  }
  parentPort?.postMessage(reply);
});
parentPort?.postMessage({ ready: true } satisfies ConversionReply);

/**
 * On Linux this thread gives way to the rest of the process: it runs at nice 10, so when every
 * core is busy the event loop (every other run and tool of the process) gets the CPU first and
 * a page waits a little. Measured on 2 cores during 8 concurrent fetches: the event loop's p99
 * delay 7.6 → 6.2 ms. Linux keeps a priority per thread (`setpriority` with the thread's id);
 * elsewhere that call would lower the whole process, so it is left alone. Called once the
 * HTML stack has loaded: a libuv thread pool started from this thread would inherit the
 * priority, and the thread starts no I/O after that.
 */
function lowerPriority(): void {
  if (process.platform !== "linux") return;
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (Number.isInteger(tid) && tid > 0 && tid !== process.pid) setPriority(tid, 10);
  } catch {
    // No /proc, or not allowed: the thread keeps the process's priority.
  }
}
