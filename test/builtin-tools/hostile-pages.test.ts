import { monitorEventLoopDelay } from "node:perf_hooks";
import { parseHTML } from "linkedom";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { boundHtml, MAX_DEPTH } from "../../src/builtin-tools/html-bounds.js";
import { HttpReader } from "../../src/builtin-tools/http-reader.js";
import { webFetch } from "../../src/builtin-tools/web-fetch.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import { Agent } from "../../src/run/config/agent.js";
import { Runner } from "../../src/run/runner.js";
import { tool } from "../../src/tool/tool.js";
import { send, startServer, type TestServer } from "./helpers.js";
import { hostilePages } from "./hostile-pages.js";

/** The pages of the issue and the other quick ones; the heavy ones run in the benchmark. */
const PAGES = hostilePages().filter((p) => !p.heavy);
const slug = (name: string) => name.replace(/[^a-z0-9]+/gi, "-").toLowerCase();

let server: TestServer;
beforeAll(async () => {
  const byPath = new Map(hostilePages().map((p) => [`/${slug(p.name)}`, p.html]));
  server = await startServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (path === "/slow-chains") {
      // Seconds of conversion: 1 MB of nested div chains.
      return send(res, 200, "text/html", hostilePages().find((p) => p.name.includes("div chains"))!.html);
    }
    if (path === "/quick")
      return send(res, 200, "text/html", "<main><h1>Quick</h1><p>still served</p></main>");
    const html = byPath.get(path);
    if (html === undefined) return send(res, 404, "text/plain", "no such page");
    send(res, 200, "text/html; charset=utf-8", html);
  });
});
afterAll(() => server.close());

const reader = () => new HttpReader({ allowHosts: ["127.0.0.1"] });

describe("hostile pages cannot freeze the process", () => {
  it("each converts in bounded time and keeps its text, while the event loop keeps turning", async () => {
    const pageReader = reader();
    // Warm the conversion thread, so the measurement is of the pages, not of a first start.
    await pageReader.read(`${server.origin}/quick`);
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const started = performance.now();
    const outcomes = await Promise.all(
      PAGES.map(async (page) => {
        try {
          const { status, text } = await pageReader.read(`${server.origin}/${slug(page.name)}`);
          return { page, out: `HTTP ${status}\n${text}` };
        } catch (error) {
          return { page, error: error as Error };
        }
      }),
    );
    delay.disable();
    // Before, one of these pages alone blocked the loop for 10 to 45 seconds.
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(delay.max / 1e6, "longest event-loop stall, ms").toBeLessThan(500);
    for (const { page, out, error } of outcomes) {
      expect(error, page.name).toBeUndefined();
      expect(out, page.name).toMatch(/^HTTP 200\n/);
      if (page.keeps) expect(out, page.name).toContain(page.keeps);
    }
  });

  it("a page nested 100,000 deep keeps its headings above the cut and its text below it", async () => {
    const html = `<h1>Deep page</h1><p>Intro words.</p>${"<div>".repeat(100_000)}deepword${"</div>".repeat(100_000)}`;
    const once = await startServer((_req, res) => send(res, 200, "text/html", html));
    const page = await reader()
      .read(`${once.origin}/page`)
      .finally(() => once.close());
    expect(page.text).toContain("# Deep page");
    expect(page.text).toContain("Intro words.");
    expect(page.text).toContain("deepword");
  });

  it("a conversion past its deadline is stopped and reported as a tool error; the next page converts", async () => {
    const slow = new HttpReader({ allowHosts: ["127.0.0.1"], conversionTimeoutMs: 40 });
    const started = performance.now();
    const failure = await slow.read(`${server.origin}/slow-chains`).catch((error: Error) => error);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).name).toBe("ToolError");
    expect((failure as Error).message).toMatch(/converting .*slow-chains to Markdown timed out after 40 ms/);
    // The conversion alone takes far longer than this: it was stopped, not waited for.
    expect(performance.now() - started).toBeLessThan(3_000);
    // The pool replaced the stopped thread: the next page converts (under the default deadline,
    // since a fresh thread's first page may itself take more than 40 ms on a loaded machine).
    const next = await reader().read(`${server.origin}/quick`);
    expect(next.text).toContain("still served");
  });

  it("through a run, the deadline is a tool_error the model reads, and the run goes on", async () => {
    const model = new ScriptedModel([
      { toolCalls: [{ name: "web_fetch", args: { url: `${server.origin}/slow-chains` } }] },
      { text: "that page could not be read" },
    ]);
    const agent = new Agent({
      name: "reader",
      model,
      tools: [webFetch(new HttpReader({ allowHosts: ["127.0.0.1"], conversionTimeoutMs: 40 }))],
    });
    const result = await Runner.run(agent, "read it");
    expect(result.stopReason).toBe("completed");
    const call = result.toolCalls[0]!;
    expect(call.ok).toBe(false);
    expect(call.output).toMatch(/timed out after 40 ms/);
  });

  it("cancelling a read stops its conversion at once, and the pool recovers", async () => {
    const controller = new AbortController();
    const started = performance.now();
    const read = reader().read(`${server.origin}/slow-chains`, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error("run cancelled")), 150);
    await expect(read).rejects.toThrow("run cancelled");
    expect(performance.now() - started).toBeLessThan(2_000);
    const next = await reader().read(`${server.origin}/quick`);
    expect(next.text).toContain("still served");
  });

  it("another run's quick tool finishes while a hostile page converts", async () => {
    const order: string[] = [];
    const slowRun = Runner.run(
      new Agent({
        name: "slow",
        model: new ScriptedModel([
          { toolCalls: [{ name: "web_fetch", args: { url: `${server.origin}/slow-chains` } }] },
          { text: "read" },
        ]),
        tools: [webFetch(reader())],
      }),
      "read",
    ).then(() => order.push("slow run"));
    const ping = tool({
      name: "ping",
      description: "Answers at once.",
      parameters: { type: "object", properties: {} },
      execute: async () => "pong",
    });
    const quickRun = Runner.run(
      new Agent({
        name: "quick",
        model: new ScriptedModel([{ toolCalls: [{ name: "ping", args: {} }] }, { text: "pong" }]),
        tools: [ping],
      }),
      "ping",
    ).then(() => order.push("quick run"));
    await Promise.all([slowRun, quickRun]);
    expect(order).toEqual(["quick run", "slow run"]);
  });
});

describe("the pre-pass bounds what the parser sees", () => {
  /** The depth of the tree linkedom builds from `html` (the document element is level 1). */
  const treeDepth = (html: string) => {
    const { document } = parseHTML(html);
    let deepest = 0;
    const stack: Array<[any, number]> = [[document.documentElement, 1]];
    while (stack.length > 0) {
      const [el, depth] = stack.pop()!;
      deepest = Math.max(deepest, depth);
      for (let c = el.firstElementChild; c; c = c.nextElementSibling) stack.push([c, depth + 1]);
    }
    return deepest;
  };

  it("property: random tag soup never parses deeper than the bound, and shallow soup is left as it was", () => {
    const pieces = [
      "<div>",
      "</div>",
      "<p>",
      "</p>",
      "<li>",
      "<ul>",
      "</ul>",
      "<table><tr><td>",
      "</td>",
      "<span class='a>b'>",
      "</span>",
      "<svg>",
      "<path/>",
      "</svg>",
      "<math><mi>",
      "<br/>",
      "</br>",
      "<script>if (a < b) '<div>'</script>",
      "<title><b></title>",
      "<!-- <div> -->",
      "<![CDATA[<div>]]>",
      "<!x>",
      "<?pi <div>?>",
      "< div>",
      "</ div>",
      "<a href=x/>",
      "<DIV>",
      "</DIV >",
      "text ",
      "&amp;",
      "<",
    ];
    let seed = 99;
    const random = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    for (let round = 0; round < 60; round++) {
      let soup = "<html><body>";
      const length = 50 + Math.floor(random() * 3_000);
      // Most rounds lean towards opening, so that some go far past the bound.
      const openBias = random() < 0.7;
      for (let i = 0; i < length; i++) {
        const piece = pieces[Math.floor(random() * pieces.length)]!;
        soup += openBias && piece.startsWith("</") && random() < 0.8 ? "<div>" : piece;
      }
      soup += "</body></html>";
      const bounded = boundHtml(soup);
      const depth = treeDepth(bounded.html);
      // +1: a void element or the line break that stands for removed tags sits below the deepest open one.
      expect(depth, soup.slice(0, 200)).toBeLessThanOrEqual(MAX_DEPTH + 1);
      if (bounded.flattened === 0) {
        expect(bounded.html).toBe(soup);
        expect(bounded.deepest).toBeGreaterThanOrEqual(depth - 1);
      }
    }
  });

  it("is linear: 100,000 levels cost about ten times 10,000 levels", () => {
    const time = (depth: number) => {
      const html = `${"<div>".repeat(depth)}x${"</div>".repeat(depth)}`;
      let best = Number.POSITIVE_INFINITY;
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        boundHtml(html);
        best = Math.min(best, performance.now() - started);
      }
      return best;
    };
    time(10_000);
    const small = Math.max(time(10_000), 0.5);
    const large = time(100_000);
    expect(large / small).toBeLessThan(40); // quadratic would be 100
  });
});
