/**
 * A session (and a chat id) belongs to the caller whose run started it: every endpoint that
 * takes a session or chat id answers another caller 404, on every store and without one.
 */
import { Agent, type Model, type ModelRequest, type RunEvent, Runner } from "quiver-agents";
import { createServer, type QuiverServer } from "quiver-agents/server";
import type { RunStore } from "quiver-agents/store";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { memoryHarness, postgresHarness, type StoreHarness, sqliteHarness } from "../store/harnesses.js";
import { BASE, events, post, readSse } from "./helpers.js";

/** A model that answers with every user message it was sent, so a reply shows what history a run got. */
function parrot(): Model & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return {
    name: "parrot",
    requests,
    async *stream(request) {
      requests.push(request);
      const heard = request.messages
        .filter((m) => m.role === "user")
        .map((m) => (typeof m.content === "string" ? m.content : ""))
        .join(" | ");
      yield { type: "text_delta" as const, delta: `heard: ${heard}` };
      yield { type: "finish" as const, reason: "stop" as const };
    },
  };
}

const noStore: StoreHarness = {
  name: "no store",
  setUp: async () => {},
  tearDown: async () => {},
  open: async () => undefined as unknown as RunStore,
  openSibling: async (store) => store,
  damage: async () => {},
};

const as = (user: string) => ({ "x-user": user });

/** Starts a native run and waits for its end; returns the status and, when started, its output. */
async function runNative(server: QuiverServer, user: string, message: string, sessionId?: string) {
  const response = await server.fetch(
    post("/api/runs", { message, ...(sessionId && { sessionId }) }, as(user)),
  );
  if (response.status !== 201) return { status: response.status, body: await response.json() };
  const { runId, sessionId: session } = (await response.json()) as { runId: string; sessionId: string };
  const stream = await server.fetch(new Request(`${BASE}/api/runs/${runId}/events`, { headers: as(user) }));
  const all = events(await readSse(stream, (fs) => events(fs).some(isEnd)));
  const end = all.find(isEnd);
  return { status: 201, sessionId: session, output: end?.type === "run_completed" ? end.output : end };
}

/** Posts one user message to `/api/chat` and reads the streamed reply's text. */
async function chat(server: QuiverServer, user: string, chatId: string, text: string) {
  const response = await server.fetch(
    post(
      "/api/chat",
      { id: chatId, messages: [{ id: `m-${text}`, role: "user", parts: [{ type: "text", text }] }] },
      as(user),
    ),
  );
  if (response.status !== 200) return { status: response.status, body: await response.json() };
  const frames = await readSse(response, (fs) => fs.some((f) => f.data === "[DONE]"));
  let reply = "";
  for (const frame of frames) {
    if (frame.data === "[DONE]") continue;
    const chunk = JSON.parse(frame.data!) as { type: string; delta?: string };
    if (chunk.type === "text-delta") reply += chunk.delta;
  }
  return { status: 200, reply };
}

function isEnd(e: RunEvent): boolean {
  return e.type === "run_completed" || e.type === "run_failed";
}

describe.each([noStore, memoryHarness, sqliteHarness(), postgresHarness()])(
  "sessions belong to their caller ($name)",
  (harness: StoreHarness) => {
    const stores: RunStore[] = [];
    beforeAll(() => harness.setUp(), 60_000);
    afterEach(async () => {
      await Promise.all(stores.splice(0).map((s) => s?.close()));
    });
    afterAll(() => harness.tearDown());

    async function setUp() {
      const store = await harness.open();
      stores.push(store);
      const model = parrot();
      const server = createServer({
        agent: new Agent({ name: "parrot", model }),
        ...(store && { store }),
        auth: (req) => req.headers.get("x-user"),
      });
      return { server, store, model };
    }

    it("a request refused before its run started claims no id: its owner-to-be still gets it", async () => {
      const { server } = await setUp();
      // Bob's requests are refused (an empty message, an assistant message naming no run).
      const empty = await server.fetch(
        post("/api/chat", { id: "standup", messages: [{ id: "m1", role: "user", parts: [] }] }, as("bob")),
      );
      expect(empty.status).toBe(400);
      const assistantLast = await server.fetch(
        post(
          "/api/chat",
          { id: "retro", messages: [{ id: "a1", role: "assistant", parts: [{ type: "text", text: "hi" }] }] },
          as("bob"),
        ),
      );
      expect(assistantLast.status).toBe(400);
      const tooBig = await server.fetch(
        post(
          "/api/runs",
          { sessionId: "planning", content: [{ type: "image", data: "", mediaType: "image/png" }] },
          as("bob"),
        ),
      );
      expect(tooBig.status).toBe(400);
      // Alice starts those chats and sessions as hers.
      expect(await chat(server, "alice", "standup", "morning")).toEqual({
        status: 200,
        reply: "heard: morning",
      });
      expect(await chat(server, "alice", "retro", "went well")).toEqual({
        status: 200,
        reply: "heard: went well",
      });
      expect(await runNative(server, "alice", "plan", "planning")).toMatchObject({
        status: 201,
        output: "heard: plan",
      });
    });

    it("another user's session id is a 404 on every endpoint that takes one; both keep their own", async () => {
      const { server, model } = await setUp();
      const first = await runNative(server, "alice", "alice's secret", "s-alice");
      expect(first).toMatchObject({ status: 201, output: "heard: alice's secret" });
      const chatted = await chat(server, "alice", "c-alice", "alice's chat secret");
      expect(chatted).toEqual({ status: 200, reply: "heard: alice's chat secret" });
      const requestsBefore = model.requests.length;

      for (const id of ["s-alice", "c-alice"]) {
        const native = await runNative(server, "bob", "what did alice say?", id);
        expect(native.status, `POST /api/runs ${id}`).toBe(404);
        expect(native.body).toEqual({ error: { code: "not_found", message: `no session ${id}` } });
        const posted = await chat(server, "bob", id, "what did alice say?");
        expect(posted.status, `POST /api/chat ${id}`).toBe(404);
        expect(posted.body).toEqual({ error: { code: "not_found", message: `no chat ${id}` } });
        const resumed = await server.fetch(
          new Request(`${BASE}/api/chat/${id}/stream`, { headers: as("bob") }),
        );
        expect(resumed.status, `GET /api/chat/${id}/stream`).toBe(404);
        expect(await resumed.json()).toEqual({ error: { code: "not_found", message: `no chat ${id}` } });
      }
      // Bob's attempts reached no model.
      expect(model.requests.length).toBe(requestsBefore);

      // Bob still starts his own session and chat, and sees only his own messages.
      expect(await runNative(server, "bob", "bob's question", "s-bob")).toMatchObject({
        status: 201,
        output: "heard: bob's question",
      });
      expect(await runNative(server, "bob", "bob again", "s-bob")).toMatchObject({
        status: 201,
        output: "heard: bob's question | bob again",
      });
      expect(await chat(server, "bob", "c-bob", "bob's chat")).toEqual({
        status: 200,
        reply: "heard: bob's chat",
      });
      // A session id the server makes up is his too.
      const fresh = await runNative(server, "bob", "new one");
      expect(fresh).toMatchObject({ status: 201, output: "heard: new one" });
      expect(await runNative(server, "bob", "and more", fresh.sessionId)).toMatchObject({
        status: 201,
        output: "heard: new one | and more",
      });
      // An unknown chat is idle for anyone (the AI SDK reads 204 as nothing to resume).
      const unknown = await server.fetch(
        new Request(`${BASE}/api/chat/c-nobody/stream`, { headers: as("bob") }),
      );
      expect(unknown.status).toBe(204);

      // Alice's conversations go on with their history, untouched by Bob's attempts.
      expect(await runNative(server, "alice", "and then?", "s-alice")).toMatchObject({
        status: 201,
        output: "heard: alice's secret | and then?",
      });
      expect(await chat(server, "alice", "c-alice", "more")).toEqual({
        status: 200,
        reply: "heard: alice's chat secret | more",
      });
      // Once her run has ended (its response may end a moment before), she has nothing to resume.
      await expect
        .poll(async () => {
          const idle = await server.fetch(
            new Request(`${BASE}/api/chat/c-alice/stream`, { headers: as("alice") }),
          );
          await idle.body?.cancel();
          return idle.status;
        })
        .toBe(204);
    });

    it("two users racing to start the same new session: one gets it, the other a 404", async () => {
      const { server } = await setUp();
      const [a, b] = await Promise.all([
        runNative(server, "alice", "mine", "s-race"),
        runNative(server, "bob", "no, mine", "s-race"),
      ]);
      expect([a.status, b.status].sort()).toEqual([201, 404]);
      const winner = a.status === 201 ? "alice" : "bob";
      const loser = winner === "alice" ? "bob" : "alice";
      expect((await runNative(server, loser, "let me in", "s-race")).status).toBe(404);
      expect((await runNative(server, winner, "again", "s-race")).status).toBe(201);
    });

    // Without a store there is nothing outside the server to continue.
    if (harness !== noStore)
      it("a stored session started outside the server without a user belongs to no user, but to the single user of a server without per-user auth", async () => {
        const { server, store, model } = await setUp();
        await Runner.run(new Agent({ name: "parrot", model }), "from a script", {
          store,
          sessionId: "s-script",
        });
        expect((await runNative(server, "alice", "hello", "s-script")).status).toBe(404);
        expect((await chat(server, "alice", "s-script", "hello")).status).toBe(404);

        const single = createServer({ agent: new Agent({ name: "parrot", model }), store, auth: "token" });
        const response = await single.fetch(
          post("/api/runs", { message: "and now", sessionId: "s-script" }, { authorization: "Bearer token" }),
        );
        expect(response.status).toBe(201);
        await expect
          .poll(() =>
            model.requests
              .at(-1)
              ?.messages.filter((m) => m.role === "user")
              .map((m) => m.content),
          )
          .toEqual(["from a script", "and now"]);
        // And alice's session is not the single user's.
        await runNative(server, "alice", "alice only", "s-alice-2");
        const refused = await single.fetch(
          post("/api/runs", { message: "peek", sessionId: "s-alice-2" }, { authorization: "Bearer token" }),
        );
        expect(refused.status).toBe(404);
      });
  },
);
