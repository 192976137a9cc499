/**
 * The server that bench/server.ts and bench/workloads/server-load.ts measure, in a process of
 * its own so its memory is its own: `node --expose-gc bench/server-host.mjs` prints `{ "port": N }`
 * once listening. Plain JavaScript on the built dist/ (like the AI SDK's host it is compared
 * with, bench/frameworks/ai-sdk-chat-host.mjs): a loader such as tsx would add its own thread
 * and memory. `BENCH_SOURCE=src` (the parent then starts it under tsx) loads src/ instead.
 *
 * Agents: `chat` (the default) calls `add` once, then streams CHAT_DELTAS text deltas (default
 * 200), from a model made once; `talk` streams as many 20-character text deltas as its message
 * says; `wait` calls a tool that waits until the process exits (a run that stays running);
 * `hello` answers at once. `GET /bench/memory` collects garbage and reports the process's memory.
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";

const root = join(import.meta.dirname, "..");
const [q, s] =
  process.env.BENCH_SOURCE === "src"
    ? [await import(join(root, "src/index.ts")), await import(join(root, "src/server/index.ts"))]
    : [
        await import(pathToFileURL(join(root, "dist/index.js")).href),
        await import(pathToFileURL(join(root, "dist/server/index.js")).href),
      ];

const DELTAS = Number(process.env.CHAT_DELTAS ?? 200);
const words = Array.from({ length: DELTAS }, (_, i) => `word${i} `);
const usage = { inputTokens: 10, outputTokens: DELTAS, totalTokens: 10 + DELTAS };

const add = q.tool({
  name: "add",
  description: "Add two numbers.",
  parameters: z.object({ a: z.number(), b: z.number() }),
  execute: async ({ a, b }) => a + b,
});

/** Turn 1: one `add` call; turn 2 (after the tool's result): DELTAS text deltas. */
const chat = new q.Agent({
  name: "chat",
  tools: [add],
  model: {
    name: "scripted",
    async *stream(request) {
      if (request.messages.at(-1)?.role !== "tool") {
        yield { type: "tool_call", index: 0, id: "call_1", name: "add", args: '{"a":1,"b":2}' };
        yield { type: "usage", usage };
        yield { type: "finish", reason: "tool_calls" };
        return;
      }
      for (const delta of words) yield { type: "text_delta", delta };
      yield { type: "usage", usage };
      yield { type: "finish", reason: "stop" };
    },
  },
});

const chunk = "abcdefghijklmnopqrs ";
const talk = new q.Agent({
  name: "talk",
  model: {
    name: "talk",
    async *stream(request) {
      const last = request.messages.at(-1);
      const n = Number(typeof last?.content === "string" ? last.content : 0) || 1;
      for (let i = 0; i < n; i++) yield { type: "text_delta", delta: chunk };
      yield { type: "finish", reason: "stop" };
    },
  },
});

const forever = new Promise(() => {});
const wait = new q.Agent({
  name: "wait",
  model: new q.ScriptedModel(
    Array.from({ length: 10_000 }, () => ({ toolCalls: [{ name: "hold", args: {} }] })),
    { record: false },
  ),
  tools: [
    q.tool({
      name: "hold",
      description: "Waits.",
      parameters: q.jsonSchema({ type: "object", properties: {} }),
      execute: async () => forever,
    }),
  ],
});

const hello = new q.Agent({
  name: "hello",
  model: {
    name: "hello",
    async *stream() {
      yield { type: "text_delta", delta: "hello" };
      yield { type: "finish", reason: "stop" };
    },
  },
});

const server = s.createServer({ agents: { chat, talk, wait, hello } });
server.app.get("/bench/memory", (c) => {
  // Twice: what the first collection finalizes, the second frees.
  globalThis.gc?.();
  globalThis.gc?.();
  const m = process.memoryUsage();
  return c.json(m);
});
const serving = await s.serve(server, { port: 0 });
process.stdout.write(`${JSON.stringify({ port: serving.port })}\n`);
