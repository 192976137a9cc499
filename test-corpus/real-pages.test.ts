import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FENCE_BEGIN, FENCE_END } from "../src/builtin-tools/fence.js";
import { HttpReader } from "../src/builtin-tools/http-reader.js";
import { webFetch } from "../src/builtin-tools/web-fetch.js";
import { send, startServer, type TestServer, testContext } from "../test/builtin-tools/helpers.js";

/**
 * The real-page corpus: pages as their sites served them, kept beside the checkout in
 * `../shared/fixtures/pages` (or where `QUIVER_CORPUS_PAGES` points). `npm test` never reads
 * it; `npm run test:corpus` does, and fails when it is missing under CI.
 */
const FIXTURE_PAGES = path.resolve(
  process.env.QUIVER_CORPUS_PAGES ??
    path.join(path.dirname(fileURLToPath(import.meta.url)), "../../shared/fixtures/pages"),
);
const present = existsSync(FIXTURE_PAGES) && readdirSync(FIXTURE_PAGES).some((f) => f.endsWith(".html"));

if (!present) {
  const message = `the real-page corpus is missing: no .html pages in ${FIXTURE_PAGES} (set QUIVER_CORPUS_PAGES to its folder)`;
  if (process.env.CI) {
    it("the real-page corpus is present", () => {
      expect.fail(message);
    });
  } else {
    console.warn(`test:corpus: ${message}; nothing to run outside CI.`);
  }
}

/** What each real page must keep, and what must be gone (navigation, scripts, styles). */
const PAGES: Record<string, { title: RegExp; kept: string[]; gone: string[] }> = {
  "ars-1.html": {
    title: /Minecraft exploit makes it easy to crash game servers/,
    kept: [
      "A flaw in the wildly popular online game *Minecraft* makes it easy",
      "> ```javascript\n> rekt: {",
      "Ars is asking Mojang for comment and will update this post",
      "[blog post published Thursday](http://blog.ammaraskar.com/minecraft-vulnerability-advisory)",
    ],
    gone: [
      '"ASSETS"',
      "cdn.arstechnica.net\\/wp-content",
      "Reprints",
      "Ars Orbital Transmission",
      "View Mobile Site",
    ],
  },
  "cnn.html": {
    title: /birth lottery/,
    kept: [
      "But a new report released on Monday by [Stanford University's Center on Poverty and Inequality](http://web.stanford.edu/group/scspi-dev/cgi-bin/)",
      "The overall rankings of the countries were as follows:",
      "CNNMoney (New York) First published February 1, 2016",
    ],
    gone: ["cnnSiteWideCurrDate", ".cmmtcount", "display: none", "Wilbur Ross pledges", "Stockswatch"],
  },
  "gitlab-blog.html": {
    title: /3 surprising findings from our 2024 Global DevSecOps Survey/,
    kept: [
      "## 1. AI shines a light on cumbersome toolchains",
      "Read the full [2024 Global DevSecOps Report](https://about.gitlab.com/developer-survey/)",
    ],
    gone: ["dataLayer", "gtag(", "favicon"],
  },
  "firefox-nightly-blog.html": {
    title: /These Weeks in Firefox: Issue 85/,
    kept: [
      "### Highlights",
      "- [Here’s our Firefox Year in Review!](https://blog.mozilla.org/blog/2020/12/15/",
      "[Bug 1553982](https://bugzilla.mozilla.org/show_bug.cgi?id=1553982)",
    ],
    gone: ["ak_js", "@media screen", "Get Involved", "Download Firefox Nightly"],
  },
};

let server: TestServer;
beforeAll(async () => {
  if (!present) return;
  server = await startServer((req, res) => {
    const name = path.basename(new URL(req.url ?? "/", "http://x").pathname);
    const html = readFileSync(path.join(FIXTURE_PAGES, name));
    send(res, 200, "text/html; charset=utf-8", html);
  });
});
afterAll(() => server?.close());

describe.runIf(present)("markdown fidelity on real pages", () => {
  const tool = webFetch(new HttpReader({ allowHosts: ["127.0.0.1"] }), { maxChars: 200_000 });

  for (const [file, expected] of Object.entries(PAGES)) {
    it(file, async () => {
      // The checks are not vacuous: everything that must be gone is in the page as served.
      const raw = readFileSync(path.join(FIXTURE_PAGES, file), "utf8");
      for (const text of expected.gone) expect(raw, text).toContain(text);

      const url = `${server.origin}/articles/2024/${file}`;
      const out = String(await tool.execute({ url, images: true }, testContext()));
      expect(out.split("\n").slice(0, 2)).toEqual([`URL: ${url}`, "HTTP 200 · text/html"]);
      const md = out.slice(out.indexOf(FENCE_BEGIN) + FENCE_BEGIN.length + 1, out.lastIndexOf(FENCE_END) - 1);
      expect(md.split("\n")[0]).toMatch(new RegExp(`^Title: .*${expected.title.source}`));
      for (const text of expected.kept) expect(md).toContain(text);
      for (const text of expected.gone) expect(md).not.toContain(text);

      // No markup, script or CSS leaks into the Markdown.
      expect(md).not.toMatch(/<\/?(script|style|div|span|nav|iframe)\b/i);
      expect(md).not.toMatch(/function\s*\(|\{\s*[a-z-]+\s*:\s*[^;]+;\s*\}/);
      // Every link and image is absolute.
      const targets = [...md.matchAll(/\]\(<?([^)\s>]+)/g)].map((m) => m[1]!);
      expect(targets.length).toBeGreaterThan(2);
      for (const target of targets) expect(target, target).toMatch(/^(https?:\/\/|mailto:)/);
      // The image list is absolute and deduplicated.
      const images = md.split(/\nImages \(\d+\):\n/)[1]?.split("\n") ?? [];
      const urls = images.map((line) => line.replace(/^\d+\. /, "").split(" — ")[0]!);
      expect(new Set(urls).size).toBe(urls.length);
      for (const u of urls) expect(u).toMatch(/^https?:\/\//);
    });
  }

  it("eight concurrent fetches of the real pages keep the event loop turning", async () => {
    const reader = new HttpReader({ allowHosts: ["127.0.0.1"], cacheTtlMs: 0 });
    await reader.read(`${server.origin}/warm/ars-1.html`); // the conversion thread is started
    const files = Object.keys(PAGES);
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const pages = await Promise.all(
      Array.from({ length: 8 }, (_, i) => reader.read(`${server.origin}/${i}/${files[i % files.length]}`)),
    );
    delay.disable();
    for (const page of pages) expect(page.text.length).toBeGreaterThan(1_000);
    // Generous for a shared machine; `npm run bench` reports the real figure (target 20 ms).
    expect(delay.max / 1e6).toBeLessThan(250);
  });
});
