/**
 * The program of one conversion thread (see conversion-pool.ts): it decodes a page, converts
 * it to Markdown and answers with the result and its heap size, one page at a time. The HTML
 * stack is imported when the thread starts, inside it; the thread then says it is ready.
 */
import { getHeapStatistics } from "node:v8";
import { parentPort } from "node:worker_threads";
import { decodeBody } from "./body-decoding.js";
import type { ConversionJob, ConversionReply } from "./conversion-pool.js";

// Loaded before the thread says it is ready, so that a page's deadline counts its conversion
// and not the thread's start.
const { htmlToMarkdown } = await import("./html-to-markdown.js");

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
