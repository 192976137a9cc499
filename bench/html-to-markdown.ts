/**
 * web_fetch's HTML → Markdown on the real pages in ../shared/fixtures/pages (skipped, with a
 * message, when they are missing):
 *
 * - the converter alone (linkedom → pre-pass → Readability → @mdream/js) on this thread:
 *   median ms per page, MB/s and pages/s;
 * - through the conversion threads, as web_fetch runs it: pages/s and MB/s, 8 at a time;
 * - the longest event-loop stall (`monitorEventLoopDelay`) during 8 concurrent fetches from a
 *   local server (target ≤ 20 ms), beside the stall of an idle loop measured just after it
 *   (what the machine itself adds), and during the first fetch of a process: measured in a
 *   child on the built dist/ under plain node, as users run it (workloads/fetch-stall.ts);
 * - fence() on the resulting Markdown.
 *
 *   npm run build && npx tsx bench/html-to-markdown.ts
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { ConversionPool } from "../src/builtin-tools/conversion-pool.js";
import { fence } from "../src/builtin-tools/fence.js";
import { htmlToMarkdown } from "../src/builtin-tools/html-to-markdown.js";
import { compileWorkloads } from "./compile.js";
import { inChild } from "./harness.js";
import type { FetchStallResult } from "./workloads/fetch-stall.js";

const PAGES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../shared/fixtures/pages");
const STALL_TARGET_MS = 20;

export interface PageResult {
  page: string;
  bytes: number;
  msPerPage: number;
  mbPerSecond: number;
  markdownChars: number;
}

export async function main(options: { rounds?: number; log?: (line: string) => void } = {}) {
  const rounds = options.rounds ?? 20;
  const log = options.log ?? console.log;
  const files = existsSync(PAGES) ? readdirSync(PAGES).filter((f) => f.endsWith(".html")) : [];
  if (files.length === 0) {
    log(`skipped: no real pages in ${PAGES} (the shared corpus beside the checkout)`);
    return { skipped: true };
  }
  files.sort();
  const html = new Map(files.map((f) => [f, readFileSync(path.join(PAGES, f), "utf8")]));
  // The stalls are measured as users run web_fetch: dist/ under plain node (fetch-stall.ts).
  if (!process.env.BENCH_COMPILED) compileWorkloads();
  const {
    first,
    concurrent,
    idle,
    rounds: fetchRounds,
  } = await inChild<FetchStallResult>("workloads/fetch-stall.ts", "fetchStall", { pages: PAGES });
  const inline = convertInline(files, html, rounds);
  const pool = await throughPool(files, html, rounds);

  const markdown = inline.pages.map((p) => p.markdown).join("\n");
  const fenceInput = markdown.repeat(Math.max(1, Math.ceil(1_000_000 / Math.max(1, markdown.length))));
  fence(fenceInput);
  const fenceStarted = performance.now();
  for (let i = 0; i < 5; i++) fence(fenceInput);
  const fenceMbPerSecond = fenceInput.length / 1e6 / ((performance.now() - fenceStarted) / 5 / 1000);

  log(`HTML → Markdown on ${files.length} real pages, Node ${process.version}`);
  log("page                          KB  median ms    MB/s   markdown chars");
  for (const p of inline.pages) {
    log(
      `${p.page.padEnd(28)} ${(p.bytes / 1000).toFixed(0).padStart(4)} ${p.msPerPage.toFixed(2).padStart(10)} ${p.mbPerSecond.toFixed(2).padStart(7)} ${String(p.markdownChars).padStart(16)}`,
    );
  }
  log(
    `converter alone, this thread: ${inline.mbPerSecond.toFixed(2)} MB/s, ${inline.pagesPerSecond.toFixed(1)} pages/s`,
  );
  log(
    `through the conversion threads (${pool.threads}), 8 at a time: ${pool.mbPerSecond.toFixed(2)} MB/s, ${pool.pagesPerSecond.toFixed(1)} pages/s`,
  );
  log(
    `longest event-loop stall, ${fetchRounds} × 8 concurrent fetches: ${concurrent.maxMs.toFixed(1)} ms (p99 ${concurrent.p99Ms.toFixed(1)} ms; target ≤ ${STALL_TARGET_MS} ms: ${concurrent.maxMs <= STALL_TARGET_MS ? "met" : "missed"}); this thread busy ${(concurrent.busyMs / (fetchRounds * 8)).toFixed(2)} ms per fetch (server side included)`,
  );
  log(
    `  this thread's GCs meanwhile: ${concurrent.gc.scavenges} scavenges (${concurrent.gc.scavengeMs.toFixed(1)} ms), ${concurrent.gc.count} in all (${concurrent.gc.ms.toFixed(1)} ms), longest ${concurrent.gc.longestMs.toFixed(1)} ms`,
  );
  log(
    `  the idle loop for as long, on this machine now: ${idle.maxMs.toFixed(1)} ms (p99 ${idle.p99Ms.toFixed(1)} ms)`,
  );
  log(
    `  the first fetch of the process (loads the network code, starts a thread): ${first.maxMs.toFixed(1)} ms (p99 ${first.p99Ms.toFixed(1)} ms)`,
  );
  log(
    `fence() on ${(fenceInput.length / 1e6).toFixed(1)} M chars of that Markdown: ${fenceMbPerSecond.toFixed(1)} MB/s`,
  );
  await pool.close();
  return {
    pages: inline.pages.map(({ markdown: _markdown, ...p }) => p),
    totalMbPerSecond: inline.mbPerSecond,
    pagesPerSecond: inline.pagesPerSecond,
    pool: { threads: pool.threads, mbPerSecond: pool.mbPerSecond, pagesPerSecond: pool.pagesPerSecond },
    stall: { concurrent, idle, first, targetMs: STALL_TARGET_MS, met: concurrent.maxMs <= STALL_TARGET_MS },
    fenceMbPerSecond,
  };
}

/** Each page `rounds` times on this thread, after a warm-up; the median round (a shared machine loses some). */
function convertInline(files: string[], html: Map<string, string>, rounds: number) {
  const pages: Array<PageResult & { markdown: string }> = [];
  let bytes = 0;
  let ms = 0;
  for (const file of files) {
    const page = html.get(file)!;
    const url = `https://example.com/articles/${file}`;
    for (let i = 0; i < 3; i++) htmlToMarkdown(page, { url });
    const times: number[] = [];
    let markdown = "";
    for (let i = 0; i < rounds; i++) {
      const started = performance.now();
      markdown = htmlToMarkdown(page, { url }).markdown;
      times.push(performance.now() - started);
    }
    const median = times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
    const size = Buffer.byteLength(page);
    bytes += size;
    ms += median;
    pages.push({
      page: file,
      bytes: size,
      msPerPage: median,
      mbPerSecond: size / 1e6 / (median / 1000),
      markdownChars: markdown.length,
      markdown,
    });
  }
  return { pages, mbPerSecond: bytes / 1e6 / (ms / 1000), pagesPerSecond: files.length / (ms / 1000) };
}

/** `rounds` passes over the pages through a pool like web_fetch's, 8 conversions in flight. */
async function throughPool(files: string[], html: Map<string, string>, rounds: number) {
  const { sharedConversionPool } = await import("../src/builtin-tools/conversion-pool.js");
  const threads = sharedConversionPool().size;
  const pool = new ConversionPool(threads);
  const encoded = files.map((f) => new TextEncoder().encode(html.get(f)!));
  const convert = (i: number) =>
    pool.convert(
      { bytes: encoded[i % files.length]!.slice() },
      { url: `https://example.com/${files[i % files.length]}`, timeoutMs: 30_000 },
    );
  await Promise.all(files.map((_, i) => convert(i))); // threads started and warm
  const total = rounds * files.length;
  let next = 0;
  let bytes = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < total) {
        const i = next++;
        bytes += encoded[i % files.length]!.byteLength;
        await convert(i);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return {
    threads,
    mbPerSecond: bytes / 1e6 / seconds,
    pagesPerSecond: total / seconds,
    close: () => pool.close(),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  await main({ rounds: Number(process.env.ROUNDS ?? 20) });
}
