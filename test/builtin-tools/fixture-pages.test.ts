import { readFileSync } from "node:fs";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FENCE_BEGIN, FENCE_END } from "../../src/builtin-tools/fence.js";
import { HttpReader } from "../../src/builtin-tools/http-reader.js";
import { webFetch } from "../../src/builtin-tools/web-fetch.js";
import { HAND_MADE_PAGES, send, startServer, type TestServer, testContext } from "./helpers.js";

/**
 * Small pages written for these tests in the shape real sites serve (navigation, banners,
 * scripts, styles, tracking pixels, hidden text, sidebars around one article). The real pages
 * run in the corpus suite (`npm run test:corpus`).
 */
const PAGES: Record<string, { title: string; kept: string[]; gone: string[]; images: string[] }> = {
  "news-article.html": {
    title: "Title: City council approves the river park plan | The Daily Ledger",
    kept: [
      "voted 7–2 on Monday night to approve the [river park plan](SITE/topics/river-park)",
      "[2024 budget](SITE/news/budget/2024.html)",
      "## What the plan includes\n\n- A two-mile walking and cycling path along the water",
      "> We heard from more than 3,000 residents",
      "| Source | Amount |\n| --- | --- |\n| City bonds | $18 million |",
      "[published analysis](https://ledger.example/docs/park-finance.pdf)",
      "![The river bank where the park will be built](SITE/media/2024/river-park-hero-1600.jpg)",
    ],
    gone: [
      "dataLayer",
      "font-family",
      "Subscribe today",
      "ADVERTISEMENT BANNER TEXT",
      "HIDDEN-INSTRUCTIONS",
      "SIDEBARTEXT",
      "FOOTERTEXT",
      "pixel.gif",
    ],
    images: [
      "SITE/media/2024/river-park-hero.jpg",
      "SITE/static/logo.svg — The Daily Ledger",
      "SITE/media/2024/river-park-hero-1600.jpg — The river bank where the park will be built",
    ],
  },
  "blog-post.html": {
    title: "Title: Parsing dates without tears — Notes from the workshop",
    kept: [
      "# Parsing dates without tears\n",
      "the basics of `Date` and time zones",
      "Press `Ctrl`+`C` to copy",
      '```js\nconst day = new Date("2024-03-04");        // midnight UTC',
      "```python\nfrom datetime import date",
      "[ISO 8601](SITE/blog/standards/iso-8601.html)",
      "2. Convert at the edges\n   1. on input\n   2. on display",
      "![A timeline of a day across three time zones](SITE/blog/2024/img/timeline@2x.webp)",
      "[Write to us](mailto:workshop@example.org)",
      "[next post](SITE/blog/2024/next-post.html)",
    ],
    gone: [
      "COOKIETEXT",
      "MENUTEXT",
      "COMMENTTEXT",
      "SCRIPTTEXT",
      "noscript=1",
      "Parsing dates without tears#",
    ],
    images: ["SITE/blog/2024/img/timeline@2x.webp — A timeline of a day across three time zones"],
  },
};

let server: TestServer;
beforeAll(async () => {
  server = await startServer((req, res) => {
    const name = path.basename(new URL(req.url ?? "/", "http://x").pathname);
    send(res, 200, "text/html; charset=utf-8", readFileSync(path.join(HAND_MADE_PAGES, name)));
  });
});
afterAll(() => server.close());

/** The page's own text: what lies between the fence markers. */
const inside = (out: string) =>
  out.slice(out.indexOf(FENCE_BEGIN) + FENCE_BEGIN.length + 1, out.lastIndexOf(FENCE_END) - 1);

describe("markdown fidelity on hand-made pages", () => {
  const tool = webFetch(new HttpReader({ allowHosts: ["127.0.0.1"] }), { maxChars: 50_000 });

  for (const [file, expected] of Object.entries(PAGES)) {
    it(file, async () => {
      // The checks are not vacuous: everything that must be gone is in the page as served.
      const raw = readFileSync(path.join(HAND_MADE_PAGES, file), "utf8");
      for (const text of expected.gone) expect(raw, text).toContain(text.replace(/#$/, ""));

      const site = server.origin;
      const url = `${site}/news/2024/${file}`;
      const out = String(await tool.execute({ url, images: true }, testContext()));
      expect(out.split("\n").slice(0, 2)).toEqual([`URL: ${url}`, "HTTP 200 · text/html"]);
      const md = inside(out);
      expect(md.split("\n")[0]).toBe(expected.title);
      for (const text of expected.kept) expect(md).toContain(text.replaceAll("SITE", site));
      for (const text of expected.gone) expect(md).not.toContain(text);
      expect(md).not.toMatch(/<\/?(script|style|div|span|nav|iframe)\b/i);
      const list = md.split(/\nImages \(\d+\):\n/)[1]?.split("\n") ?? [];
      expect(list.map((line) => line.replace(/^\d+\. /, ""))).toEqual(
        expected.images.map((line) => line.replaceAll("SITE", site)),
      );
    });
  }

  it("eight concurrent fetches keep the event loop turning", async () => {
    const reader = new HttpReader({ allowHosts: ["127.0.0.1"], cacheTtlMs: 0 });
    await reader.read(`${server.origin}/news-article.html`); // the conversion thread is started
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const files = Object.keys(PAGES);
    const pages = await Promise.all(
      Array.from({ length: 8 }, (_, i) => reader.read(`${server.origin}/${i}/${files[i % files.length]}`)),
    );
    delay.disable();
    for (const page of pages) expect(page.text.length).toBeGreaterThan(500);
    // Generous: the machine running the tests is shared; the benchmark measures the real figure.
    expect(delay.max / 1e6).toBeLessThan(250);
  });
});
