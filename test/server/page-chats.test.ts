import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { Agent, type ModelRequest, Runner, ScriptedModel } from "quiver-agents";
import { createServer, type Serving, serve } from "quiver-agents/server";
import { SqliteStore } from "quiver-agents/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, post } from "./helpers.js";
import { launchBrowser, send, withPage } from "./page-browser.js";

let browser: Browser;

beforeAll(async () => {
  browser = await launchBrowser();
}, 30_000);

afterAll(async () => {
  await browser?.close();
});

/** Answers every message with what it was asked and how long the conversation is. */
function echoAgent(turns = 10) {
  const answer = (req: ModelRequest) => {
    const asked = req.messages.at(-1)?.content;
    return { text: `Answer to ${String(asked)} (${req.messages.length} messages)` };
  };
  return new Agent({ name: "echo", model: new ScriptedModel(Array.from({ length: turns }, () => answer)) });
}

describe("GET /api/sessions: the caller's own chats", () => {
  for (const kind of ["memory", "sqlite"] as const) {
    it(`lists, opens and renames only the caller's chats (${kind === "memory" ? "no store" : "SqliteStore"})`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "quiver-sessions-"));
      const store = kind === "sqlite" ? new SqliteStore({ path: join(dir, "runs.db") }) : undefined;
      const server = createServer({
        agent: echoAgent(),
        ...(store && { store }),
        auth: (req) => req.headers.get("authorization")?.replace("Bearer ", "") ?? null,
      });
      const as = (user: string) => ({ authorization: `Bearer ${user}` });
      const call = async (user: string, method: string, path: string, body?: unknown) => {
        const response = await server.fetch(
          body === undefined
            ? new Request(`${BASE}${path}`, { method, headers: as(user) })
            : new Request(`${BASE}${path}`, {
                method,
                headers: { ...as(user), "content-type": "application/json" },
                body: JSON.stringify(body),
              }),
        );
        return { status: response.status, body: (await response.json()) as any };
      };
      try {
        const started = async (user: string, message: string, sessionId?: string) => {
          const response = await server.fetch(post("/api/runs", { message, sessionId }, as(user)));
          expect(response.status).toBe(201);
          return (await response.json()) as { runId: string; sessionId: string };
        };
        const a1 = await started("alice", "Refund   order\nA1 please");
        const b1 = await started("bob", "bob's secret question");
        const a2 = await started("alice", "and another thing", a1.sessionId);

        const alice = await call("alice", "GET", "/api/sessions");
        expect(alice.status).toBe(200);
        expect(alice.body.sessions).toEqual([
          expect.objectContaining({
            sessionId: a1.sessionId,
            title: "Refund order A1 please",
            titled: false,
          }),
        ]);
        expect(
          (await call("bob", "GET", "/api/sessions")).body.sessions.map((s: any) => s.sessionId),
        ).toEqual([b1.sessionId]);

        // Opening a chat gives its runs in order; another user's chat is not there at all.
        expect((await call("alice", "GET", `/api/sessions/${a1.sessionId}`)).body).toEqual({
          sessionId: a1.sessionId,
          title: "Refund order A1 please",
          titled: false,
          runs: [a1.runId, a2.runId],
        });
        for (const [method, body] of [
          ["GET", undefined],
          ["PATCH", { title: "mine now" }],
        ] as const) {
          const refused = await call("bob", method, `/api/sessions/${a1.sessionId}`, body);
          expect([refused.status, refused.body.error.code]).toEqual([404, "not_found"]);
        }
        expect((await call("alice", "GET", "/api/sessions/session_nobody")).status).toBe(404);

        // A title given by its owner, one line, at most 120 characters; empty restores the default.
        const renamed = await call("alice", "PATCH", `/api/sessions/${a1.sessionId}`, {
          title: `  Refunds\nfor ${"x".repeat(200)}`,
        });
        expect(renamed.status).toBe(200);
        expect(renamed.body.title).toBe(`Refunds for ${"x".repeat(108)}`);
        expect((await call("alice", "GET", "/api/sessions")).body.sessions[0]).toMatchObject({
          title: renamed.body.title,
          titled: true,
        });
        expect((await call("bob", "GET", "/api/sessions")).body.sessions[0].title).toBe(
          "bob's secret question",
        );
        expect(
          (await call("alice", "PATCH", `/api/sessions/${a1.sessionId}`, { title: "" })).body,
        ).toMatchObject({
          title: "Refund order A1 please",
          titled: false,
        });
        expect((await call("alice", "PATCH", `/api/sessions/${a1.sessionId}`, { title: 7 })).status).toBe(
          400,
        );
      } finally {
        server.close();
        await store?.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});

describe("the chat list in Chromium", () => {
  it("lists past chats from a SqliteStore, renames one, and reopens them after a server restart", async () => {
    const dir = mkdtempSync(join(tmpdir(), "quiver-page-chats-"));
    const path = join(dir, "runs.db");
    let store = new SqliteStore({ path });
    let serving: Serving = await serve(createServer({ agent: echoAgent(), store }), { port: 0 });
    const port = serving.port;
    const done = (page: import("playwright-core").Page) =>
      expect.poll(() => page.getByRole("status").textContent(), { timeout: 5_000 }).toBe("Done.");
    try {
      await withPage(
        browser,
        serving,
        async (page) => {
          const chats = page.getByRole("navigation", { name: "Past chats" });
          await expect.poll(() => chats.textContent()).toBe("");
          await send(page, "first question");
          await done(page);
          await page.getByRole("button", { name: "New chat" }).click();
          expect(await page.getByRole("log").textContent()).toBe("");
          await send(page, "second question");
          await done(page);
          await expect
            .poll(() => chats.locator(".chat-title").allTextContents())
            .toEqual(["second question", "first question"]);
          expect(await chats.locator("[aria-current=page] .chat-title").textContent()).toBe(
            "second question",
          );

          // Rename the open chat from its header: Enter saves.
          await page.getByRole("button", { name: "Rename" }).click();
          await page.getByLabel("Chat title").fill("Launch plan");
          await page.getByLabel("Chat title").press("Enter");
          await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("Launch plan");
          await expect
            .poll(() => chats.locator(".chat-title").allTextContents())
            .toEqual(["Launch plan", "first question"]);

          // The server goes away and comes back on the same port, with the same database file.
          await serving.close();
          await store.close();
          store = new SqliteStore({ path });
          serving = await serve(createServer({ agent: echoAgent(), store }), { port });
          await page.reload();
          await page.getByText("Answer to second question (1 messages)").waitFor({ timeout: 5_000 });
          await expect
            .poll(() => chats.locator(".chat-title").allTextContents())
            .toEqual(["Launch plan", "first question"]);
          expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Launch plan");

          // Reopen the first chat: its conversation, and only its, then continue it.
          await chats.getByRole("button", { name: /first question/ }).click();
          await page.getByText("Answer to first question (1 messages)").waitFor({ timeout: 5_000 });
          expect(await page.getByText(/second question/).count()).toBe(0);
          expect(await chats.locator("[aria-current=page] .chat-title").textContent()).toBe("first question");
          await send(page, "follow-up");
          await page.getByText("Answer to follow-up (3 messages)").waitFor({ timeout: 5_000 });
          // The chat just used moves to the top.
          await expect
            .poll(() => chats.locator(".chat-title").allTextContents())
            .toEqual(["first question", "Launch plan"]);
        },
        { width: 1280 },
      );
    } finally {
      await serving.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 45_000);
  it("reopening a long chat loads each run's own message, not the conversation before it again", async () => {
    const dir = mkdtempSync(join(tmpdir(), "quiver-page-long-chat-"));
    const store = new SqliteStore({ path: join(dir, "runs.db") });
    const runs = 40;
    const question = (i: number) => `question ${i} ${"with some words in it ".repeat(4)}`.trim();
    const agent = echoAgent(runs + 1);
    for (let i = 0; i < runs; i++) await Runner.run(agent, question(i), { store, sessionId: "long" });
    const serving = await serve(createServer({ agent: echoAgent(), store }), { port: 0 });
    try {
      await withPage(
        browser,
        serving,
        async (page) => {
          const started: Array<{ input: unknown[]; history?: number }> = [];
          let bytes = 0;
          page.on("response", async (response) => {
            if (!response.url().includes("/events")) return;
            const body = await response.text().catch(() => "");
            bytes += body.length;
            for (const line of body.split("\n")) {
              if (!line.startsWith("data: ")) continue;
              const event = JSON.parse(line.slice(6));
              if (event.type === "run_started") started.push(event);
            }
          });
          await page.getByRole("navigation", { name: "Past chats" }).getByRole("button").first().click();
          await page.getByText(`Answer to ${question(runs - 1)}`).waitFor({ timeout: 10_000 });
          // Every question shows once, in order.
          const asked = await page.getByRole("log").locator(".user").allTextContents();
          expect(asked.map((text) => text.replace(/^You: /, "").trim())).toEqual(
            Array.from({ length: runs }, (_, i) => question(i)),
          );
          await expect.poll(() => started.length).toBe(runs);
          // Each run's start carries its own message; the history it continues is counted, not sent.
          for (const event of started) expect(event.input).toHaveLength(1);
          expect(started.map((e) => e.history ?? 0).sort((a, b) => a - b)).toEqual(
            Array.from({ length: runs }, (_, i) => 2 * i),
          );
          // Sent whole, each start repeated the conversation before it: 282 KB, against 61 KB.
          expect(bytes).toBeLessThan(120_000);
        },
        { width: 1280 },
      );
    } finally {
      await serving.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
