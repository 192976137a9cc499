/**
 * How long web_fetch holds up the event loop, measured as users run it: the built `dist/`
 * (`quiver-agents/tools`' `HttpReader`) under plain node, with no loader thread and nothing
 * compiled on the fly (`BENCH_SOURCE=src` measures `src/` instead). The pages are served by a
 * local server in the same process, as bytes read once.
 *
 * - the first fetch of a process: it loads the network code and starts a conversion thread;
 * - `rounds` × 8 concurrent fetches (target: the longest stall ≤ 20 ms), then an idle loop
 *   for as long, which is what the machine itself adds.
 *
 * Called by bench/html-to-markdown.ts through `inChild()`; `stallDuring()` also serves
 * bench/hostile-pages.ts.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import {
  constants,
  monitorEventLoopDelay,
  type PerformanceEntry,
  PerformanceObserver,
} from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { collectGarbage, root } from "../harness.js";

export interface Stall {
  /** The longest event-loop delay, ms. */
  maxMs: number;
  p99Ms: number;
  /**
   * How long this thread was busy meanwhile (`eventLoopUtilization().active`), ms: the work
   * that could stall it, whatever else the machine runs. The local test server's share included.
   */
  busyMs: number;
  /** Garbage collections of this thread's heap meanwhile: young-generation ones (scavenges) and all. */
  gc: { scavenges: number; scavengeMs: number; longestMs: number; count: number; ms: number };
}

/** Runs `work` while measuring how late the event loop ran and how busy it was. */
export async function stallDuring(work: () => Promise<unknown>): Promise<Stall> {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  const entries: PerformanceEntry[] = [];
  const observer = new PerformanceObserver((list) => entries.push(...list.getEntries()));
  observer.observe({ entryTypes: ["gc"] });
  const before = performance.eventLoopUtilization();
  delay.enable();
  await work();
  delay.disable();
  const busyMs = performance.eventLoopUtilization(before).active;
  await new Promise((done) => setImmediate(done)); // the last GC entries are delivered
  entries.push(...observer.takeRecords());
  observer.disconnect();
  const minor = entries.filter(
    (e) => (e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR,
  );
  const gc = {
    scavenges: minor.length,
    scavengeMs: minor.reduce((sum, e) => sum + e.duration, 0),
    longestMs: Math.max(0, ...entries.map((e) => e.duration)),
    count: entries.length,
    ms: entries.reduce((sum, e) => sum + e.duration, 0),
  };
  return { maxMs: delay.max / 1e6, p99Ms: delay.percentile(99) / 1e6, busyMs, gc };
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

export type FetchStallResult = { first: Stall; concurrent: Stall; idle: Stall; rounds: number };

/** Child side: the stalls of the first fetch and of `rounds` × 8 concurrent fetches of the pages in `pages`. */
export async function fetchStall({ pages, rounds = 10 }: { pages: string; rounds?: number }) {
  const built = path.join(root, "dist/builtin-tools/index.js");
  if (process.env.BENCH_SOURCE !== "src" && !existsSync(built)) {
    throw new Error("dist/ is missing: run `npm run build` first");
  }
  const { HttpReader } = (await import(
    process.env.BENCH_SOURCE === "src" ? "quiver-agents/tools" : pathToFileURL(built).href
  )) as typeof import("quiver-agents/tools");
  const files = readdirSync(pages)
    .filter((f) => f.endsWith(".html"))
    .sort();
  const bodies = new Map(files.map((f) => [f, readFileSync(path.join(pages, f))]));
  const server = http.createServer((req, res) => {
    const page = bodies.get(path.basename(new URL(req.url ?? "/", "http://x").pathname));
    res.writeHead(page ? 200 : 404, { "content-type": "text/html; charset=utf-8" });
    res.end(page ?? "missing");
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const firstReader = new HttpReader({ allowHosts: ["127.0.0.1"], cacheTtlMs: 0 });
    const first = await stallDuring(() => firstReader.read(`${origin}/first/${files[0]}`));
    await firstReader.close();

    const reader = new HttpReader({ allowHosts: ["127.0.0.1"], cacheTtlMs: 0 });
    // One warm round, then what it left is collected: the stalls below are the fetches' own.
    await Promise.all(files.map((file, i) => reader.read(`${origin}/warm/${i}/${file}`)));
    collectGarbage();
    const started = performance.now();
    const concurrent = await stallDuring(async () => {
      for (let r = 0; r < rounds; r++) {
        await Promise.all(
          Array.from({ length: 8 }, (_, i) => reader.read(`${origin}/${r}/${i}/${files[i % files.length]}`)),
        );
      }
    });
    const idle = await stallDuring(() => sleep(performance.now() - started));
    await reader.close();
    return { first, concurrent, idle, rounds } satisfies FetchStallResult;
  } finally {
    server.closeAllConnections();
    server.close();
  }
}
