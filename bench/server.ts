/**
 * The bundled server over real sockets (the server in its own process, bench/server-host.ts):
 *
 * - events per second through one SSE connection (`GET /api/runs/:id/events`), replaying a
 *   finished run and tailing a live one;
 * - the server's memory with 1,000 idle clients connected to a running run's stream;
 * - time from `POST /api/chat` to the response's first byte.
 *
 *   npm run build && npx tsx bench/server.ts        (BENCH_SOURCE=src measures src/ under tsx)
 */
import { type ChildProcess, spawn } from "node:child_process";
import { request as httpRequest } from "node:http";
import { connect, type Socket } from "node:net";
import { resolve } from "node:path";
import { fmt, mb, median, root } from "./harness.js";

const EVENTS = 200_000;
const IDLE_CLIENTS = 1_000;
const FIRST_BYTE_SAMPLES = 300;

type Host = { port: number; child: ChildProcess };

function startHost(): Promise<Host> {
  return new Promise((done, fail) => {
    const child = spawn(
      process.execPath,
      ["--expose-gc", "--import", "tsx", resolve(import.meta.dirname, "server-host.ts")],
      { cwd: root, env: process.env, stdio: ["ignore", "pipe", "inherit"] },
    );
    let out = "";
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (text: string) => {
      out += text;
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line) done({ port: (JSON.parse(line) as { port: number }).port, child });
    });
    child.once("exit", (code) => fail(new Error(`server-host exited with ${code}`)));
  });
}

function call(
  port: number,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  return new Promise((done, fail) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port,
        method,
        path,
        headers: data
          ? { "content-type": "application/json", "content-length": Buffer.byteLength(data) }
          : {},
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          text += c;
        });
        res.on("end", () => done({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on("error", fail);
    req.end(data);
  });
}

async function startRun(port: number, agent: string, message: string): Promise<string> {
  const res = await call(port, "POST", "/api/runs", { agent, message });
  return (JSON.parse(res.text) as { runId: string }).runId;
}

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

async function memory(port: number): Promise<{ rss: number; heapUsed: number }> {
  return JSON.parse((await call(port, "GET", "/bench/memory")).text) as { rss: number; heapUsed: number };
}

function openIdle(port: number, runId: string): Promise<Socket> {
  return new Promise((done, fail) => {
    const socket = connect(port, "127.0.0.1", () => {
      socket.write(`GET /api/runs/${runId}/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    });
    socket.once("data", () => done(socket));
    socket.once("error", fail);
  });
}

/** Milliseconds from sending `POST /api/chat` to the first byte of the response. */
function firstByte(port: number, i: number): Promise<number> {
  return new Promise((done, fail) => {
    const body = JSON.stringify({
      id: `bench-${i}`,
      agent: "hello",
      messages: [{ id: `m${i}`, role: "user", parts: [{ type: "text", text: "hi" }] }],
    });
    const started = performance.now();
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/api/chat",
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        let took = 0;
        res.once("data", () => {
          took = performance.now() - started;
        });
        res.on("data", () => {});
        res.on("end", () => done(took));
      },
    );
    req.on("error", fail);
    req.end(body);
  });
}

export async function main(): Promise<Record<string, number>> {
  // Each measure gets a fresh server process, so one's garbage is not the next one's memory.
  let host = await startHost();
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
    host.child.kill();

    // 2. Memory with 1,000 idle clients on a running run's stream.
    host = await startHost();
    const running = await startRun(host.port, "wait", "hold on");
    const warm = await openIdle(host.port, running);
    const before = await memory(host.port);
    const sockets: Socket[] = [warm];
    for (let i = 0; i < IDLE_CLIENTS; i++) sockets.push(await openIdle(host.port, running));
    await new Promise((r) => setTimeout(r, 500));
    const after = await memory(host.port);
    const perClientKb = (after.rss - before.rss) / IDLE_CLIENTS / 1024;
    const heapPerClientKb = (after.heapUsed - before.heapUsed) / IDLE_CLIENTS / 1024;
    console.log(`${IDLE_CLIENTS} idle clients on one running run's stream (fresh server):`);
    console.log(
      `  RSS ${fmt(mb(before.rss))} -> ${fmt(mb(after.rss))} MB (${fmt(perClientKb)} kB per client); heap ${fmt(mb(before.heapUsed))} -> ${fmt(mb(after.heapUsed))} MB (${fmt(heapPerClientKb)} kB per client)`,
    );
    for (const socket of sockets) socket.destroy();
    host.child.kill();

    // 3. POST /api/chat to first byte.
    host = await startHost();
    for (let i = 0; i < 20; i++) await firstByte(host.port, -i - 1); // warm-up
    const samples: number[] = [];
    for (let i = 0; i < FIRST_BYTE_SAMPLES; i++) samples.push(await firstByte(host.port, i));
    const sorted = [...samples].sort((a, b) => a - b);
    const p95 = sorted[Math.floor(sorted.length * 0.95)]!;
    console.log(`POST /api/chat to first byte (${FIRST_BYTE_SAMPLES} sequential requests, fresh server):`);
    console.log(`  median ${fmt(median(samples), 2)} ms, p95 ${fmt(p95, 2)} ms`);
    return {
      replayEventsPerSecond: Math.round(replayRate),
      liveEventsPerSecond: Math.round(liveRate),
      idleClientRssKb: Number(fmt(perClientKb)),
      idleClientHeapKb: Number(fmt(heapPerClientKb)),
      firstByteMedianMs: Number(fmt(median(samples), 2)),
      firstByteP95Ms: Number(fmt(p95, 2)),
    };
  } finally {
    host.child.kill();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main();
}
