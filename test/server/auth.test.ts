import { request as httpRequest } from "node:http";
import { UserError } from "quiver-agents";
import { createServer, serve } from "quiver-agents/server";
import { describe, expect, it } from "vitest";
import { chatClient, VERSIONS } from "./chat-clients.js";
import { agentWith, BASE, eventually, post, refundTool } from "./helpers.js";

function agent() {
  return agentWith(
    [{ toolCalls: [{ id: "c1", name: "refund", args: { order: "A1" } }] }, { text: "ok" }],
    [refundTool([])],
  );
}

/** A raw request over a real socket, with a Host header of our choosing. */
function rawGet(port: number, path: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

describe("auth", () => {
  it("without auth: loopback only, by Host header and Origin; serve() refuses other interfaces", async () => {
    const server = createServer({ agent: agent() });
    expect((await server.fetch(new Request(`${BASE}/api/agents`))).status).toBe(200);
    expect((await server.fetch(new Request("http://localhost:8080/api/agents"))).status).toBe(200);
    const rebound = await server.fetch(new Request("http://evil.example/api/agents"));
    expect(rebound.status).toBe(403);
    expect(((await rebound.json()) as { error: { code: string } }).error.code).toBe("loopback_only");
    const crossSite = await server.fetch(
      post("/api/runs", { message: "hi" }, { origin: "https://evil.example" }),
    );
    expect(crossSite.status).toBe(403);
    expect((await server.fetch(new Request("http://evil.example/"))).status).toBe(403);
    // Behind a reverse proxy that keeps the Host, the forwarded client address gives it away.
    for (const headers of [
      { "x-forwarded-for": "203.0.113.7, 127.0.0.1" },
      { "x-forwarded-for": "unknown" },
      { "x-real-ip": "203.0.113.7" },
      { forwarded: 'for="[2001:db8::1]:4711";proto=https' },
    ] as Record<string, string>[]) {
      const proxied = await server.fetch(new Request(`${BASE}/api/agents`, { headers }));
      expect(proxied.status, JSON.stringify(headers)).toBe(403);
    }
    for (const headers of [{ "x-forwarded-for": "127.0.0.1" }, { forwarded: 'for="[::1]:5000"' }] as Record<
      string,
      string
    >[])
      expect((await server.fetch(new Request(`${BASE}/api/agents`, { headers }))).status).toBe(200);

    expect(() => serve(server, { port: 0, hostname: "0.0.0.0" })).toThrow(UserError);
    const serving = await serve(server, { port: 0 });
    try {
      expect(await rawGet(serving.port, "/api/agents", `127.0.0.1:${serving.port}`)).toBe(200);
      expect(await rawGet(serving.port, "/api/agents", "attacker.example")).toBe(403);
    } finally {
      await serving.close();
    }
  });

  it("with a token: 401 without it or with a wrong one; the page itself is public", async () => {
    const server = createServer({ agent: agent(), auth: "s3cret" });
    const none = await server.fetch(new Request("http://chat.example.com/api/agents"));
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/);
    const wrong = await server.fetch(
      new Request("http://chat.example.com/api/agents", { headers: { authorization: "Bearer nope" } }),
    );
    expect(wrong.status).toBe(401);
    const right = await server.fetch(
      new Request("http://chat.example.com/api/agents", { headers: { authorization: "Bearer s3cret" } }),
    );
    expect(right.status).toBe(200);
    const page = await server.fetch(new Request("http://chat.example.com/"));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<title>Quiver chat</title>");

    const serving = await serve(server, { port: 0, hostname: "0.0.0.0" });
    await serving.close();
  });

  it("per user: another user's run is 404 everywhere", async () => {
    const server = createServer({
      agent: agent(),
      auth: (req) => req.headers.get("x-user"),
    });
    const as = (user: string) => ({ "x-user": user });
    const started = await server.fetch(
      post("/api/runs", { message: "refund", sessionId: "s1" }, as("alice")),
    );
    expect(started.status).toBe(201);
    const { runId } = (await started.json()) as { runId: string };
    const get = (path: string, user: string) =>
      server.fetch(new Request(`${BASE}${path}`, { headers: as(user) }));

    expect((await get(`/api/runs/${runId}`, "alice")).status).toBe(200);
    expect((await server.fetch(new Request(`${BASE}/api/runs/${runId}`))).status).toBe(401);
    for (const path of [`/api/runs/${runId}`, `/api/runs/${runId}/events`]) {
      const res = await get(path, "bob");
      expect(res.status, path).toBe(404);
    }
    for (const [action, body] of [
      ["approve", { callId: "c1", approved: true }],
      ["answer", { callId: "c1", answer: "x" }],
      ["inject", { message: "x" }],
      ["cancel", {}],
    ] as const) {
      const res = await server.fetch(post(`/api/runs/${runId}/${action}`, body, as("bob")));
      expect(res.status, action).toBe(404);
    }
    expect((await get("/api/chat/s1/stream", "bob")).status).toBe(404);
    // Alice still decides her own run, once it asks.
    await eventually(async () => {
      const summary = (await (await get(`/api/runs/${runId}`, "alice")).json()) as {
        awaitingApproval: unknown[];
      };
      return summary.awaitingApproval.length === 1;
    });
    const approved = await server.fetch(
      post(`/api/runs/${runId}/approve`, { callId: "c1", approved: false }, as("alice")),
    );
    expect(approved.status).toBe(202);
  });

  it.each(VERSIONS)("useChat (%s) sends its headers; a chat is its user's", async (version) => {
    const server = createServer({
      agent: agentWith([{ text: "hi alice" }]),
      auth: (req) => req.headers.get("x-user"),
    });
    const alice = chatClient(version, server, { id: "shared-id", headers: { "x-user": "alice" } });
    await alice.sendMessage({ text: "hello" });
    expect(alice.error).toBeUndefined();
    const runId = alice.messages.at(-1)!.id;
    // Bob posting Alice's run id as his assistant message gets no access to it: in her chat
    // (which is not his) or in his own.
    for (const [id, status] of [
      ["shared-id", 404],
      ["bobs-chat", 400],
    ] as const) {
      const bob = await server.fetch(
        post(
          "/api/chat",
          { id, messages: [{ id: runId, role: "assistant", parts: [] }] },
          { "x-user": "bob" },
        ),
      );
      expect(bob.status, id).toBe(status);
    }
    const anonymous = chatClient(version, server, { id: "x" });
    await anonymous.sendMessage({ text: "hello" });
    expect(anonymous.error?.message).toMatch(/unauthorized/);
  });
});
