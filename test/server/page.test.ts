import { type Browser, chromium, type Page } from "playwright-core";
import { createServer, type Serving, serve } from "quiver-agents/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentWith, refundTool, slowTool } from "./helpers.js";

let browser: Browser;

beforeAll(async () => {
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
}, 30_000);

afterAll(async () => {
  await browser?.close();
});

async function withPage<T>(serving: Serving, body: (page: Page) => Promise<T>, width = 390): Promise<T> {
  const context = await browser.newContext({ viewport: { width, height: 800 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  try {
    await page.goto(serving.url);
    const result = await body(page);
    expect(errors).toEqual([]);
    return result;
  } finally {
    await context.close();
  }
}

describe("the web chat page in Chromium", () => {
  it("sends a message, streams the answer, approves a call, and picks the run up again after a reload", async () => {
    const ran: string[] = [];
    const slow = slowTool();
    const agent = agentWith(
      [
        { text: "Checking the order.", toolCalls: [{ id: "c1", name: "refund", args: { order: "A1" } }] },
        { text: "Now the slow part.", toolCalls: [{ id: "s1", name: "slow", args: { step: "ledger" } }] },
        { text: "All done." },
      ],
      [refundTool(ran), slow.tool],
    );
    const serving = await serve(createServer({ agent }), { port: 0 });
    try {
      await withPage(serving, async (page) => {
        // Keyboard only: the message box is labelled, Enter sends.
        await page.getByLabel("Message").fill("Refund order A1");
        await page.getByLabel("Message").press("Enter");
        await expect.poll(() => page.getByText("Checking the order.").count()).toBe(1);
        await expect.poll(() => page.getByText("Refund order A1").count()).toBe(1);

        // The approval shows the call's arguments and waits for the person.
        const approve = page.getByRole("button", { name: "Approve refund" });
        await approve.waitFor({ timeout: 5_000 });
        const card = page.locator('details[data-call-id="c1"]');
        await expect.poll(() => card.textContent()).toContain('"order": "A1"');
        expect(ran).toEqual([]);
        await approve.focus();
        await page.keyboard.press("Enter");
        await expect.poll(() => card.textContent()).toContain("refunded A1");
        expect(ran).toEqual(["A1"]);

        // Mid-run (the slow tool reports progress and waits): reload.
        await expect.poll(() => page.getByText("working on ledger").count()).toBe(1);
        await page.reload();
        await expect.poll(() => page.getByText("working on ledger").count()).toBe(1);
        slow.release();
        await expect.poll(() => page.getByText("All done.").count(), { timeout: 5_000 }).toBe(1);
        // The same run, each piece of text once.
        expect(await page.getByText("Checking the order.").count()).toBe(1);
        expect(await page.getByText("Now the slow part.").count()).toBe(1);
        expect(await page.locator("section.run").count()).toBe(1);
        await expect.poll(() => page.getByRole("status").textContent()).toBe("Done.");
        // Readable at phone width: nothing wider than the viewport.
        const overflow = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth");
        expect(overflow).toBeLessThanOrEqual(0);
      });
    } finally {
      await serving.close();
    }
  }, 30_000);

  it("answers ask_human questions, denies with a reason and cancels a run", async () => {
    const { askHuman, HumanChannel } = await import("quiver-agents/tools");
    const channel = new HumanChannel();
    const ran: string[] = [];
    const slow = slowTool();
    const agent = agentWith(
      [
        {
          toolCalls: [
            {
              id: "q1",
              name: "ask_human",
              args: { question: "Which order?", options: [{ label: "A1" }, { label: "B2" }] },
            },
          ],
        },
        (req) => ({
          text: `You picked ${String(req.messages.at(-1)?.content)}.`,
          toolCalls: [{ id: "c1", name: "refund", args: { order: "B2" } }],
        }),
        (req) => ({ text: `Refund: ${String(req.messages.at(-1)?.content)}` }),
        { toolCalls: [{ id: "s1", name: "slow", args: { step: "forever" } }] },
      ],
      [askHuman(channel), refundTool(ran), slow.tool],
    );
    const serving = await serve(createServer({ agent, human: channel }), { port: 0 });
    try {
      await withPage(serving, async (page) => {
        await page.getByLabel("Message").fill("Refund something");
        await page.getByRole("button", { name: "Send" }).click();
        await page.getByText("Which order?", { exact: true }).waitFor({ timeout: 5_000 });
        await page.getByRole("button", { name: "B2", exact: true }).click();
        await page.getByText("You picked B2.").waitFor({ timeout: 5_000 });
        await page.getByLabel("Reason").fill("not today");
        await page.getByRole("button", { name: "Deny" }).click();
        await page.getByText(/Refund: .*not today/).waitFor({ timeout: 5_000 });
        expect(ran).toEqual([]);

        await page.getByLabel("Message").fill("one more thing");
        await page.getByLabel("Message").press("Enter");
        await page.getByText("working on forever").waitFor({ timeout: 5_000 });
        await page.getByRole("button", { name: "Cancel run" }).click();
        await page.getByText("Stopped: cancelled").waitFor({ timeout: 5_000 });
      });
    } finally {
      slow.release();
      await serving.close();
    }
  }, 30_000);
});
