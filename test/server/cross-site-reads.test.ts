/**
 * Reads a page of another site makes the browser send — a `<script>`, `<img>` or `<object>`, a
 * no-cors fetch, a frame or a link — carry `Sec-Fetch-Site: cross-site` (or `same-site`) and no
 * `Origin`. The page cannot read the answer, but it can tell a 200 from a 404, which says whether a
 * chat of a guessed name exists; and the browser sends this server's cookies along. The API
 * refuses them (403 `cross_origin`) whatever the auth; the page and its files stay served.
 */
import { createServer, type ServerOptions, type Serving, serve } from "quiver-agents/server";
import { afterEach, describe, expect, it } from "vitest";
import { agentWith } from "./helpers.js";

const servings: Serving[] = [];
afterEach(async () => {
  for (const serving of servings.splice(0)) await serving.close();
});

async function start(options: Partial<ServerOptions> = {}) {
  const serving = await serve(
    createServer({
      agent: agentWith(Array.from({ length: 5 }, () => ({ text: "hi" }))),
      a2a: true,
      ...options,
    }),
    { port: 0 },
  );
  servings.push(serving);
  return serving.url;
}

/** The developer's chat, named as they would; and its run's id. */
async function startChat(url: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}/api/runs`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ message: "the merger notes", sessionId: "acme-merger" }),
  });
  expect(response.status).toBe(201);
  const { runId } = (await response.json()) as { runId: string };
  await fetch(`${url}/api/runs/${runId}/events`, { headers }).then((r) => r.text()); // until it ends
  return runId;
}

/** What Chromium sends for each way a page elsewhere can make it load a URL. */
const FOREIGN_LOADS: Record<string, Record<string, string>> = {
  script: { "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors", "sec-fetch-dest": "script" },
  img: { "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors", "sec-fetch-dest": "image" },
  object: { "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", "sec-fetch-dest": "object" },
  iframe: { "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", "sec-fetch-dest": "iframe" },
  link: { "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", "sec-fetch-dest": "document" },
  "same-site fetch": {
    "sec-fetch-site": "same-site",
    "sec-fetch-mode": "no-cors",
    "sec-fetch-dest": "empty",
  },
};

const SAME_ORIGIN = { "sec-fetch-site": "same-origin", "sec-fetch-mode": "cors", "sec-fetch-dest": "empty" };

async function get(url: string, headers: Record<string, string>) {
  const response = await fetch(url, { headers });
  const text = await response.text();
  return { status: response.status, text };
}

describe("cross-site reads", () => {
  it("without auth: every API read another site's page asks for is 403, found or not; the page, its files, the page's own reads and other clients are served", async () => {
    const url = await start();
    const runId = await startChat(url);
    const api = [
      "/api/sessions/acme-merger",
      "/api/sessions/no-such-chat",
      "/api/sessions",
      `/api/runs/${runId}`,
      `/api/runs/${runId}/events`,
      "/api/chat/acme-merger/stream",
      "/api/agents",
      "/.well-known/agent-card.json",
    ];
    for (const [how, headers] of Object.entries(FOREIGN_LOADS))
      for (const path of api) {
        const { status, text } = await get(`${url}${path}`, headers);
        expect(status, `${how} ${path}`).toBe(403);
        expect(JSON.parse(text).error.code).toBe("cross_origin");
        expect(text).not.toContain("merger notes");
      }

    // The page itself (it cannot be framed, and holds nothing of the user's) and its files.
    const page = await get(`${url}/`, FOREIGN_LOADS.link!);
    expect(page.status).toBe(200);
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(page.text)?.[1];
    expect(script).toBeDefined();
    for (const [how, headers] of Object.entries(FOREIGN_LOADS)) {
      expect((await get(`${url}/`, headers)).status, `${how} /`).toBe(200);
      expect((await get(`${url}${script}`, headers)).status, `${how} ${script}`).toBe(200);
      expect((await get(`${url}/favicon.svg`, headers)).status, `${how} favicon`).toBe(200);
    }

    // The page's own reads, a URL typed into the address bar, and clients that are no browser.
    const typed = { "sec-fetch-site": "none", "sec-fetch-mode": "navigate", "sec-fetch-dest": "document" };
    for (const headers of [SAME_ORIGIN, typed, {}] as Array<Record<string, string>>) {
      const chat = await get(`${url}/api/sessions/acme-merger`, headers);
      expect(chat.status, JSON.stringify(headers)).toBe(200);
      expect(chat.text).toContain("acme-merger");
      expect((await get(`${url}/api/runs/${runId}/events`, headers)).text).toContain("merger notes");
    }
    // A page that asks to read (CORS) names its origin and is judged by it: a loopback one (a dev
    // server on another port) as before; any other is refused as it was.
    const cors = { "sec-fetch-site": "same-site", "sec-fetch-mode": "cors", "sec-fetch-dest": "empty" };
    expect((await get(`${url}/api/sessions`, { ...cors, origin: "http://localhost:5173" })).status).toBe(200);
    expect((await get(`${url}/api/sessions`, { ...cors, origin: "https://evil.example" })).status).toBe(403);
  });

  it("with an auth function that reads a cookie: the browser sends it along, so the same reads are refused; the page's own are not", async () => {
    const url = await start({
      auth: (request) => (request.headers.get("cookie") === "session=alice" ? "alice" : null),
    });
    const cookie = { cookie: "session=alice" };
    const runId = await startChat(url, cookie);
    for (const [how, headers] of Object.entries(FOREIGN_LOADS))
      for (const path of ["/api/sessions/acme-merger", "/api/sessions/no-such-chat", `/api/runs/${runId}`]) {
        const { status, text } = await get(`${url}${path}`, { ...headers, ...cookie });
        expect(status, `${how} ${path}`).toBe(403);
        expect(JSON.parse(text).error.code).toBe("cross_origin");
      }
    expect((await get(`${url}/api/sessions/acme-merger`, { ...SAME_ORIGIN, ...cookie })).status).toBe(200);
    expect((await get(`${url}/api/sessions/acme-merger`, cookie)).status).toBe(200);
    // A frontend on another origin that reads through CORS sends its Origin: left to auth.
    const cors = { "sec-fetch-site": "cross-site", "sec-fetch-mode": "cors", origin: "https://app.example" };
    expect((await get(`${url}/api/sessions/acme-merger`, { ...cors, ...cookie })).status).toBe(200);
    expect((await get(`${url}/`, { ...FOREIGN_LOADS.link!, ...cookie })).status).toBe(200);
  });

  it("with a bearer token: a foreign page's read cannot carry it, and is refused before auth is asked", async () => {
    const url = await start({ auth: "s3cret" });
    const bearer = { authorization: "Bearer s3cret" };
    await startChat(url, bearer);
    const foreign = await get(`${url}/api/sessions/acme-merger`, FOREIGN_LOADS.script!);
    expect(foreign.status).toBe(403);
    expect(JSON.parse(foreign.text).error.code).toBe("cross_origin");
    expect((await get(`${url}/api/sessions/acme-merger`, { ...SAME_ORIGIN, ...bearer })).status).toBe(200);
    expect((await get(`${url}/api/sessions/acme-merger`, bearer)).status).toBe(200);
  });
});
