import type { Browser, Page } from "playwright-core";
import { Agent, jsonSchema, type Model, tool } from "quiver-agents";
import { createServer, serve } from "quiver-agents/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentWith } from "./helpers.js";
import { launchBrowser, send, withPage } from "./page-browser.js";

let browser: Browser;

beforeAll(async () => {
  browser = await launchBrowser();
}, 30_000);

afterAll(async () => {
  await browser?.close();
});

const RICH = [
  "# Plan",
  "",
  "Some **bold** text, `inline code` and a [link](https://example.com/docs).",
  "",
  "| Item | Qty |",
  "|------|----:|",
  "| Apples | 3 |",
  "| Pears | 5 |",
  "",
  "- one",
  "- two",
  "  1. nested",
  "",
  "- [x] done",
  "- [ ] to do",
  "",
  "```ts",
  "const x = 1;",
  "```",
].join("\n");

/** Records Content-Security-Policy violations the page reports, from before its first script. */
async function watchViolations(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const { document, window } = globalThis as any;
    const seen: Array<{ directive: string; blocked: string; source: string }> = [];
    (window as any).__violations = seen;
    document.addEventListener("securitypolicyviolation", (e: any) =>
      seen.push({ directive: e.violatedDirective, blocked: e.blockedURI, source: e.sourceFile }),
    );
  });
}

const violations = (page: Page) =>
  page.evaluate(
    () => (globalThis as any).__violations as Array<{ directive: string; blocked: string; source: string }>,
  );

describe("the chat page renders Markdown, safely", () => {
  it("serves marked and DOMPurify from the package under digest names, with a nonce CSP on the page", async () => {
    const server = createServer({ agent: agentWith([{ text: "hi" }]) });
    const page = await server.fetch(new Request("http://127.0.0.1/"));
    const csp = page.headers.get("content-security-policy")!;
    const html = await page.text();
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1];
    expect(nonce).toBeTruthy();
    for (const directive of [
      "default-src 'none'",
      "img-src 'self'",
      "connect-src 'self'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
      "object-src 'none'",
      "require-trusted-types-for 'script'",
    ])
      expect(csp).toContain(directive);
    expect(csp).not.toContain("unsafe-inline");
    // Every script on the page carries this response's nonce; a second response gets another.
    const scripts = html.match(/<script[^>]*>/g)!;
    expect(scripts.length).toBe(3);
    for (const script of scripts) expect(script).toContain(`nonce="${nonce}"`);
    const again = (await server.fetch(new Request("http://127.0.0.1/"))).headers.get(
      "content-security-policy",
    );
    expect(again).not.toBe(csp);

    const sources = [...html.matchAll(/<script nonce="[^"]+" src="([^"]+)"/g)].map((m) => m[1]!);
    expect(sources).toEqual([
      expect.stringMatching(/^\/assets\/marked-[0-9a-f]{12}\.js$/),
      expect.stringMatching(/^\/assets\/purify-[0-9a-f]{12}\.js$/),
    ]);
    const [marked, purify] = await Promise.all(
      sources.map((src) => server.fetch(new Request(`http://127.0.0.1${src}`))),
    );
    expect(marked!.status).toBe(200);
    expect(marked!.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect(marked!.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(await marked!.text()).toMatch(/marked v18\./);
    expect(await purify!.text()).toMatch(/DOMPurify 3\./);
    expect((await server.fetch(new Request("http://127.0.0.1/assets/marked-000000000000.js"))).status).toBe(
      404,
    );
    const icon = await server.fetch(new Request("http://127.0.0.1/favicon.ico"));
    expect([icon.status, icon.headers.get("content-type")]).toEqual([200, "image/svg+xml"]);
  });

  it("renders headings, tables, lists and code with a working copy button", async () => {
    const serving = await serve(createServer({ agent: agentWith([{ text: RICH }]) }), { port: 0 });
    try {
      await withPage(
        browser,
        serving,
        async (page) => {
          await send(page, "plan it");
          const answer = page.locator(".text.md");
          await answer.locator("pre code").waitFor({ timeout: 5_000 });
          await expect.poll(() => page.getByRole("status").textContent()).toBe("Done.");
          expect(await answer.locator("h1").textContent()).toBe("Plan");
          expect(await answer.locator("strong").textContent()).toBe("bold");
          expect(await answer.locator("th").allTextContents()).toEqual(["Item", "Qty"]);
          expect(await answer.locator("td").allTextContents()).toEqual(["Apples", "3", "Pears", "5"]);
          // The table's column alignment (|----:|) holds: Qty is right-aligned, Item left.
          const aligns = await answer
            .locator("tr > :is(th, td)")
            .evaluateAll((cells) => cells.map((c) => (globalThis as any).getComputedStyle(c).textAlign));
          expect(aligns).toEqual(["left", "right", "left", "right", "left", "right"]);
          expect(await answer.locator("ul ol li").textContent()).toBe("nested");
          expect(await answer.getByText("☑ done").count()).toBe(1);
          // A task item shows its box, not a bullet beside it; the nested list keeps its numbers.
          const markers = await answer
            .locator("li")
            .evaluateAll((items) =>
              items.map(
                (li) => `${li.textContent.trim()}: ${(globalThis as any).getComputedStyle(li).listStyleType}`,
              ),
            );
          expect(markers).toContain("☑ done: none");
          expect(markers).toContain("nested: decimal");
          const link = answer.getByRole("link", { name: "link" });
          expect(await link.getAttribute("href")).toBe("https://example.com/docs");
          expect(await link.getAttribute("target")).toBe("_blank");
          expect(await link.getAttribute("rel")).toBe("noopener noreferrer nofollow");
          // No source markup is left over.
          expect(await answer.textContent()).not.toMatch(/\*\*|```|\|---/);

          const copy = answer.getByRole("button", { name: "Copy code (ts)" });
          await copy.click();
          await expect.poll(() => copy.textContent()).toBe("Copied");
          expect(await page.evaluate(() => (globalThis as any).navigator.clipboard.readText())).toBe(
            "const x = 1;\n",
          );
        },
        { permissions: ["clipboard-read", "clipboard-write"] },
      );
    } finally {
      await serving.close();
    }
  }, 30_000);

  it("runs nothing and loads nothing that the model, a tool or its arguments say (an XSS corpus)", async () => {
    const corpus = [
      `<script>alert("script")</script>`,
      `<img src="http://remote.example/a.png" onerror="alert('img')">`,
      `<svg onload="alert('svg')"><circle r="10"/></svg>`,
      `<math><mtext><table><mglyph><style><img src=x onerror=alert('mxss')></style></mglyph></table></mtext></math>`,
      `<iframe src="http://remote.example/frame"></iframe>`,
      `<object data="http://remote.example/o.swf"></object><embed src="http://remote.example/e">`,
      `<link rel="stylesheet" href="http://remote.example/s.css">`,
      `<style>body { background: url(http://remote.example/bg.png) } .composer { display: none }</style>`,
      `<div style="background:url(http://remote.example/div.png);position:fixed;inset:0">overlay</div>`,
      `<a href="javascript:alert('js')">js link</a> <a href="JaVaScRiPt:alert('js2')">js link 2</a>`,
      `<a href="data:text/html,<script>alert('data')</script>">data link</a>`,
      `<details open ontoggle="alert('toggle')"><summary>sum</summary>body</details>`,
      `<form action="http://remote.example/f"><button formaction="javascript:alert('f')">go</button></form>`,
      `<meta http-equiv="refresh" content="0;url=http://remote.example/"><base href="http://remote.example/">`,
      `<input autofocus onfocus="alert('focus')"><video src="http://remote.example/v.mp4" autoplay></video>`,
      `<p class="composer" id="status" name="log">spoof</p>`,
      `<a href="https://ok.example" onclick="alert('click')" onmouseover="alert('over')">ok link</a>`,
      `[md js](javascript:alert('mdjs')) [md entity](jav&#x61;script:alert('ent')) [md data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)`,
      `![remote image](http://remote.example/md.png) ![data image](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)`,
      `[https://good.example](https://evil.example/login) and <https://remote.example/autolink>`,
      `[ref link][r]`,
      ``,
      `[r]: javascript:alert('ref')`,
    ].join("\n\n");
    const hostile = `<img src="http://remote.example/t.png" onerror="alert('out')"><script>alert('out2')</script>`;
    const echo = tool({
      name: "echo",
      description: "Echo",
      parameters: jsonSchema<{ html: string }>({
        type: "object",
        properties: { html: { type: "string" } },
        required: ["html"],
      }),
      execute: async ({ html }, ctx) => {
        ctx.update({ html });
        return hostile;
      },
    });
    const agent = agentWith(
      [
        { toolCalls: [{ id: "t1", name: "echo", args: { html: `<svg onload="alert('arg')"></svg>` } }] },
        { text: corpus },
      ],
      [echo],
    );
    const serving = await serve(createServer({ agent }), { port: 0 });
    try {
      await withPage(browser, serving, async (page, trouble) => {
        await watchViolations(page);
        await page.reload();
        await send(page, "<b onmouseover=alert('user')>hi</b>");
        await expect.poll(() => page.getByRole("status").textContent(), { timeout: 5_000 }).toBe("Done.");
        const log = page.getByRole("log");
        await log.getByText("spoof").waitFor();

        // The tool's arguments, progress and output, and the person's own message, are text.
        const card = page.locator('details[data-call-id="t1"]');
        expect(await card.textContent()).toContain(`<svg onload=\\"alert('arg')\\"></svg>`);
        expect(await card.locator(".output pre").textContent()).toBe(hostile);
        expect(await log.locator(".user").textContent()).toContain("<b onmouseover=alert('user')>hi</b>");

        const found = await page.evaluate(() => {
          const { document } = globalThis as any;
          const root = document.getElementById("log")!;
          const all = [...root.querySelectorAll("*")];
          return {
            handlers: all.flatMap((e) =>
              [...e.attributes].filter((a) => /^on/i.test(a.name)).map((a) => a.name),
            ),
            tags: [
              ...new Set(
                all
                  .map((e) => e.localName)
                  .filter((t) =>
                    /^(script|img|svg|math|iframe|object|embed|link|style|form|input|meta|base|video|audio)$/.test(
                      t,
                    ),
                  ),
              ),
            ],
            styled: all.filter((e) => e.hasAttribute("style")).length,
            ids: [...root.querySelectorAll(".md [id], .md [name]")].length,
            hrefs: [...root.querySelectorAll(".md a")].map((a) => a.getAttribute("href")),
            classes: [
              ...new Set([...root.querySelectorAll(".md [class]")].flatMap((e) => [...e.classList])),
            ].sort(),
          };
        });
        expect(found.handlers).toEqual([]);
        // The only form and input are the page's own (answers to questions), none here.
        expect(found.tags).toEqual([]);
        expect(found.styled).toBe(0);
        expect(found.ids).toBe(0);
        for (const href of found.hrefs) expect(href).toMatch(/^https?:\/\//);
        expect(
          found.classes.filter((c) => !["code", "code-bar", "copy", "link-host", "table-wrap"].includes(c)),
        ).toEqual([]);
        // An image is a link to click, never fetched by itself; a link's real host is shown.
        expect(await log.getByRole("link", { name: "Image: remote image" }).getAttribute("href")).toBe(
          "http://remote.example/md.png",
        );
        expect(await log.getByRole("link", { name: /^https:\/\/good\.example/ }).textContent()).toBe(
          "https://good.example (evil.example)",
        );
        // The page's own controls are untouched by the text that tried to hide them.
        expect(await page.getByLabel("Message").isVisible()).toBe(true);
        expect(await page.locator("#status").getAttribute("class")).toBe("status");
        // Nothing tried to load or run. (Chromium checks the policy even in the inert document
        // DOMPurify parses the text into: its <style> and <base> are reported there, and dropped;
        // Chromium 156 also reports the inline handlers it meets in that parse — reported from
        // DOMPurify's own parseFromString call, run nowhere, and dropped with the rest.)
        for (const v of await violations(page)) {
          const inParse =
            v.directive === "script-src-attr" && /\/assets\/purify-[0-9a-f]+\.js$/.test(v.source);
          if (!inParse)
            expect(["style-src-elem", "style-src-attr", "base-uri"], JSON.stringify(v)).toContain(
              v.directive,
            );
        }
        expect(trouble.remote).toEqual([]);
        expect(trouble.dialogs).toEqual([]);
      });
    } finally {
      await serving.close();
    }
  }, 30_000);

  it("the policy blocks a remote image, a script and an inline style that got past everything, and reports it", async () => {
    const serving = await serve(createServer({ agent: agentWith([{ text: "hi" }]) }), { port: 0 });
    try {
      await withPage(browser, serving, async (page, trouble) => {
        await watchViolations(page);
        await page.reload();
        await page.getByLabel("Message").waitFor();
        const thrown = await page.evaluate(() => {
          const { document } = globalThis as any;
          const errors: string[] = [];
          const img = document.createElement("img");
          img.src = "http://remote.example/pixel.png";
          document.body.append(img);
          const div = document.createElement("div");
          div.setAttribute("style", "background: url(http://remote.example/bg.png)");
          document.body.append(div);
          for (const inject of [
            () => {
              const s = document.createElement("script");
              s.src = "http://remote.example/evil.js";
              document.body.append(s);
            },
            () => {
              const s = document.createElement("script");
              s.textContent = "window.__pwned = true";
              document.body.append(s);
            },
            () => {
              document.body.insertAdjacentHTML("beforeend", "<img src=x onerror='window.__pwned = true'>");
            },
          ])
            try {
              inject();
            } catch (error) {
              errors.push((error as Error).name);
            }
          return errors;
        });
        // Trusted Types refuse to turn strings into script or HTML outside DOMPurify.
        expect(thrown).toEqual(["TypeError", "TypeError", "TypeError"]);
        await expect
          .poll(async () => (await violations(page)).map((v) => v.directive).sort())
          .toEqual(expect.arrayContaining(["img-src", "require-trusted-types-for", "style-src-attr"]));
        expect((await violations(page)).find((v) => v.directive === "img-src")?.blocked).toBe(
          "http://remote.example/pixel.png",
        );
        expect(await page.evaluate(() => (globalThis as any).__pwned)).toBeUndefined();
        // Blocked before it left the browser.
        expect(trouble.remote).toEqual([]);
      });
    } finally {
      await serving.close();
    }
  }, 30_000);
});

/** About 50 bytes × `sections`… of Markdown with every kind of block a long answer has. */
function longAnswer(bytes: number): string {
  const parts: string[] = [];
  let size = 0;
  for (let i = 1; size < bytes; i++) {
    const part = [
      `## Section ${i}`,
      "",
      `Paragraph ${i} with **bold**, \`code\` and a [link](https://example.com/${i}). `.repeat(3),
      "",
      `- first point of ${i}`,
      `- second point of ${i}`,
      "",
      "| key | value |",
      "|-----|-------|",
      `| a${i} | ${i * 2} |`,
      "",
      "```js",
      `console.log(${i});`,
      "```",
      "",
      "",
    ].join("\n");
    parts.push(part);
    size += part.length;
  }
  return parts.join("").slice(0, bytes);
}

/** A model that streams `text` in `deltas` pieces, pausing now and then as a real one does. */
function streamingModel(text: string, deltas: number): Model {
  return {
    name: "streamer",
    async *stream() {
      const size = Math.ceil(text.length / deltas);
      for (let i = 0, n = 0; i < text.length; i += size, n++) {
        yield { type: "text_delta", delta: text.slice(i, i + size) };
        if (n % 20 === 19) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      yield { type: "finish", reason: "stop" };
    },
  };
}

describe("a long streamed answer", () => {
  it("renders 5,000 deltas (50 KB) without re-rendering what is done: work grows with the text, not its square", async () => {
    type Measure = { frames: number; renderMs: number; parsedChars: number; drops: number; sections: number };
    const measure = async (bytes: number, deltas: number): Promise<Measure> => {
      const text = longAnswer(bytes);
      const agent = new Agent({ name: "writer", model: streamingModel(text, deltas) });
      const serving = await serve(createServer({ agent }), { port: 0 });
      try {
        return await withPage(browser, serving, async (page) => {
          await page.getByLabel("Message").waitFor();
          // Samples what is shown on every frame: a flicker would be text vanishing, then coming back.
          await page.evaluate(() => {
            const w = globalThis as any;
            const { document, requestAnimationFrame } = w;
            w.__shown = [];
            const sample = () => {
              w.__shown.push(document.querySelector(".text")?.textContent?.length ?? 0);
              if (!w.__stop) requestAnimationFrame(sample);
            };
            requestAnimationFrame(sample);
          });
          await send(page, "write a lot");
          await expect.poll(() => page.getByRole("status").textContent(), { timeout: 20_000 }).toBe("Done.");
          await page.waitForFunction(
            () => (globalThis as any).document.querySelectorAll(".text h2").length > 0,
          );
          return page.evaluate(() => {
            const w = globalThis as any;
            const { document } = w;
            w.__stop = true;
            const shown: number[] = w.__shown;
            let drops = 0;
            for (let i = 1; i < shown.length; i++) drops = Math.max(drops, shown[i - 1]! - shown[i]!);
            const { frames, renderMs, parsedChars } = w.quiverPageStats;
            return {
              frames,
              renderMs,
              parsedChars,
              drops,
              sections: document.querySelectorAll(".text h2").length,
            };
          });
        });
      } finally {
        await serving.close();
      }
    };
    const small = await measure(10_000, 1_000);
    const large = await measure(50_000, 5_000);
    console.log(
      `page render: 1,000 deltas (10 KB) ${small.renderMs.toFixed(0)} ms in ${small.frames} frames, parsed ${small.parsedChars} chars; ` +
        `5,000 deltas (50 KB) ${large.renderMs.toFixed(0)} ms in ${large.frames} frames, parsed ${large.parsedChars} chars`,
    );
    // Every section arrived and was rendered once, in full, at the end.
    expect(large.sections).toBe(longAnswer(50_000).match(/^## /gm)!.length);
    // What is shown never disappears to be drawn again (a few characters of Markdown syntax may).
    expect(large.drops).toBeLessThan(100);
    // Linear: five times the text is about five times the parsing (re-parsing all of it on every
    // frame would be about 25 times).
    expect(large.parsedChars / small.parsedChars).toBeLessThan(10);
    expect(large.parsedChars).toBeLessThan(50_000 * 6);
    expect(large.renderMs).toBeLessThan(5_000);
  }, 60_000);
});
