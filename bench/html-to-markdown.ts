/**
 * HTML → Markdown throughput of web_fetch's pipeline (linkedom → pre-pass → Readability →
 * @mdream/js) on the real pages in ../shared/fixtures/pages, plus fence() on the result.
 *
 *   npx tsx bench/html-to-markdown.ts
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { fence } from "../src/tools/fence.js";
import { htmlToMarkdown } from "../src/tools/html-to-markdown.js";

const PAGES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../shared/fixtures/pages");

export interface PageResult {
  page: string;
  bytes: number;
  msPerPage: number;
  mbPerSecond: number;
  markdownChars: number;
}

/** Converts each fixture page `rounds` times (after a warm-up) and reports MB/s of input HTML (median round). */
export function main(
  options: { rounds?: number; mainContent?: boolean; log?: (line: string) => void } = {},
): {
  pages: PageResult[];
  totalMbPerSecond: number;
  fenceMbPerSecond: number;
} {
  const rounds = options.rounds ?? 20;
  const log = options.log ?? console.log;
  const files = readdirSync(PAGES)
    .filter((f) => f.endsWith(".html"))
    .sort();
  const pages: PageResult[] = [];
  let totalBytes = 0;
  let totalMs = 0;
  let markdown = "";
  for (const file of files) {
    const html = readFileSync(path.join(PAGES, file), "utf8");
    const bytes = Buffer.byteLength(html);
    const url = `https://example.com/articles/${file}`;
    for (let i = 0; i < 3; i++) htmlToMarkdown(html, { url, mainContent: options.mainContent ?? true });
    // The median round, not the mean: on a shared machine a few rounds lose the CPU.
    const times: number[] = [];
    let out = "";
    for (let i = 0; i < rounds; i++) {
      const started = performance.now();
      out = htmlToMarkdown(html, { url, mainContent: options.mainContent ?? true }).markdown;
      times.push(performance.now() - started);
    }
    const ms = times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
    markdown += out;
    totalBytes += bytes;
    totalMs += ms;
    pages.push({
      page: file,
      bytes,
      msPerPage: ms,
      mbPerSecond: bytes / 1e6 / (ms / 1000),
      markdownChars: out.length,
    });
  }
  const totalMbPerSecond = totalBytes / 1e6 / (totalMs / 1000);

  const fenceInput = markdown.repeat(Math.max(1, Math.ceil(1_000_000 / Math.max(1, markdown.length))));
  fence(fenceInput);
  const fenceStarted = performance.now();
  for (let i = 0; i < 5; i++) fence(fenceInput);
  const fenceMbPerSecond = fenceInput.length / 1e6 / ((performance.now() - fenceStarted) / 5 / 1000);

  log(
    `HTML → Markdown (${options.mainContent === false ? "whole body" : "main content"}), ${rounds} rounds per page, Node ${process.version}`,
  );
  log("page                          KB  median ms    MB/s   markdown chars");
  for (const p of pages) {
    log(
      `${p.page.padEnd(28)} ${(p.bytes / 1000).toFixed(0).padStart(4)} ${p.msPerPage.toFixed(2).padStart(10)} ${p.mbPerSecond.toFixed(2).padStart(7)} ${String(p.markdownChars).padStart(16)}`,
    );
  }
  log(`all pages: ${totalMbPerSecond.toFixed(2)} MB/s`);
  log(
    `fence() on ${(fenceInput.length / 1e6).toFixed(1)} M chars of that Markdown: ${fenceMbPerSecond.toFixed(1)} MB/s`,
  );
  return { pages, totalMbPerSecond, fenceMbPerSecond };
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main({ rounds: Number(process.env.ROUNDS ?? 20) });
}
