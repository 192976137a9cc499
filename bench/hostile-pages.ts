/**
 * web_fetch against hostile pages (test/builtin-tools/hostile-pages.ts: deep nesting, unclosed
 * constructs, token storms, 1 MB shapes that make a parser or a regex go super-linear), each
 * read from a local server with the default reader: its outcome (converted, or the tool error
 * a model would see), its time, and the longest event-loop stall while it converted, beside
 * the idle loop's own stall measured for as long. Target: ≤ 20 ms for every page.
 *
 *   npx tsx bench/hostile-pages.ts
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { HttpReader } from "../src/builtin-tools/http-reader.js";
import { hostilePages } from "../test/builtin-tools/hostile-pages.js";
import { type Stall, stallDuring } from "./workloads/fetch-stall.js";

const STALL_TARGET_MS = 20;

export interface HostileResult {
  page: string;
  kb: number;
  ms: number;
  outcome: string;
  stall: Stall;
}

export async function main(options: { log?: (line: string) => void } = {}) {
  const log = options.log ?? console.log;
  const pages = hostilePages();
  const bodies = new Map(pages.map((p, i) => [`/${i}`, p.html]));
  const server = http.createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(bodies.get(req.url ?? "") ?? "<p>warm</p>");
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const reader = new HttpReader({ allowHosts: ["127.0.0.1"], cacheTtlMs: 0, maxBytes: 2_000_000 });
  await reader.read(`${origin}/warm`); // network stack loaded and a conversion thread started

  const results: HostileResult[] = [];
  let busyMs = 0;
  try {
    for (const [i, page] of pages.entries()) {
      let outcome = "";
      const started = performance.now();
      const stall = await stallDuring(async () => {
        try {
          const { text } = await reader.read(`${origin}/${i}`);
          const kept =
            page.keeps === undefined ? "" : text.includes(page.keeps) ? ", text kept" : ", TEXT LOST";
          outcome = `converted: ${text.length.toLocaleString("en-US")} chars${kept}`;
        } catch (error) {
          outcome = `tool error: ${(error as Error).message}`;
        }
      });
      const ms = performance.now() - started;
      busyMs += ms;
      results.push({
        page: page.name,
        kb: Math.round(Buffer.byteLength(page.html) / 1000),
        ms,
        outcome,
        stall,
      });
    }
  } finally {
    server.closeAllConnections();
    server.close();
  }
  const idle = await stallDuring(() => new Promise((done) => setTimeout(done, Math.min(busyMs, 20_000))));
  const longest = Math.max(...results.map((r) => r.stall.maxMs));

  log(
    `web_fetch on ${results.length} hostile pages (HttpReader defaults; conversion deadline 10 s), Node ${process.version}`,
  );
  log("page                                         KB        ms  stall ms   busy ms  outcome");
  for (const r of results) {
    log(
      `${r.page.padEnd(42)} ${String(r.kb).padStart(5)} ${r.ms.toFixed(0).padStart(9)} ${r.stall.maxMs.toFixed(1).padStart(9)} ${r.stall.busyMs.toFixed(1).padStart(9)}  ${r.outcome}`,
    );
  }
  log(
    "busy ms: how long the event loop's thread worked during the read, in all (the local server's share included); the conversion itself runs on its own thread.",
  );
  log(
    `longest event-loop stall: ${longest.toFixed(1)} ms (target ≤ ${STALL_TARGET_MS} ms: ${longest <= STALL_TARGET_MS ? "met" : "missed"}); the idle loop for ${(Math.min(busyMs, 20_000) / 1000).toFixed(1)} s on this machine now: ${idle.maxMs.toFixed(1)} ms (p99 ${idle.p99Ms.toFixed(1)} ms)`,
  );
  return {
    pages: results,
    longestStallMs: longest,
    idleStallMs: idle.maxMs,
    met: longest <= STALL_TARGET_MS,
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  await main();
}
