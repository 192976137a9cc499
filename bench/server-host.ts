/**
 * The server that bench/server.ts measures, in a process of its own so its memory is its own:
 * `node --expose-gc --import tsx bench/server-host.ts` prints `{ "port": N }` once listening.
 * Agents: `talk` streams as many 20-character text deltas as its message says; `wait` calls a
 * tool that waits until the process exits (a run that stays running); `hello` answers at once.
 * `GET /bench/memory` collects garbage and reports the process's memory.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { root } from "./harness.js";

type Quiver = typeof import("quiver-agents");
type Server = typeof import("quiver-agents/server");

async function load(): Promise<{ q: Quiver; s: Server }> {
  if (process.env.BENCH_SOURCE === "src")
    return { q: await import("quiver-agents"), s: await import("quiver-agents/server") };
  const entry = join(root, "dist/server/index.js");
  if (!existsSync(entry)) throw new Error("dist/server is missing: run `npm run build` first");
  return {
    q: await import(pathToFileURL(join(root, "dist/index.js")).href),
    s: await import(pathToFileURL(entry).href),
  };
}

const { q, s } = await load();
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

const forever = new Promise<void>(() => {});
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
      parameters: q.jsonSchema<Record<string, never>>({ type: "object", properties: {} }),
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

const server = s.createServer({ agents: { talk, wait, hello }, retainFinishedRuns: 2_000 });
server.app.get("/bench/memory", (c) => {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  return c.json({ rss: m.rss, heapUsed: m.heapUsed, external: m.external });
});
const serving = await s.serve(server, { port: 0 });
console.log(JSON.stringify({ port: serving.port }));
