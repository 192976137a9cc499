/**
 * Every state-changing request is checked for the page that sent it, whatever the auth: a page
 * elsewhere (or a sandboxed frame, `Origin: null`) cannot make a browser cancel, approve or start
 * runs with the user's cookies or from loopback; and bodies are JSON only as `application/json`.
 */
import { UserError } from "quiver-agents";
import { createServer, type QuiverServer, serve } from "quiver-agents/server";
import { describe, expect, it } from "vitest";
import { agentWith, BASE, post, slowTool } from "./helpers.js";

/** A server whose run holds in its `slow` call until released; returns the run's id. */
async function holdingRun(server: QuiverServer, headers: Record<string, string> = {}) {
  const response = await server.fetch(post("/api/runs", { message: "go" }, headers));
  expect(response.status).toBe(201);
  return ((await response.json()) as { runId: string }).runId;
}

function slowAgent() {
  const slow = slowTool();
  const agent = agentWith(
    [{ toolCalls: [{ id: "c1", name: "slow", args: { step: "one" } }] }, { text: "done" }],
    [slow.tool],
  );
  return { agent, release: slow.release };
}

async function statusOf(server: QuiverServer, runId: string, headers: Record<string, string> = {}) {
  const response = await server.fetch(new Request(`${BASE}/api/runs/${runId}`, { headers }));
  return ((await response.json()) as { status: string }).status;
}

async function errorCode(response: Response): Promise<string> {
  return ((await response.json()) as { error: { code: string } }).error.code;
}

describe("origin checks on state-changing requests", () => {
  it("without auth, over a real socket: Origin null and other origins cannot cancel a run; the page's own origin can", async () => {
    const { agent, release } = slowAgent();
    const server = createServer({ agent });
    const serving = await serve(server, { port: 0 });
    try {
      const url = serving.url.replace(/\/$/, "");
      const runId = await holdingRun(server);
      const cancel = (headers: Record<string, string>) =>
        fetch(`${url}/api/runs/${runId}/cancel`, { method: "POST", headers });
      for (const headers of [
        { origin: "null" },
        { origin: "null", "content-type": "text/plain" },
        { origin: "http://localhost:1" }, // another loopback page, on another port
        { origin: `https://127.0.0.1:${serving.port}` }, // another scheme
        { origin: "https://evil.example" },
        { "sec-fetch-site": "cross-site" },
        { "sec-fetch-site": "same-site" },
      ] as Record<string, string>[]) {
        const refused = await cancel(headers);
        expect(refused.status, JSON.stringify(headers)).toBe(403);
        expect(refused.headers.get("content-type")).toMatch(/^application\/json/);
        expect(await errorCode(refused)).toBe("cross_origin");
      }
      expect(await statusOf(server, runId)).toBe("running");
      // The page served at this address sends its own origin; curl and SDKs send none.
      const own = await cancel({ origin: url, "sec-fetch-site": "same-origin" });
      expect(own.status).toBe(202);
      await expect.poll(() => statusOf(server, runId)).toBe("completed");
    } finally {
      release();
      await serving.close();
    }
  });

  it("with a cookie-reading auth function: a cross-origin text/plain POST to /cancel is refused", async () => {
    const { agent, release } = slowAgent();
    const server = createServer({
      agent,
      auth: (req) => (/(^|;\s*)sid=alice(;|$)/.test(req.headers.get("cookie") ?? "") ? "alice" : null),
    });
    const cookie = { cookie: "sid=alice" };
    try {
      const runId = await holdingRun(server, cookie);
      const cancel = (headers: Record<string, string>, body?: string) =>
        server.fetch(
          new Request(`${BASE}/api/runs/${runId}/cancel`, {
            method: "POST",
            headers: { ...cookie, ...headers },
            ...(body !== undefined && { body }),
          }),
        );
      const crossSite = await cancel({ origin: "https://evil.example", "content-type": "text/plain" }, "x");
      expect(crossSite.status).toBe(403);
      expect(await errorCode(crossSite)).toBe("cross_origin");
      expect((await cancel({ origin: "null", "content-type": "text/plain" }, "x")).status).toBe(403);
      // Without an Origin (an old browser's form post), the form's content type is refused.
      const form = await cancel({ "content-type": "application/x-www-form-urlencoded" }, "a=b");
      expect(form.status).toBe(415);
      expect(await errorCode(form)).toBe("unsupported_media_type");
      expect(await statusOf(server, runId, cookie)).toBe("running");
      expect((await cancel({ origin: BASE })).status).toBe(202);
    } finally {
      release();
    }
  });

  it("with a bearer token too, and on routes added to server.app", async () => {
    const server = createServer({ agent: agentWith([{ text: "hi" }]), auth: "s3cret" });
    server.app.delete("/mine", (c) => c.json({ deleted: true }));
    const token = { authorization: "Bearer s3cret" };
    const foreign = await server.fetch(
      post("/api/runs", { message: "hi" }, { ...token, origin: "https://evil.example" }),
    );
    expect(foreign.status).toBe(403);
    const del = (headers: Record<string, string>) =>
      server.fetch(new Request(`${BASE}/mine`, { method: "DELETE", headers }));
    expect((await del({ origin: "https://evil.example" })).status).toBe(403);
    expect((await del({ origin: BASE })).status).toBe(200);
    // Reading is not state-changing: a page elsewhere could not read the answer anyway (no CORS).
    const read = await server.fetch(
      new Request(`${BASE}/api/agents`, { headers: { ...token, origin: "https://evil.example" } }),
    );
    expect(read.status).toBe(200);
    expect((await server.fetch(post("/api/runs", { message: "hi" }, token))).status).toBe(201);
  });

  it("allowedOrigins lets a listed page in, and behind a TLS proxy the forwarded scheme is the server's own", async () => {
    const server = createServer({
      agent: agentWith([{ text: "a" }, { text: "b" }, { text: "c" }]),
      auth: "s3cret",
      allowedOrigins: ["https://app.example/"],
    });
    const start = (url: string, headers: Record<string, string>) =>
      server.fetch(
        new Request(url, {
          method: "POST",
          headers: { authorization: "Bearer s3cret", "content-type": "application/json", ...headers },
          body: JSON.stringify({ message: "hi" }),
        }),
      );
    expect((await start(`${BASE}/api/runs`, { origin: "https://app.example" })).status).toBe(201);
    for (const origin of ["https://app.example:8443", "http://app.example", "https://evil.example", "null"])
      expect((await start(`${BASE}/api/runs`, { origin })).status, origin).toBe(403);

    // A proxy terminates TLS and forwards http://chat.example with X-Forwarded-Proto.
    const proxied = "http://chat.example/api/runs";
    expect(
      (await start(proxied, { origin: "https://chat.example", "x-forwarded-proto": "https" })).status,
    ).toBe(201);
    expect((await start(proxied, { origin: "https://chat.example" })).status).toBe(403);
    expect((await start(proxied, { origin: "http://chat.example" })).status).toBe(201);
  });

  it("allowedOrigins takes origins only: null, *, paths and other schemes are a UserError", () => {
    const agent = agentWith([{ text: "hi" }]);
    for (const origin of ["null", "*", "https://app.example/app", "file:///tmp/page.html", "app.example", ""])
      expect(() => createServer({ agent, allowedOrigins: [origin] }), origin).toThrow(UserError);
  });
});

describe("cross-site reads without auth", () => {
  it("a GET from another site's script, image or no-cors fetch is refused; a followed link and the page's own fetches are not", async () => {
    const server = createServer({ agent: agentWith([{ text: "hi" }]) });
    const started = await server.fetch(
      post("/api/runs", { message: "secret plans", sessionId: "acme-merger" }),
    );
    expect(started.status).toBe(201);
    const get = (path: string, headers: Record<string, string>) =>
      server.fetch(new Request(`${BASE}${path}`, { headers }));
    // A hostile page probing for a chat by name: no Origin, but the browser says where it came from.
    for (const site of ["cross-site", "same-site"]) {
      for (const path of ["/api/sessions/acme-merger", "/api/sessions/does-not-exist"]) {
        const probed = await get(path, {
          "sec-fetch-site": site,
          "sec-fetch-mode": "no-cors",
          "sec-fetch-dest": "script",
        });
        expect(probed.status, `${site} ${path}`).toBe(403);
        expect(await errorCode(probed)).toBe("cross_origin");
      }
    }
    // A link to the server, followed from another site, shows the page.
    expect(
      (
        await get("/", {
          "sec-fetch-site": "cross-site",
          "sec-fetch-mode": "navigate",
          "sec-fetch-dest": "document",
        })
      ).status,
    ).toBe(200);
    // The page's own fetches, and clients that are not browsers.
    expect(
      (await get("/api/sessions/acme-merger", { "sec-fetch-site": "same-origin", "sec-fetch-mode": "cors" }))
        .status,
    ).toBe(200);
    expect((await get("/api/sessions/acme-merger", {})).status).toBe(200);
    await server.close();
  });
});

describe("JSON bodies only as application/json", () => {
  it("refuses look-alike and plain media types with 415; parameters are fine", async () => {
    const server = createServer({ agent: agentWith([{ text: "a" }, { text: "b" }, { text: "c" }]) });
    const start = (type: string) =>
      server.fetch(
        new Request(`${BASE}/api/runs`, {
          method: "POST",
          headers: { "content-type": type },
          body: JSON.stringify({ message: "hi" }),
        }),
      );
    for (const type of [
      "application/json-evil",
      "application/jsonp",
      "text/plain",
      "text/plain; a=application/json",
    ]) {
      const refused = await start(type);
      expect(refused.status, type).toBe(415);
      expect(await errorCode(refused)).toBe("unsupported_media_type");
    }
    for (const type of [
      "application/json",
      "application/json; charset=utf-8",
      "Application/JSON ;charset=UTF-8",
    ])
      expect((await start(type)).status, type).toBe(201);
    const chat = await server.fetch(
      new Request(`${BASE}/api/chat`, {
        method: "POST",
        headers: { "content-type": "application/json-evil" },
        body: JSON.stringify({
          id: "c",
          messages: [{ id: "m", role: "user", parts: [{ type: "text", text: "x" }] }],
        }),
      }),
    );
    expect(chat.status).toBe(415);
  });
});
