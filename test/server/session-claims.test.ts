/**
 * A chat, session, thread or A2A context id becomes a caller's with the run that starts in it:
 * a request refused before its run started — by a check of the request, by the run itself, or
 * because the store did not take the start — leaves the id nobody's, on every route.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer, type ServerOptions, type Serving, serve } from "quiver-agents/server";
import { SqliteStore } from "quiver-agents/store";
import { afterEach, describe, expect, it } from "vitest";
import { agentWith, failingWhile } from "./helpers.js";

const dirs: string[] = [];
const servings: Serving[] = [];
const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const serving of servings.splice(0)) await serving.close();
  for (const store of stores.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function sqlite(): SqliteStore {
  const dir = mkdtempSync(join(tmpdir(), "quiver-claims-"));
  dirs.push(dir);
  const store = new SqliteStore({ path: join(dir, "runs.db") });
  stores.push(store);
  return store;
}

async function start(options: ServerOptions): Promise<string> {
  const serving = await serve(createServer(options), { port: 0 });
  servings.push(serving);
  return serving.url;
}

function client(url: string, user: string) {
  const post = (path: string, body: unknown) =>
    fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-user": user },
      body: JSON.stringify(body),
    });
  return {
    chat: (id: string, message: unknown) => post("/api/chat", { id, messages: [message] }),
    native: (body: unknown) => post("/api/runs", body),
    agUi: (threadId: string, extra: Record<string, unknown> = {}) =>
      post("/api/ag-ui", {
        threadId,
        runId: "r1",
        messages: [{ id: "u1", role: "user", content: "hello" }],
        tools: [],
        context: [],
        state: {},
        forwardedProps: {},
        ...extra,
      }),
    a2a: async (contextId: string, parts: unknown[]) =>
      (await (
        await post("/a2a", {
          jsonrpc: "2.0",
          id: 1,
          method: "message/send",
          params: {
            message: { kind: "message", messageId: `m-${contextId}-${user}`, role: "user", parts, contextId },
          },
        })
      ).json()) as {
        result?: { kind: string; contextId: string };
        error?: { code: number; message: string };
      },
  };
}

/** A file part of 1 kB: over the `maxAttachmentBytes` of these servers, so the run refuses it. */
const bigFile = Buffer.alloc(1_000, 7).toString("base64");

describe("a request that starts no run claims no id", () => {
  it("chat, native, AG-UI and A2A: Bob's refused requests leave the ids for Alice", async () => {
    const url = await start({
      agent: agentWith(Array.from({ length: 10 }, () => ({ text: "hello" }))),
      store: sqlite(),
      auth: (request) => request.headers.get("x-user"),
      runOptions: { maxAttachmentBytes: 100 },
      a2a: true,
    });
    const bob = client(url, "bob");
    // Refused by the request's own checks (an assistant message naming no run), and by the run
    // itself after every check (an attachment over maxAttachmentBytes, an unknown agent).
    expect((await bob.chat("standup", { id: "a1", role: "assistant", parts: [] })).status).toBe(400);
    const file = {
      type: "file",
      url: `data:application/pdf;base64,${bigFile}`,
      mediaType: "application/pdf",
    };
    expect((await bob.chat("retro", { id: "u1", role: "user", parts: [file] })).status).toBe(400);
    const part = { type: "file", data: bigFile, mimeType: "application/pdf" };
    expect((await bob.native({ sessionId: "planning", content: [part] })).status).toBe(400);
    expect((await bob.agUi("thread-1", { forwardedProps: { agent: "nope" } })).status).toBe(400);
    const refused = await bob.a2a("ctx-1", [
      { kind: "file", file: { bytes: bigFile, mimeType: "application/pdf", name: "big.pdf" } },
    ]);
    expect(refused.error?.message).toMatch(/maxAttachmentBytes|bytes/);

    const alice = client(url, "alice");
    const text = { type: "text", text: "hi" };
    const chats = [
      await alice.chat("standup", { id: "u1", role: "user", parts: [text] }),
      await alice.chat("retro", { id: "u1", role: "user", parts: [text] }),
    ];
    for (const response of chats) {
      expect(response.status).toBe(200);
      expect(await response.text()).toContain("hello");
    }
    expect((await alice.native({ sessionId: "planning", message: "hi" })).status).toBe(201);
    const thread = await alice.agUi("thread-1");
    expect(thread.status).toBe(200);
    expect(await thread.text()).toContain("RUN_FINISHED");
    const task = await alice.a2a("ctx-1", [{ kind: "text", text: "hi" }]);
    expect(task.error).toBeUndefined();
    expect(task.result).toMatchObject({ kind: "task", contextId: "ctx-1" });
  });

  it("a start the store did not take leaves the session nobody's", async () => {
    let down = true;
    const store = failingWhile(sqlite(), () => down);
    const url = await start({
      agent: agentWith(Array.from({ length: 4 }, () => ({ text: "hello" }))),
      store,
      auth: (request) => request.headers.get("x-user"),
      runOptions: { storeWaitMs: 200 },
      onError: () => {},
    });
    const failed = await client(url, "bob").native({ sessionId: "billing", message: "hi" });
    expect(failed.status).toBe(503);
    down = false;
    const alices = await client(url, "alice").native({ sessionId: "billing", message: "hi" });
    expect(alices.status).toBe(201);
    expect(await client(url, "bob").native({ sessionId: "billing", message: "hi" })).toMatchObject({
      status: 404,
    });
  });
});
