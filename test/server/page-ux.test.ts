import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Browser, Page } from "playwright-core";
import { Agent, guardrail, type Model, type ModelRequest, ScriptedModel } from "quiver-agents";
import { createServer, serve } from "quiver-agents/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentWith, refundTool } from "./helpers.js";
import { launchBrowser, send, withPage } from "./page-browser.js";

let browser: Browser;

beforeAll(async () => {
  browser = await launchBrowser();
}, 30_000);

afterAll(async () => {
  await browser?.close();
});

const status = (page: Page) => page.getByRole("status").textContent();
const focused = (page: Page) =>
  page.evaluate(() => {
    const { document, getComputedStyle } = globalThis as any;
    const e = document.activeElement;
    const style = getComputedStyle(e);
    return {
      name: e.getAttribute("aria-label") ?? e.textContent?.trim() ?? "",
      tag: e.localName,
      ring: style.outlineStyle !== "none" && Number.parseFloat(style.outlineWidth) >= 2,
    };
  });

/** Presses `key` until the focused element's name is `name` (at most `max` times). */
async function tabTo(page: Page, name: string, key = "Tab", max = 15): Promise<void> {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press(key);
    if ((await focused(page)).name === name) return;
  }
  throw new Error(`${key} never reached ${name}`);
}

describe("the chat page, by keyboard and at a glance", () => {
  it("is usable by keyboard alone: Shift+Enter, Enter, Tab to approve with a visible focus ring, the chat drawer", async () => {
    const ran: string[] = [];
    const agent = agentWith(
      [
        (req) => ({
          text: `Got: ${JSON.stringify(req.messages.at(-1)?.content)}`,
          toolCalls: [{ id: "c1", name: "refund", args: { order: "A1" } }],
        }),
        { text: "Refunded." },
      ],
      [refundTool(ran)],
    );
    const serving = await serve(createServer({ agent }), { port: 0 });
    try {
      await withPage(
        browser,
        serving,
        async (page) => {
          // The page starts with the message box focused.
          await expect.poll(async () => (await focused(page)).tag).toBe("textarea");
          await page.keyboard.type("line one");
          await page.keyboard.press("Shift+Enter");
          await page.keyboard.type("line two");
          await page.keyboard.press("Enter");
          await page.getByText('Got: "line one\\nline two"').waitFor({ timeout: 5_000 });
          await expect.poll(() => status(page)).toBe("refund is waiting for your approval");
          // At phone width the composer of a running chat keeps its controls on one row.
          const rows = await page.evaluate(() =>
            ["attach", "message", "send", "cancel"].map((id) => {
              const box = (globalThis as any).document.getElementById(id).getBoundingClientRect();
              return box.width > 0 ? Math.round(box.bottom) : -1;
            }),
          );
          expect(new Set(rows).size, `bottoms of attach, message, send, stop: ${rows}`).toBe(1);

          // Back through the page from the message box to the approval, Tab only.
          await tabTo(page, "Approve refund", "Shift+Tab");
          expect((await focused(page)).ring).toBe(true);
          await page.keyboard.press("Enter");
          await page.getByText("Refunded.").waitFor({ timeout: 5_000 });
          expect(ran).toEqual(["A1"]);
          await expect.poll(() => status(page)).toBe("Done.");

          // The conversation itself takes focus (to scroll by keyboard) and shows its ring too.
          const onConversation = () =>
            page.evaluate(() => (globalThis as any).document.activeElement?.id === "scroller");
          for (let i = 0; i < 20 && !(await onConversation()); i++) await page.keyboard.press("Shift+Tab");
          expect(await onConversation()).toBe(true);
          expect((await focused(page)).ring).toBe(true);

          // At phone width the chat list is a drawer: opened and closed by keyboard, focus returning.
          await tabTo(page, "Show chats", "Shift+Tab", 20);
          expect((await focused(page)).ring).toBe(true);
          await page.keyboard.press("Enter");
          await expect.poll(async () => (await focused(page)).name).toMatch(/^line one line two/);
          await page.keyboard.press("Escape");
          await expect.poll(async () => (await focused(page)).name).toBe("Show chats");
          await expect.poll(() => page.locator("#sidebar").isVisible()).toBe(false);
          // Nothing in the closed drawer takes focus.
          await page.keyboard.press("Shift+Tab");
          expect(
            await page.evaluate(
              () => (globalThis as any).document.activeElement?.closest("#sidebar") === null,
            ),
          ).toBe(true);
        },
        { width: 380 },
      );
    } finally {
      await serving.close();
    }
  }, 30_000);

  it("follows a streaming answer unless the person scrolled up, and 'Jump to latest' brings them back", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const lines = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, i) => `Line ${from + i} of a long answer.\n\n`);
    const model: Model = {
      name: "gated",
      async *stream() {
        for (const line of lines(1, 40)) yield { type: "text_delta", delta: line };
        await Promise.race([gate, new Promise((r) => setTimeout(r, 10_000))]);
        for (const line of lines(41, 80)) yield { type: "text_delta", delta: line };
        yield { type: "finish", reason: "stop" };
      },
    };
    const serving = await serve(createServer({ agent: new Agent({ name: "writer", model }) }), { port: 0 });
    const position = (page: Page) =>
      page.evaluate(() => {
        const s = (globalThis as any).document.getElementById("scroller");
        return { top: s.scrollTop, fromBottom: s.scrollHeight - s.scrollTop - s.clientHeight };
      });
    try {
      await withPage(
        browser,
        serving,
        async (page) => {
          await send(page, "write");
          await page.getByText("Line 40 of a long answer.").waitFor({ timeout: 5_000 });
          await expect.poll(async () => (await position(page)).fromBottom).toBeLessThan(2);
          expect((await position(page)).top).toBeGreaterThan(500);

          // The person scrolls up to read; the rest arrives below without moving them.
          await page.locator("#scroller").hover();
          await page.mouse.wheel(0, -400);
          await expect.poll(async () => (await position(page)).fromBottom).toBeGreaterThan(300);
          const reading = (await position(page)).top;
          release();
          await page.getByText("Line 80 of a long answer.").waitFor({ timeout: 5_000 });
          await expect.poll(() => status(page)).toBe("Done.");
          expect((await position(page)).top).toBe(reading);
          const jump = page.getByRole("button", { name: "Jump to latest" });
          await jump.waitFor();
          await jump.click();
          await expect.poll(async () => (await position(page)).fromBottom).toBeLessThan(2);
          await expect.poll(() => jump.isVisible()).toBe(false);
        },
        { width: 800, height: 600 },
      );
    } finally {
      release();
      await serving.close();
    }
  }, 30_000);

  it("takes back what a turn streamed when a fallback discards it, and a withheld answer", async () => {
    let turn = 0;
    const model: Model = {
      name: "chain",
      async *stream() {
        turn++;
        if (turn === 1) {
          yield { type: "text_delta", delta: "Half an answer from the first model" };
          yield {
            type: "fallback",
            from: "openai:gpt-a",
            to: "anthropic:claude-b",
            reason: "503 overloaded",
          };
          yield { type: "text_delta", delta: "Your order shipped yesterday." };
        } else {
          yield { type: "text_delta", delta: "Buy bitcoin now!" };
        }
        yield { type: "finish", reason: "stop" };
      },
    };
    const onTopic = guardrail({
      name: "on_topic",
      check: async (output) => ({ tripped: /bitcoin/i.test(output.text), reason: "off topic" }),
    });
    const agent = new Agent({ name: "support", model, guardrails: { output: [onTopic] } });
    const serving = await serve(createServer({ agent }), { port: 0 });
    try {
      await withPage(browser, serving, async (page) => {
        await send(page, "where is my order?");
        await page.getByText("Your order shipped yesterday.").waitFor({ timeout: 5_000 });
        await page.getByText("openai:gpt-a failed; anthropic:claude-b answers instead").waitFor();
        expect(await page.getByText("Half an answer").count()).toBe(0);

        await send(page, "what should I buy?");
        await page
          .getByText("The answer was withheld by the guardrail on_topic.")
          .waitFor({ timeout: 5_000 });
        await expect.poll(() => page.getByText("Buy bitcoin now!").count()).toBe(0);
        // Reopened from the store, the page shows the same.
        await page.reload();
        await page.getByText("Your order shipped yesterday.").waitFor({ timeout: 5_000 });
        await page
          .getByText("The answer was withheld by the guardrail on_topic.")
          .waitFor({ timeout: 5_000 });
        expect(await page.getByText("Half an answer").count()).toBe(0);
        expect(await page.getByText("Buy bitcoin now!").count()).toBe(0);
      });
    } finally {
      await serving.close();
    }
  }, 30_000);

  it("saves screenshots at 1280 and 380 px, light and dark, for a person to look at", async () => {
    const folder = resolve("test-artifacts/page");
    mkdirSync(folder, { recursive: true });
    const reply = (req: ModelRequest) => {
      const asked = String(req.messages.at(-1)?.content);
      if (!asked.startsWith("Refund"))
        return { text: `Here is a short summary of **${asked}**:\n\n- revenue up 12%\n- costs flat` };
      return {
        text: [
          "I checked order **A1** against the policy:",
          "",
          "| Check | Result |",
          "|---|---|",
          "| Within 30 days | yes |",
          "| Item returned | yes, unopened |",
          "",
          "The refund call I will make:",
          "",
          "```ts",
          'await refund({ order: "A1", amount: 42.5 });',
          "```",
        ].join("\n"),
        toolCalls: [{ id: "c1", name: "refund", args: { order: "A1", amount: 42.5 } }],
      };
    };
    const agent = new Agent({
      name: "support",
      model: new ScriptedModel(Array.from({ length: 6 }, () => reply)),
      tools: [refundTool([])],
    });
    const serving = await serve(createServer({ agent }), { port: 0 });
    try {
      // Two earlier chats, so the list has something in it.
      for (const message of ["the Q3 report", "Dana's email about the offsite"]) {
        const response = await fetch(`${serving.url}/api/runs`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ message }),
        });
        expect(response.status).toBe(201);
      }
      let sessionId = "";
      await withPage(browser, serving, async (page) => {
        await send(page, "Refund order A1 please");
        await page.getByRole("button", { name: "Approve refund" }).waitFor({ timeout: 5_000 });
        sessionId = await page.evaluate(
          () => JSON.parse((globalThis as any).localStorage.getItem("quiver.chat")).sessionId,
        );
      });
      const saved: string[] = [];
      for (const width of [1280, 380])
        for (const colorScheme of ["light", "dark"] as const)
          await withPage(
            browser,
            serving,
            async (page) => {
              // Opens the chat with the waiting approval (set before the page's own script runs).
              await page.addInitScript((id) => {
                (globalThis as any).localStorage.setItem("quiver.chat", JSON.stringify({ sessionId: id }));
              }, sessionId);
              await page.reload();
              await page.getByRole("button", { name: "Approve refund" }).waitFor({ timeout: 5_000 });
              await expect.poll(() => page.locator("button.chat").count()).toBe(3);
              await page.getByLabel("Message").blur();
              const file = join(folder, `chat-${width}-${colorScheme}.png`);
              await page.screenshot({ path: file });
              saved.push(file);
              // Nothing wider than the window.
              expect(await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")).toBe(0);
              if (width < 600) {
                await page.getByRole("button", { name: "Show chats" }).click();
                await page.locator("#sidebar.open").waitFor();
                await page.waitForTimeout(250);
                const drawer = join(folder, `chats-${width}-${colorScheme}.png`);
                await page.screenshot({ path: drawer });
                saved.push(drawer);
              }
            },
            { width, height: width < 600 ? 760 : 800, colorScheme },
          );
      console.log(
        `page screenshots in ${folder}: ${saved.map((f) => f.slice(folder.length + 1)).join(", ")}`,
      );
      expect(saved).toHaveLength(6);
    } finally {
      await serving.close();
    }
  }, 45_000);
});
