/**
 * A server whose PostgreSQL is down (`pg_ctl stop -m immediate`) when a run is asked for: it
 * hands out a run — a 201 with its id, a chat's or a thread's stream, an A2A task — only once the
 * run's start is stored. A store that does not come back within the run's `storeWaitMs` is a
 * `503 store_unavailable` (A2A: a JSON-RPC error), and nothing is left in the store.
 */
import { createServer, type Serving, serve } from "quiver-agents/server";
import { PostgresStore } from "quiver-agents/store";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type PostgresCluster, startPostgresCluster } from "../store/postgres-cluster.js";
import { agentWith } from "./helpers.js";

let cluster: PostgresCluster;
let count = 0;
let down = false;
const servings: Serving[] = [];
const stores: PostgresStore[] = [];

beforeAll(async () => {
  cluster = await startPostgresCluster({ durable: true });
}, 60_000);
afterEach(async () => {
  if (down) await cluster.restart();
  down = false;
  for (const serving of servings.splice(0)) await serving.close();
  await Promise.all(stores.splice(0).map((store) => store.close().catch(() => {})));
});
afterAll(async () => {
  await cluster?.stop();
});

/** A served agent on a store of a schema of its own, its tables made while the database is up. */
async function start(storeWaitMs: number, a2a = false) {
  const store = new PostgresStore({
    connectionString: cluster.connectionString,
    schema: `server_${++count}`,
    timeoutMs: 2_000,
  });
  stores.push(store);
  await store.listRuns();
  const turns = Array.from({ length: 5 }, () => ({ text: "hi there" }));
  const serving = await serve(
    createServer({ agent: agentWith(turns), store, runOptions: { storeWaitMs }, a2a, onError: () => {} }),
    { port: 0 },
  );
  servings.push(serving);
  const post = (path: string, body: unknown) =>
    fetch(`${serving.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  return { store, post };
}

async function crash() {
  await cluster.crash();
  down = true;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A chat's request with its `n`th user message last (the earlier answers left out: the server reads them from the store). */
const chatBody = (id: string, n = 1) => ({
  id,
  messages: [{ id: `u${n}`, role: "user", parts: [{ type: "text", text: `hello ${n}` }] }],
});
const agUiBody = (threadId: string, n = 1) => ({
  threadId,
  runId: `r${n}`,
  messages: [{ id: `u${n}`, role: "user", content: `hello ${n}` }],
  tools: [],
  context: [],
  state: {},
  forwardedProps: {},
});

/** Starts a run while the database is up, and reads its response to the end. */
async function warm(post: (path: string, body: unknown) => Promise<Response>, path: string, body: unknown) {
  const response = await post(path, body);
  expect(response.status, path).toBeLessThan(300);
  await response.text();
}

describe("starting a run while Postgres is down", () => {
  it("a request that needs the store before its run can start (whose chat is it?) is answered 503 store_unavailable", async () => {
    const { store, post } = await start(400);
    await crash();
    for (const [path, body] of [
      ["/api/chat", chatBody("chat-new")],
      ["/api/ag-ui", agUiBody("thread-new")],
    ] as const) {
      const response = await post(path, body);
      expect(response.status, path).toBe(503);
      expect(await response.json(), path).toMatchObject({ error: { code: "store_unavailable" } });
    }
    await cluster.restart();
    down = false;
    expect(await store.listRuns()).toEqual([]);
  });

  it("a run of a session the server knows waits storeWaitMs for the store, then 503 store_unavailable: nothing handed out, nothing stored", async () => {
    const { store, post } = await start(400);
    const first = await post("/api/runs", { message: "hello" });
    const { sessionId } = (await first.json()) as { sessionId: string };
    await warm(post, "/api/chat", chatBody("chat-1"));
    await warm(post, "/api/ag-ui", agUiBody("thread-1"));
    while ((await store.listRuns()).some((r) => r.status === "running")) await sleep(20);
    const before = (await store.listRuns()).length;
    await crash();
    for (const [path, body] of [
      ["/api/runs", { message: "hello" }],
      ["/api/runs", { message: "hello again", sessionId }],
      ["/api/chat", chatBody("chat-1", 2)],
      ["/api/ag-ui", agUiBody("thread-1", 2)],
    ] as const) {
      const from = Date.now();
      const response = await post(path, body);
      expect(response.status, path).toBe(503);
      expect(await response.json(), path).toMatchObject({ error: { code: "store_unavailable" } });
      expect(Date.now() - from, path).toBeGreaterThanOrEqual(350);
    }
    await cluster.restart();
    down = false;
    expect((await store.listRuns()).length).toBe(before);
  });

  it("A2A message/send in a context the server knows answers a JSON-RPC error, not a task the store never held", async () => {
    const { store, post } = await start(400, true);
    const send = async (text: string, contextId?: string) => {
      const message = {
        kind: "message",
        messageId: `m-${text}`,
        role: "user",
        parts: [{ kind: "text", text }],
      };
      const response = await post("/a2a", {
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: { message: { ...message, ...(contextId && { contextId }) } },
      });
      return (await response.json()) as { result?: { contextId: string }; error?: { code: number } };
    };
    const first = await send("hi");
    expect(first.result).toBeDefined();
    const before = (await store.listRuns()).length;
    await crash();
    const answer = await send("hi again", first.result!.contextId);
    expect(answer.result).toBeUndefined();
    expect(answer.error?.code).toBe(-32603);
    await cluster.restart();
    down = false;
    expect((await store.listRuns()).length).toBe(before);
  });

  it("a database back within storeWaitMs: the run starts, and the 201 names a stored run", async () => {
    const { store, post } = await start(15_000);
    const first = await post("/api/runs", { message: "hello" });
    const { sessionId } = (await first.json()) as { sessionId: string };
    for (const body of [{ message: "hello" }, { message: "hello again", sessionId }]) {
      await crash();
      const back = sleep(800).then(() => cluster.restart());
      const response = await post("/api/runs", body);
      await back;
      down = false;
      expect(response.status).toBe(201);
      const { runId } = (await response.json()) as { runId: string };
      const stored = await store.read(runId);
      expect(stored[0]?.type).toBe("run_started");
    }
  });
});
