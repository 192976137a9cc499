/**
 * The bundled server under load (issue 36), every server in a process of its own, under plain
 * `node` on dist/:
 *
 * - 200 concurrent `POST /api/chat` streams from a load generator in another process
 *   (bench/chat-load.mjs, plain node:http on 127.0.0.1): each run calls a tool once and streams
 *   200 text deltas; time to the stream's first byte p50/p99 and runs per second, beside the AI
 *   SDK's own chat route (`streamText(...).toUIMessageStreamResponse()` on Hono,
 *   bench/frameworks/ai-sdk-chat-host.mjs) with a model that streams the same, measured by the
 *   same generator, alternating servers;
 * - 1,000 idle SSE subscribers (`GET /api/runs/:id/events` on a run that stays running): the
 *   server's RSS and heap per subscriber, and how soon a new `POST /api/chat` gets its first
 *   byte while they wait.
 *
 * The helpers (starting a host, requests) serve bench/server.ts too.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { request as httpRequest } from "node:http";
import { connect, type Socket } from "node:net";
import { resolve } from "node:path";
import { fmt, median, type Row, ratio, root } from "../harness.js";
import { install } from "./frameworks.js";

const CONCURRENCY = 200;
const REQUESTS = 1_200;
const WARM_UP = 400;
const ROUNDS = 2;
const IDLE_CLIENTS = 1_000;
const NEW_REQUESTS = 20;
const WARM_UP_REQUESTS = 200;

export type Host = { port: number; child: ChildProcess };

/** Starts bench/server-host.mjs (plain node on dist/; under tsx for BENCH_SOURCE=src). */
export function startHost(env: NodeJS.ProcessEnv = {}, flags: string[] = []): Promise<Host> {
  const loader = process.env.BENCH_SOURCE === "src" ? ["--import", "tsx"] : [];
  return startProcess([...flags, ...loader, resolve(root, "bench/server-host.mjs")], env);
}

/** Starts `node --expose-gc <argv>` and resolves with the port it prints as `{ "port": N }`. */
export function startProcess(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<Host> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ["--expose-gc", ...argv], {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (text: string) => {
      out += text;
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line) done({ port: (JSON.parse(line) as { port: number }).port, child });
    });
    child.once("exit", (code) => fail(new Error(`${argv.at(-1)} exited with ${code}`)));
  });
}

/** Stops a host and waits until it has exited (its port and memory are free again). */
export function stopHost(host: Host): Promise<void> {
  return new Promise((done) => {
    if (host.child.exitCode !== null) return done();
    host.child.once("exit", () => done());
    host.child.kill();
  });
}

/** One request with a JSON body (or none); its status and text. */
export function call(
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

export async function startRun(port: number, agent: string, message: string): Promise<string> {
  const res = await call(port, "POST", "/api/runs", { agent, message });
  return (JSON.parse(res.text) as { runId: string }).runId;
}

/** The host's memory after two full collections (`GET /bench/memory`). */
export async function memory(port: number): Promise<{ rss: number; heapUsed: number }> {
  return JSON.parse((await call(port, "GET", "/bench/memory")).text) as { rss: number; heapUsed: number };
}

/** A raw connection reading `GET /api/runs/:id/events`, once its first bytes arrived. */
export function openIdle(port: number, runId: string): Promise<Socket> {
  return new Promise((done, fail) => {
    const socket = connect(port, "127.0.0.1", () => {
      socket.write(`GET /api/runs/${runId}/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    });
    socket.once("data", () => done(socket));
    socket.once("error", fail);
  });
}

/** Milliseconds from sending `POST /api/chat` to the first byte of the response's body. */
export function firstByte(port: number, i: number, agent?: string): Promise<number> {
  return new Promise((done, fail) => {
    const body = JSON.stringify({
      id: `bench-${i}`,
      ...(agent && { agent }),
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

/** What bench/chat-load.mjs prints. */
type Load = {
  runsPerSecond: number;
  firstByteP50: number;
  firstByteP99: number;
  textDeltas: number;
  toolOutputs: number;
  bytes: number;
};

async function loadOn(host: Host): Promise<Load> {
  return new Promise((done, fail) => {
    const child = spawn(
      process.execPath,
      [
        resolve(root, "bench/chat-load.mjs"),
        String(host.port),
        String(CONCURRENCY),
        String(REQUESTS),
        String(WARM_UP),
      ],
      { cwd: root, stdio: ["ignore", "pipe", "inherit"] },
    );
    let out = "";
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (text: string) => {
      out += text;
    });
    child.once("exit", (code) =>
      code === 0 ? done(JSON.parse(out) as Load) : fail(new Error(`chat-load exited with ${code}`)),
    );
  });
}

/** Quiver's server and the AI SDK's, each fresh for every round, alternating. */
async function chatLoad(): Promise<{ quiver: Load[]; aiSdk: Load[] }> {
  const quiver: Load[] = [];
  const aiSdk: Load[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of ["quiver", "aiSdk"] as const) {
      const host =
        side === "quiver"
          ? await startHost()
          : await startProcess([resolve(root, "bench/frameworks/ai-sdk-chat-host.mjs")]);
      try {
        const load = await loadOn(host);
        if (load.textDeltas !== 200 || load.toolOutputs !== 1)
          throw new Error(
            `${side}: a response held ${load.textDeltas} text deltas, ${load.toolOutputs} tool outputs`,
          );
        (side === "quiver" ? quiver : aiSdk).push(load);
      } finally {
        await stopHost(host);
      }
    }
  }
  return { quiver, aiSdk };
}

/** 1,000 idle subscribers on a running run's stream, and new requests meanwhile. */
async function idleSubscribers(): Promise<{ rssKb: number; heapKb: number; newMs: number[] }> {
  const host = await startHost();
  const sockets: Socket[] = [];
  try {
    const running = await startRun(host.port, "wait", "hold on");
    sockets.push(await openIdle(host.port, running));
    // A server that has served traffic: V8's young generation has grown to its working size
    // (in a fresh process that growth, ~7 MB once, landed in the middle of the count or not).
    for (let i = 0; i < WARM_UP_REQUESTS; i++) await firstByte(host.port, -i - 1);
    const before = await memory(host.port);
    for (let i = 0; i < IDLE_CLIENTS; i++) sockets.push(await openIdle(host.port, running));
    await new Promise((r) => setTimeout(r, 500));
    const after = await memory(host.port);
    const newMs: number[] = [];
    for (let i = 0; i < NEW_REQUESTS; i++) newMs.push(await firstByte(host.port, i));
    return {
      rssKb: (after.rss - before.rss) / IDLE_CLIENTS / 1024,
      heapKb: (after.heapUsed - before.heapUsed) / IDLE_CLIENTS / 1024,
      newMs,
    };
  } finally {
    for (const socket of sockets) socket.destroy();
    await stopHost(host);
  }
}

export async function rows(): Promise<Row[]> {
  const out: Row[] = [];
  if (install()) {
    const { quiver, aiSdk } = await chatLoad();
    const q = {
      runs: median(quiver.map((l) => l.runsPerSecond)),
      p50: median(quiver.map((l) => l.firstByteP50)),
      p99: median(quiver.map((l) => l.firstByteP99)),
    };
    const a = {
      runs: median(aiSdk.map((l) => l.runsPerSecond)),
      p50: median(aiSdk.map((l) => l.firstByteP50)),
      p99: median(aiSdk.map((l) => l.firstByteP99)),
    };
    const what = `${CONCURRENCY} concurrent POST /api/chat streams (1 tool call + 200 text deltas per run; ${REQUESTS} runs after ${WARM_UP}, ${ROUNDS} rounds)`;
    const against =
      "baseline column: the AI SDK's streamText().toUIMessageStreamResponse() on Hono, same model and load";
    out.push(
      {
        workload: `S1 server: ${what}`,
        measure: `runs per second (median of rounds: ${quiver.map((l) => fmt(l.runsPerSecond, 0)).join(", ")} vs ${aiSdk.map((l) => fmt(l.runsPerSecond, 0)).join(", ")}; ${against})`,
        quiver: fmt(q.runs, 0),
        baseline: fmt(a.runs, 0),
        ratio: ratio(q.runs / a.runs),
        target: "≥ 2×",
        met: q.runs >= 2 * a.runs,
      },
      {
        workload: `S1 server: ${what}`,
        measure: `ms to the stream's first byte, p99 (${against})`,
        quiver: fmt(q.p99),
        baseline: fmt(a.p99),
        ratio: ratio(q.p99 / a.p99),
        target: "≤ 1× — no later than it",
        met: q.p99 <= a.p99,
      },
      {
        workload: `S1 server: ${what}`,
        measure: `ms to the stream's first byte, p50 (${against})`,
        quiver: fmt(q.p50),
        baseline: fmt(a.p50),
        ratio: ratio(q.p50 / a.p50),
      },
    );
  }
  const idle = await idleSubscribers();
  const slowest = Math.max(...idle.newMs);
  out.push(
    {
      workload: `S2 server: ${IDLE_CLIENTS} idle SSE subscribers (GET /api/runs/:id/events of a running run)`,
      measure: `server RSS per subscriber, KB, after ${WARM_UP_REQUESTS} chat requests of warm-up (V8 heap used: ${fmt(idle.heapKb)} KB per subscriber)`,
      quiver: fmt(idle.rssKb),
      target: "≤ 20 KB",
      met: idle.rssKb <= 20,
    },
    {
      workload: `S2 server: ${IDLE_CLIENTS} idle SSE subscribers`,
      measure: `a new POST /api/chat meanwhile: ms to its first byte, slowest of ${NEW_REQUESTS} (median ${fmt(median(idle.newMs), 2)})`,
      quiver: fmt(slowest, 2),
      target: "≤ 50 ms",
      met: slowest <= 50,
    },
  );
  return out;
}
