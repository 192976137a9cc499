/**
 * A real provider over HTTP (issue 36): Quiver's `openai()` (Chat Completions) and the AI SDK's
 * `streamText` with `@ai-sdk/openai`, each reading the same bytes from a local server on
 * 127.0.0.1 that replays a recorded stream (test/fixtures/providers/openai-chat/text.jsonl, its
 * content deltas repeated to DELTAS), in one child process, interleaved. Quiver's side is what a
 * handler does: a new `Agent` per request over a model made once, `Runner.stream()` read event
 * by event. The cost is this process's CPU time (user + system: the server is another process)
 * per streamed delta; wall time is shown beside it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { compareTimed, fmt, inChild, loadQuiver, type Row, ratio, root } from "../harness.js";
import { install } from "./frameworks.js";

const DELTAS = 500;
const MODEL = "gpt-4.1-mini";

type StreamArgs = { samples: number };
type Side = { cpuUs: number; wallUs: number };
type StreamResult = { quiver: Side; aiSdk: Side; deltas: number; bytes: number };

/** The recorded stream, its content deltas repeated to `deltas`, as the body a server sends. */
export function replayBody(deltas: number): { body: string; text: string } {
  const lines = readFileSync(join(root, "test/fixtures/providers/openai-chat/text.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean);
  const content = (line: string) =>
    line === "[DONE]"
      ? undefined
      : (JSON.parse(line) as { choices: Array<{ delta?: { content?: string } }> }).choices[0]?.delta?.content;
  const first = lines[0]!;
  const deltaLines = lines.slice(1).filter((line) => content(line));
  const tail = lines.slice(1).filter((line) => !content(line));
  const out = [first];
  let text = "";
  for (let i = 0; i < deltas; i++) {
    const line = deltaLines[i % deltaLines.length]!;
    out.push(line);
    text += content(line);
  }
  out.push(...tail);
  return { body: out.map((line) => `data: ${line}\n\n`).join(""), text };
}

function startReplayServer(file: string): Promise<{ port: number; child: ChildProcess }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [resolve(root, "bench/replay-server.mjs"), file], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (text: string) => {
      out += text;
      if (out.includes("\n")) done({ port: (JSON.parse(out) as { port: number }).port, child });
    });
    child.once("exit", (code) => fail(new Error(`replay server exited with ${code}`)));
  });
}

/** CPU and wall time of `fn`, in ms. */
async function cpuAndWall(fn: () => Promise<unknown>): Promise<{ cpu: number; wall: number }> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  await fn();
  const used = process.cpuUsage(cpu);
  return { cpu: (used.user + used.system) / 1000, wall: performance.now() - started };
}

/** Child side: both clients against one replay server, interleaved. */
export async function providerStream({ samples }: StreamArgs): Promise<StreamResult> {
  const dir = mkdtempSync(join(tmpdir(), "quiver-bench-replay-"));
  const { body, text } = replayBody(DELTAS);
  writeFileSync(join(dir, "body.txt"), body);
  const server = await startReplayServer(join(dir, "body.txt"));
  try {
    const baseURL = `http://127.0.0.1:${server.port}/v1`;
    const { Agent, Runner } = await loadQuiver();
    const providers = (await import(
      process.env.BENCH_SOURCE === "src"
        ? "quiver-agents/providers"
        : pathToFileURL(join(root, "dist/providers/index.js")).href
    )) as typeof import("quiver-agents/providers");
    const model = providers.openai({ model: MODEL, apiKey: "bench", baseURL, maxRetries: 0 });
    const quiverOnce = async () => {
      const handle = Runner.stream(new Agent({ name: "bench", model }), "hi");
      let deltas = 0;
      let streamed = "";
      for await (const event of handle) {
        if (event.type === "text_delta") {
          deltas++;
          streamed += event.delta;
        }
      }
      await handle.result();
      return { deltas, text: streamed };
    };
    const aiSdk = (await import(pathToFileURL(join(root, "bench/frameworks/ai-sdk-openai.mjs")).href)) as {
      setup(options: {
        baseURL: string;
        model: string;
      }): Promise<() => Promise<{ deltas: number; text: string }>>;
    };
    const aiSdkOnce = await aiSdk.setup({ baseURL, model: MODEL });
    for (const [name, once] of [
      ["quiver", quiverOnce],
      ["ai-sdk", aiSdkOnce],
    ] as const) {
      const got = await once();
      if (got.deltas !== DELTAS || got.text !== text)
        throw new Error(`${name} read ${got.deltas} deltas (${got.text.length} chars) of ${DELTAS}`);
    }
    // Requests per sample: a sample of ~250 ms for the slower side; the same count for both.
    const probe = await cpuAndWall(async () => {
      for (let i = 0; i < 5; i++) await aiSdkOnce();
    });
    const requests = Math.max(3, Math.round((250 / probe.wall) * 5));
    const cpu = { quiver: 0, aiSdk: 0 };
    const wall: Record<"quiver" | "aiSdk", number[]> = { quiver: [], aiSdk: [] };
    const cpuMs = await compareTimed(
      {
        quiver: async () => {
          const t = await cpuAndWall(async () => {
            for (let i = 0; i < requests; i++) await quiverOnce();
          });
          wall.quiver.push(t.wall);
          return t.cpu;
        },
        aiSdk: async () => {
          const t = await cpuAndWall(async () => {
            for (let i = 0; i < requests; i++) await aiSdkOnce();
          });
          wall.aiSdk.push(t.wall);
          return t.cpu;
        },
      },
      { samples, warmups: 2 },
    );
    cpu.quiver = cpuMs.quiver;
    cpu.aiSdk = cpuMs.aiSdk;
    const perDelta = (ms: number) => (ms * 1000) / (requests * DELTAS);
    const medianWall = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1]!;
    return {
      quiver: { cpuUs: perDelta(cpu.quiver), wallUs: perDelta(medianWall(wall.quiver)) },
      aiSdk: { cpuUs: perDelta(cpu.aiSdk), wallUs: perDelta(medianWall(wall.aiSdk)) },
      deltas: DELTAS,
      bytes: Buffer.byteLength(body),
    };
  } finally {
    server.child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function rows(): Promise<Row[]> {
  if (!install()) return [];
  const r = await inChild<StreamResult>("workloads/provider-stream.ts", "providerStream", { samples: 11 });
  return [
    {
      workload: `W9 openai() over HTTP: ${r.deltas} streamed deltas per request (${fmt(r.bytes / 1024)} KB replayed)`,
      measure:
        "client CPU µs per delta: Runner.stream() read event by event, a new Agent per request (baseline column: AI SDK streamText + @ai-sdk/openai, fullStream read, interleaved)",
      quiver: fmt(r.quiver.cpuUs, 2),
      baseline: fmt(r.aiSdk.cpuUs, 2),
      ratio: ratio(r.quiver.cpuUs / r.aiSdk.cpuUs),
      target: "≤ 0.5× — half of it",
      met: r.quiver.cpuUs <= r.aiSdk.cpuUs / 2,
    },
    {
      workload: `W9 openai() over HTTP: ${r.deltas} streamed deltas per request`,
      measure: "wall µs per delta (same samples; the server runs beside it)",
      quiver: fmt(r.quiver.wallUs, 2),
      baseline: fmt(r.aiSdk.wallUs, 2),
      ratio: ratio(r.quiver.wallUs / r.aiSdk.wallUs),
    },
  ];
}
