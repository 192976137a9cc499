/**
 * What the server keeps of runs, in memory: finished runs (their attachments included) within a
 * byte budget, and at most `maxRunningRunsPerUser` running runs per user.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jsonSchema, type RunEvent, tool } from "quiver-agents";
import { createServer, type ServerOptions, type Serving, serve } from "quiver-agents/server";
import { type RunStore, SqliteStore } from "quiver-agents/store";
import { afterEach, describe, expect, it } from "vitest";
import { agentWith, eventually } from "./helpers.js";

const dirs: string[] = [];
const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of cleanup.splice(0)) await close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function start(options: ServerOptions): Promise<string> {
  const serving: Serving = await serve(createServer(options), { port: 0 });
  cleanup.push(() => serving.close());
  return serving.url;
}

function sqlite(): SqliteStore {
  const dir = mkdtempSync(join(tmpdir(), "quiver-retained-"));
  dirs.push(dir);
  const store = new SqliteStore({ path: join(dir, "runs.db") });
  cleanup.push(() => store.close());
  return store;
}

const auth = (request: Request) => request.headers.get("x-user");
const replies = (n: number) => agentWith(Array.from({ length: n }, () => ({ text: "got it" })));

/** About 1.3 MB of base64: a 1 MB file. */
function file(n: number): { type: "file"; data: string; mimeType: string; filename: string } {
  return {
    type: "file",
    data: Buffer.alloc(1_000_000, n).toString("base64"),
    mimeType: "application/pdf",
    filename: `f${n}.pdf`,
  };
}

function api(url: string, user: string) {
  const headers = { "content-type": "application/json", "x-user": user };
  return {
    start: (body: unknown) =>
      fetch(`${url}/api/runs`, { method: "POST", headers, body: JSON.stringify(body) }),
    get: (runId: string) => fetch(`${url}/api/runs/${runId}`, { headers }),
    events: (runId: string, after: number) =>
      fetch(`${url}/api/runs/${runId}/events`, { headers: { ...headers, "last-event-id": String(after) } }),
    chat: (id: string, text: string) =>
      fetch(`${url}/api/chat`, {
        method: "POST",
        headers,
        body: JSON.stringify({ id, messages: [{ id: "u1", role: "user", parts: [{ type: "text", text }] }] }),
      }),
    cancel: (runId: string) =>
      fetch(`${url}/api/runs/${runId}/cancel`, { method: "POST", headers, body: "{}" }),
  };
}

/** Starts a run with one file attached and waits for its end; returns its id. */
async function finishedRunWithFile(client: ReturnType<typeof api>, n: number): Promise<string> {
  const response = await client.start({ content: [{ type: "text", text: `file ${n}` }, file(n)] });
  expect(response.status).toBe(201);
  const { runId } = (await response.json()) as { runId: string };
  await eventually(
    async () => ((await (await client.get(runId)).json()) as { status: string }).status === "completed",
  );
  return runId;
}

/** The events of a finished run's stream after `after`. */
async function eventsOf(client: ReturnType<typeof api>, runId: string, after: number): Promise<RunEvent[]> {
  const text = await (await client.events(runId, after)).text();
  return text
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => JSON.parse(line.slice(6)) as RunEvent);
}

describe("finished runs are kept in memory within retainFinishedBytes", () => {
  it("without a store, the oldest runs' attachments go once the budget is full; the newest stay", async () => {
    const url = await start({ agent: replies(4), auth, retainFinishedBytes: 3_000_000 });
    const bob = api(url, "bob");
    const runs: string[] = [];
    for (let n = 1; n <= 4; n++) runs.push(await finishedRunWithFile(bob, n));
    // Two runs of 1.3 MB fit in 3 MB: the first two are gone (nothing else holds them).
    expect((await bob.get(runs[0]!)).status).toBe(404);
    expect((await bob.get(runs[1]!)).status).toBe(404);
    expect((await bob.get(runs[2]!)).status).toBe(200);
    const [started] = await eventsOf(bob, runs[3]!, 0);
    expect(started).toMatchObject({ type: "run_started" });
    const input = (started as Extract<RunEvent, { type: "run_started" }>).input;
    expect(JSON.stringify(input)).toContain(file(4).data);
  });

  it("without a store, the most recent run stays even when it alone is over the budget", async () => {
    const url = await start({ agent: replies(1), auth, retainFinishedBytes: 100_000 });
    const bob = api(url, "bob");
    const runId = await finishedRunWithFile(bob, 1);
    expect((await bob.get(runId)).status).toBe(200);
    expect((await eventsOf(bob, runId, 0)).at(-1)).toMatchObject({ type: "run_completed" });
  });

  it("with a store, a run over the budget is read back from the store: replay and Last-Event-ID work", async () => {
    const store = sqlite();
    const reads: string[] = [];
    const counting = new Proxy(store, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver);
        if (key === "read")
          return (runId: string, after?: number) => {
            reads.push(runId);
            return target.read(runId, after);
          };
        return typeof value === "function" ? value.bind(target) : value;
      },
    }) as RunStore;
    const url = await start({ agent: replies(4), auth, store: counting, retainFinishedBytes: 3_000_000 });
    const bob = api(url, "bob");
    const runs: string[] = [];
    for (let n = 1; n <= 4; n++) runs.push(await finishedRunWithFile(bob, n));
    reads.length = 0;

    // The first run left memory: asking for it reads the store, and it comes back whole.
    expect(await (await bob.get(runs[0]!)).json()).toMatchObject({ status: "completed" });
    expect(reads).toContain(runs[0]);
    const all = await eventsOf(bob, runs[0]!, 0);
    expect(all[0]).toMatchObject({ type: "run_started" });
    expect(JSON.stringify(all[0])).toContain(file(1).data);
    const after = await eventsOf(bob, runs[0]!, 1);
    expect(after[0]!.seq).toBe(2);
    expect(after.at(-1)).toMatchObject({ type: "run_completed", output: "got it" });
    // The latest one is still in memory.
    reads.length = 0;
    expect((await bob.get(runs[3]!)).status).toBe(200);
    expect(reads).not.toContain(runs[3]);
  });
});

describe("maxRunningRunsPerUser", () => {
  /** A tool that holds its run until it is cancelled. */
  const hold = tool({
    name: "hold",
    description: "Waits until cancelled.",
    parameters: jsonSchema<Record<string, never>>({ type: "object", properties: {} }),
    execute: (_args, ctx) =>
      new Promise<string>((resolve) => ctx.signal.addEventListener("abort", () => resolve("stopped"))),
  });
  const holding = () =>
    agentWith(
      Array.from({ length: 20 }, () => ({ toolCalls: [{ name: "hold", args: {} }] })),
      [hold],
    );

  it("a user's start beyond the cap is a 429 on every route; other users are not held up", async () => {
    const url = await start({ agent: holding(), auth, maxRunningRunsPerUser: 2 });
    const alice = api(url, "alice");
    const first = (await (await alice.start({ message: "one" })).json()) as { runId: string };
    expect((await alice.start({ message: "two" })).status).toBe(201);

    const third = await alice.start({ message: "three" });
    expect(third.status).toBe(429);
    expect(await third.json()).toMatchObject({
      error: { code: "too_many_runs", message: expect.stringMatching(/you have 2 runs running/) },
    });
    expect((await alice.chat("c1", "three")).status).toBe(429);
    expect((await api(url, "bob").start({ message: "mine" })).status).toBe(201);

    // Once one of hers ends, she may start another.
    expect((await alice.cancel(first.runId)).status).toBe(202);
    await eventually(
      async () => ((await (await alice.get(first.runId)).json()) as { status: string }).status !== "running",
    );
    expect((await alice.start({ message: "three again" })).status).toBe(201);
  });

  it("a server without per-user auth has one caller, and does not count its runs", async () => {
    const url = await start({ agent: holding(), maxRunningRunsPerUser: 1 });
    const me = api(url, "ignored");
    expect((await me.start({ message: "one" })).status).toBe(201);
    expect((await me.start({ message: "two" })).status).toBe(201);
  });
});
