import { randomBytes } from "node:crypto";
import type { Hono } from "hono";
import type { PageAssets } from "./page-assets.js";
import { pageAssets } from "./page-assets.js";
import { PAGE_ATTACH } from "./page-attach.js";
import { PAGE_CHATS } from "./page-chats.js";
import { PAGE_DOM } from "./page-dom.js";
import { PAGE_MARKDOWN } from "./page-markdown.js";
import { PAGE_SCRIPT } from "./page-script.js";
import { PAGE_STYLE } from "./page-style.js";

/**
 * The page's Content-Security-Policy. Only scripts and styles carrying this response's nonce run
 * (the page's own, and the Markdown and sanitizer builds it loads from `/assets/`); nothing is
 * loaded from another host; the page cannot be framed; and with Trusted Types only DOMPurify may
 * turn a string into HTML, so a slip in the page's own code cannot become an injection either.
 * Images load from the page's own origin and from `blob:` URLs, which only the page's script can
 * make (from a file the person attached, or image bytes in a run's events): never from a host a
 * model or a tool names.
 */
export function pageCsp(nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "img-src 'self' blob:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "object-src 'none'",
    "require-trusted-types-for 'script'",
    "trusted-types dompurify",
  ].join("; ");
}

/**
 * The web chat page served at `GET /`: one document, its scripts inline or from `/assets/`.
 * `base` is the path the server's app is mounted under (`""` at the root, `"/agent"` under
 * `parent.route("/agent", server.app)`): the page's files and API calls are all under it.
 */
export function pageHtml(nonce: string, assets: Pick<PageAssets, "marked" | "purify">, base = ""): string {
  const at = escapeAttribute(base);
  const external = [assets.marked, assets.purify]
    .filter((src) => src !== undefined)
    .map((src) => `<script nonce="${nonce}" src="${at}${src}"></script>`)
    .join("\n");
  return `<!doctype html>
<html lang="en" data-base="${at}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Quiver chat</title>
<link rel="icon" href="${at}/favicon.svg" type="image/svg+xml">
<style nonce="${nonce}">${PAGE_STYLE}</style>
${external}
</head>
<body>
<div class="app">
  <aside id="sidebar" aria-label="Chats">
    <div class="side-head">
      <button type="button" id="new-chat" class="primary">New chat</button>
      <button type="button" id="close-sidebar" class="icon narrow-only" aria-label="Close the chat list">✕</button>
    </div>
    <nav aria-label="Past chats"><ul id="chats"></ul></nav>
    <p id="chats-note" class="note"></p>
  </aside>
  <div id="scrim" class="narrow-only" hidden></div>
  <div class="main">
    <header>
      <button type="button" id="open-sidebar" class="icon narrow-only" aria-label="Show chats" aria-controls="sidebar" aria-expanded="false">☰</button>
      <h1 id="chat-title">New chat</h1>
      <form id="rename-form" class="rename" hidden>
        <label for="rename-input" class="sr-only">Chat title</label>
        <input type="text" id="rename-input" maxlength="120" autocomplete="off">
        <button type="submit" class="primary">Save</button>
        <button type="button" id="rename-cancel">Cancel</button>
      </form>
      <button type="button" id="rename" class="icon" aria-label="Rename this chat" title="Rename this chat" hidden>✎</button>
      <span id="agent-field" hidden><label for="agent">Agent</label> <select id="agent"></select></span>
    </header>
    <div id="token-box" hidden>
      <form id="token-form" class="row token-form">
        <p id="token-note" class="token-note"></p>
        <label for="token">Access token</label>
        <input type="password" id="token" autocomplete="current-password" required>
        <button type="submit" class="primary">Use token</button>
      </form>
    </div>
    <main id="scroller" tabindex="0">
      <div id="log" role="log" aria-live="polite" aria-label="Conversation"></div>
    </main>
    <div class="composer">
      <button type="button" id="jump" class="jump" hidden>Jump to latest ↓</button>
      <p id="status" class="status" role="status"></p>
      <form id="composer">
        <ul id="attachments" class="chips" aria-label="Files to send" hidden></ul>
        <p id="attach-note" class="attach-note" role="alert" hidden></p>
        <input type="file" id="file-input" multiple hidden accept="image/png,image/jpeg,image/gif,image/webp,application/pdf,.png,.jpg,.jpeg,.gif,.webp,.pdf">
        <button type="button" id="attach" class="icon attach" aria-label="Attach an image or PDF" title="Attach an image or PDF (or paste or drop one)"><svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" focusable="false" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><path d="M21.4 11.1 12.2 20.2a6 6 0 0 1-8.5-8.5l9.2-9.2a4 4 0 0 1 5.7 5.7l-9.2 9.2a2 2 0 0 1-2.8-2.8l8.5-8.5"/></svg></button>
        <label for="message" class="sr-only">Message</label>
        <textarea id="message" rows="2" placeholder="Message the agent (Enter sends, Shift+Enter for a new line)" required></textarea>
        <button type="submit" id="send" class="primary">Send</button>
        <button type="button" id="cancel" class="danger" hidden>Stop</button>
      </form>
    </div>
  </div>
</div>
<script nonce="${nonce}">"use strict";
(() => {
${PAGE_DOM}
${PAGE_MARKDOWN}
${PAGE_SCRIPT}
${PAGE_ATTACH}
${PAGE_CHATS}
  boot();
})();</script>
</body>
</html>
`;
}

/**
 * Serves the page at `/`, its scripts under `/assets/` and its icon (`/favicon.svg`, and
 * `/favicon.ico` for clients that ask for that name). The page and its assets hold no secrets:
 * behind auth they are public and the page asks for the token; without auth `guard` keeps them
 * to loopback, like every other route.
 */
export function mountPage(app: Hono, guard: (request: Request, env: unknown) => Promise<void>): void {
  app.get("/", async (c) => servePage(c.req.raw, c.env, guard));
  const asset = async (path: string, request: Request, env: unknown) => {
    await guard(request, env);
    const file = (await pageAssets()).files.get(path);
    if (!file) return undefined;
    // Named by a digest of their contents: a new version has a new name, so keep them for good.
    const cache = path.startsWith("/assets/")
      ? "public, max-age=31536000, immutable"
      : "public, max-age=86400";
    return new Response(file.body, {
      headers: {
        "content-type": file.type,
        "cache-control": cache,
        "x-content-type-options": "nosniff",
      },
    });
  };
  app.get("/assets/:name", async (c, next) => {
    const response = await asset(`/assets/${c.req.param("name")}`, c.req.raw, c.env);
    if (response) return response;
    await next();
  });
  app.get("/favicon.svg", async (c) => (await asset("/favicon.svg", c.req.raw, c.env))!);
  app.get("/favicon.ico", async (c) => (await asset("/favicon.svg", c.req.raw, c.env))!);
}

/**
 * The page's response, at the app's root: `/`, or the prefix it is mounted under (`/agent`,
 * and `/agent/`). That path, as the client sent it, is the base of its files and API calls.
 */
export async function servePage(
  request: Request,
  env: unknown,
  guard: (request: Request, env: unknown) => Promise<void>,
): Promise<Response> {
  await guard(request, env);
  const base = new URL(request.url).pathname.replace(/\/+$/, "");
  const nonce = randomBytes(18).toString("base64");
  return new Response(pageHtml(nonce, await pageAssets(), base), {
    headers: {
      "content-type": "text/html; charset=UTF-8",
      "cache-control": "no-cache",
      "content-security-policy": pageCsp(nonce),
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
    },
  });
}

/**
 * Where the app is mounted, from the route pattern that matched (`c.req.routePath`): `"/"` or
 * `"*"` at the root give `""`; under `parent.route("/agent", app)` they are `"/agent"` and
 * `"/agent/*"`, giving `"/agent"`. The developer's prefix, not the client's path.
 */
export function mountedAt(routePath: string): string {
  return routePath.replace(/\/?\*$/, "").replace(/\/$/, "");
}

function escapeAttribute(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
