/**
 * The bundled server over real sockets (the server in its own process, bench/server-host.mjs):
 *
 * - events per second through one SSE connection (`GET /api/runs/:id/events`), replaying a
 *   finished run and tailing a live one;
 * - time from `POST /api/chat` to the response's first byte, one request at a time.
 *
 * The server under load (200 concurrent chat streams beside the AI SDK's, 1,000 idle
 * subscribers) is in the results table: bench/workloads/server-load.ts.
 *
 *   npm run build && npx tsx bench/server.ts        (BENCH_SOURCE=src measures src/ under tsx)
 */
import { request as httpRequest } from "node:http";
import { fmt, median } from "./harness.js";
import { firstByte, type Host, startHost, startRun, stopHost } from "./workloads/server-load.js";

const EVENTS = 200_000;
const FIRST_BYTE_SAMPLES = 300;

/** Reads one run's event stream to its end; returns the events seen and the seconds from first byte to end. */
function drainEvents(port: number, runId: string): Promise<{ events: number; seconds: number }> {
  return new Promise((done, fail) => {
    const req = httpRequest({ host: "127.0.0.1", port, path: `/api/runs/${runId}/events` }, (res) => {
      let first = 0;
      let events = 0;
      let tail = "";
      res.on("data", (buf: Buffer) => {
        if (!first) first = performance.now();
        // Count frames by their "\nid: " starts without decoding every event.
        const text = tail + buf.toString("latin1");
        let at = text.indexOf("id: ");
        while (at >= 0) {
          events++;
          at = text.indexOf("id: ", at + 4);
        }
        tail = text.slice(-3);
      });
      res.on("end", () => done({ events, seconds: (performance.now() - first) / 1000 }));
    });
    req.on("error", fail);
    req.end();
  });
}

export async function main(): Promise<Record<string, number>> {
  // Each measure gets a fresh server process, so one's garbage is not the next one's memory.
  let host: Host = await startHost();
  try {
    // 1. Events per second through one SSE connection.
    const finished = await startRun(host.port, "talk", String(EVENTS));
    await drainEvents(host.port, finished); // at the run's own pace; the run has ended after it
    const replays: number[] = [];
    for (let i = 0; i < 3; i++) {
      const replay = await drainEvents(host.port, finished);
      replays.push(replay.events / replay.seconds);
    }
    const live = await drainEvents(host.port, await startRun(host.port, "talk", String(EVENTS)));
    const replayRate = median(replays);
    const liveRate = live.events / live.seconds;
    console.log(`one SSE connection, ${live.events} events of ~100 bytes:`);
    console.log(`  replay of a finished run (median of 3)   ${fmt(replayRate / 1000)} k events/s`);
    console.log(`  following a run from its start           ${fmt(liveRate / 1000)} k events/s`);
    await stopHost(host);

    // 2. POST /api/chat to first byte (the `hello` agent: one text delta).
    host = await startHost();
    for (let i = 0; i < 20; i++) await firstByte(host.port, -i - 1, "hello"); // warm-up
    const samples: number[] = [];
    for (let i = 0; i < FIRST_BYTE_SAMPLES; i++) samples.push(await firstByte(host.port, i, "hello"));
    const sorted = [...samples].sort((a, b) => a - b);
    const p95 = sorted[Math.floor(sorted.length * 0.95)]!;
    console.log(`POST /api/chat to first byte (${FIRST_BYTE_SAMPLES} sequential requests, fresh server):`);
    console.log(`  median ${fmt(median(samples), 2)} ms, p95 ${fmt(p95, 2)} ms`);
    return {
      replayEventsPerSecond: Math.round(replayRate),
      liveEventsPerSecond: Math.round(liveRate),
      firstByteMedianMs: Number(fmt(median(samples), 2)),
      firstByteP95Ms: Number(fmt(p95, 2)),
    };
  } finally {
    await stopHost(host);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main();
}
