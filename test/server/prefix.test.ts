import type { AddressInfo } from "node:net";
import { serve as nodeServe } from "@hono/node-server";
import { Hono } from "hono";
import type { Browser } from "playwright-core";
import { createServer, type Serving } from "quiver-agents/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentWith } from "./helpers.js";
import { launchBrowser, withPage } from "./page-browser.js";

/** An application of its own on a real socket, with the Quiver server mounted at `/agent`. */
async function mounted(server: ReturnType<typeof createServer>): Promise<Serving & { origin: string }> {
  const parent = new Hono();
  parent.get("/", (c) => c.text("the application's own home page"));
  parent.route("/agent", server.app);
  return new Promise((resolve) => {
    const http = nodeServe({ fetch: parent.fetch, port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) => {
      const origin = `http://127.0.0.1:${info.port}`;
      resolve({
        origin,
        url: `${origin}/agent`,
        port: info.port,
        hostname: "127.0.0.1",
        close: () =>
          new Promise<void>((done) => {
            void server.close();
            http.close(() => done());
            (http as { closeAllConnections?: () => void }).closeAllConnections?.();
          }),
      });
    });
  });
}

let browser: Browser;

beforeAll(async () => {
  browser = await launchBrowser();
}, 30_000);

afterAll(async () => {
  await browser?.close();
});

describe("mounted under a path prefix", () => {
  it("the page's files are under the prefix, /agent/ is the page too, and unknown paths get the JSON 404", async () => {
    const serving = await mounted(createServer({ agent: agentWith([{ text: "hi" }]) }));
    try {
      for (const path of ["/agent", "/agent/"]) {
        const page = await fetch(`${serving.origin}${path}`);
        expect(page.status, path).toBe(200);
        expect(page.headers.get("content-type")).toContain("text/html");
        const html = await page.text();
        const urls = [...html.matchAll(/<(?:script[^>]* src|link[^>]* href)="([^"]+)"/g)].map((m) => m[1]!);
        expect(urls.length).toBe(3); // the icon and the two libraries
        for (const url of urls) {
          expect(url.startsWith("/agent/"), url).toBe(true);
          expect((await fetch(`${serving.origin}${url}`)).status, url).toBe(200);
        }
      }
      expect((await fetch(`${serving.origin}/agent/api/agents`)).status).toBe(200);
      for (const path of ["/agent/nope", "/agent/api/nope", "/agent/assets/nope.js"]) {
        const missing = await fetch(`${serving.origin}${path}`);
        expect(missing.status, path).toBe(404);
        expect(await missing.json(), path).toEqual({
          error: { code: "not_found", message: "no such route" },
        });
      }
      // The application's own routes and 404s are its own.
      expect(await (await fetch(`${serving.origin}/`)).text()).toBe("the application's own home page");
      expect((await fetch(`${serving.origin}/elsewhere`)).headers.get("content-type")).not.toContain("json");
    } finally {
      await serving.close();
    }
  });

  it("the chat page under the prefix loads its libraries and talks to the API under it", async () => {
    const serving = await mounted(
      createServer({ agent: agentWith([{ text: "**Hello** from under /agent" }]) }),
    );
    try {
      await withPage(browser, serving, async (page) => {
        await page.getByLabel("Message").fill("hi");
        await page.getByLabel("Message").press("Enter");
        // Rendered as Markdown: marked and DOMPurify came from /agent/assets/.
        await expect.poll(() => page.locator("#log strong").filter({ hasText: "Hello" }).count()).toBe(1);
        await expect.poll(() => page.getByRole("status").textContent()).toMatch(/done/i);
      });
    } finally {
      await serving.close();
    }
  }, 30_000);
});
