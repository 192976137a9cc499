import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { Agent, jsonSchema, ScriptedModel, tool } from "quiver-agents";
import { createServer, serve } from "quiver-agents/server";
import { SqliteStore } from "quiver-agents/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentWith, refundTool, slowTool } from "./helpers.js";
import { launchBrowser, withPage } from "./page-browser.js";

let browser: Browser;

beforeAll(async () => {
  browser = await launchBrowser();
}, 30_000);

afterAll(async () => {
  await browser?.close();
});

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
      await withPage(browser, serving, async (page) => {
        // Keyboard only: the message box is labelled, Enter sends.
        await page.getByLabel("Message").fill("Refund order A1");
        await page.getByLabel("Message").press("Enter");
        await expect.poll(() => page.getByText("Checking the order.").count()).toBe(1);
        await expect.poll(() => page.getByRole("log").getByText("Refund order A1").count()).toBe(1);

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
      await withPage(browser, serving, async (page) => {
        await page.getByLabel("Message").fill("Refund something");
        await page.getByRole("button", { name: "Send" }).click();
        await page.getByText("Which order?", { exact: true }).waitFor({ timeout: 5_000 });
        await page.getByRole("button", { name: "B2", exact: true }).click();
        await page.getByText("You picked B2.").waitFor({ timeout: 5_000 });
        await page.getByLabel("Reason").fill("not today");
        await page.getByRole("button", { name: "Deny" }).click();
        await page.getByText(/Refund: .*not today/).waitFor({ timeout: 5_000 });
        expect(ran).toEqual([]);
        // The denied card says what happened, not the hint meant for the model.
        await page
          .getByText("refund was not approved: not today", { exact: true })
          .waitFor({ timeout: 5_000 });

        await page.getByLabel("Message").fill("one more thing");
        await page.getByLabel("Message").press("Enter");
        await page.getByText("working on forever").waitFor({ timeout: 5_000 });
        await page.getByRole("button", { name: "Stop" }).click();
        await page.getByRole("log").getByText("Cancelled.", { exact: true }).waitFor({ timeout: 5_000 });
        await expect.poll(() => page.getByRole("status").textContent()).toBe("Cancelled.");
      });
    } finally {
      slow.release();
      await serving.close();
    }
  }, 30_000);

  it("shows an agent used as a tool inside the call that started it, and approves the child's call there", async () => {
    const ran: string[] = [];
    const clerk = new Agent({
      name: "clerk",
      model: new ScriptedModel([
        { text: "Looking at A1.", toolCalls: [{ id: "c1", name: "refund", args: { order: "A1" } }] },
        { text: "clerk refunded it" },
      ]),
      tools: [refundTool(ran)],
    });
    const boss = new Agent({
      name: "boss",
      model: new ScriptedModel([
        { toolCalls: [{ id: "p1", name: "clerk", args: { input: "refund A1" } }] },
        { text: "The clerk is done." },
      ]),
      tools: [clerk.asTool()],
    });
    const serving = await serve(createServer({ agent: boss }), { port: 0 });
    try {
      await withPage(browser, serving, async (page) => {
        await page.getByLabel("Message").fill("please refund A1");
        await page.getByLabel("Message").press("Enter");
        // The child's work shows inside the boss's call to it, approval buttons included.
        const parent = page.locator('details[data-call-id="p1"]');
        const approve = parent.getByRole("button", { name: "Approve refund" });
        await approve.waitFor({ timeout: 5_000 });
        await expect
          .poll(() => parent.getByRole("group", { name: /clerk/ }).textContent())
          .toContain("Looking at A1.");
        await expect
          .poll(() => page.getByRole("status").textContent())
          .toBe("refund is waiting for your approval");
        expect(ran).toEqual([]);
        await approve.click();
        await page.getByText("The clerk is done.").waitFor({ timeout: 5_000 });
        expect(ran).toEqual(["A1"]);
        await expect.poll(() => parent.textContent()).toContain("refunded A1");
        await expect.poll(() => page.getByRole("status").textContent()).toBe("Done.");

        // A reload replays the child's part once, in the same place.
        await page.reload();
        await page.getByText("The clerk is done.").waitFor({ timeout: 5_000 });
        expect(await page.getByText("Looking at A1.").count()).toBe(1);
        // Once as the clerk's words, once as the boss's call result.
        expect(
          await parent.getByRole("group", { name: /clerk/ }).getByText("clerk refunded it").count(),
        ).toBe(1);
        expect(await page.getByText("clerk refunded it").count()).toBe(2);
        expect(await parent.locator("details.tool").count()).toBe(1);
      });
    } finally {
      await serving.close();
    }
  }, 30_000);

  it("answers an ask_human question a child run asks, in the card of the call that started it", async () => {
    const { askHuman, HumanChannel } = await import("quiver-agents/tools");
    const channel = new HumanChannel();
    const clerk = new Agent({
      name: "clerk",
      model: new ScriptedModel([
        { toolCalls: [{ id: "q1", name: "ask_human", args: { question: "Which order?" } }] },
        (req) => ({ text: `clerk heard ${String(req.messages.at(-1)?.content)}` }),
      ]),
      tools: [askHuman(channel)],
    });
    const boss = new Agent({
      name: "boss",
      model: new ScriptedModel([
        { toolCalls: [{ id: "p1", name: "clerk", args: { input: "ask which order" } }] },
        { text: "Boss is done." },
      ]),
      tools: [clerk.asTool()],
    });
    const serving = await serve(createServer({ agent: boss, human: channel }), { port: 0 });
    try {
      await withPage(browser, serving, async (page) => {
        await page.getByLabel("Message").fill("refund something");
        await page.getByLabel("Message").press("Enter");
        const parent = page.locator('details[data-call-id="p1"]');
        await parent.getByText("Which order?", { exact: true }).waitFor({ timeout: 5_000 });
        await parent.getByLabel("Your answer").fill("B2");
        await parent.getByLabel("Your answer").press("Enter");
        await page.getByText("Boss is done.").waitFor({ timeout: 5_000 });
        await expect.poll(() => parent.textContent()).toContain("clerk heard B2");
      });
    } finally {
      await serving.close();
    }
  }, 30_000);

  it("with a store, a parked run survives a server restart: the open page reconnects, approves, and a reload shows it once", async () => {
    const dir = mkdtempSync(join(tmpdir(), "quiver-page-store-"));
    const path = join(dir, "runs.db");
    const ran: string[] = [];
    let store = new SqliteStore({ path });
    const before = agentWith(
      [{ text: "Checking A1.", toolCalls: [{ id: "c1", name: "refund", args: { order: "A1" } }] }],
      [refundTool(ran)],
    );
    let serving = await serve(createServer({ agent: before, store }), { port: 0 });
    const port = serving.port;
    try {
      await withPage(browser, serving, async (page) => {
        await page.getByLabel("Message").fill("Refund order A1");
        await page.getByLabel("Message").press("Enter");
        await page.getByRole("button", { name: "Approve refund" }).waitFor({ timeout: 5_000 });
        await expect
          .poll(() => page.getByRole("status").textContent())
          .toMatch(/saved: you can close this page/);

        // The process goes away with the run parked; a new one starts on the same port.
        const runId = await page.locator("section.run").getAttribute("data-run-id");
        await expect
          .poll(
            async () =>
              ((await (await fetch(`${serving.url}/api/runs/${runId}`)).json()) as { status: string }).status,
          )
          .toBe("parked");
        await serving.close();
        await store.close();
        await expect.poll(() => page.getByRole("status").textContent()).toMatch(/reconnecting/);
        store = new SqliteStore({ path });
        const after = agentWith([{ text: "Refunded." }], [refundTool(ran)]);
        serving = await serve(createServer({ agent: after, store }), { port });
        await expect
          .poll(() => page.getByRole("status").textContent(), { timeout: 15_000 })
          .toMatch(/saved: you can close this page/);

        await page.getByRole("button", { name: "Approve refund" }).click();
        await page.getByText("Refunded.").waitFor({ timeout: 5_000 });
        expect(ran).toEqual(["A1"]);
        await expect.poll(() => page.getByRole("status").textContent()).toBe("Done.");

        await page.reload();
        await page.getByText("Refunded.").waitFor({ timeout: 5_000 });
        expect(await page.getByText("Checking A1.").count()).toBe(1);
        expect(await page.locator("section.run").count()).toBe(1);
        await expect
          .poll(() => page.locator('details[data-call-id="c1"]').textContent())
          .toContain("refunded A1");
      });
    } finally {
      await serving.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 45_000);

  it("shows an edit as a diff before it is approved, and asks for the token of a server behind auth, saying when one is refused", async () => {
    const edits: string[] = [];
    const edit = tool({
      name: "edit_file",
      description: "Edit a file",
      parameters: jsonSchema<{ path: string; old_string: string; new_string: string }>({
        type: "object",
        properties: {
          path: { type: "string" },
          old_string: { type: "string" },
          new_string: { type: "string" },
        },
        required: ["path", "old_string", "new_string"],
      }),
      needsApproval: true,
      execute: async ({ path }) => {
        edits.push(path);
        return `edited ${path}`;
      },
    });
    const agent = agentWith(
      [
        {
          toolCalls: [
            {
              id: "e1",
              name: "edit_file",
              args: { path: "greet.ts", old_string: "hello\nworld", new_string: "hello\nthere" },
            },
          ],
        },
        { text: "Edited." },
      ],
      [edit],
    );
    const serving = await serve(createServer({ agent, auth: "open-sesame" }), { port: 0 });
    try {
      await withPage(
        browser,
        serving,
        async (page) => {
          // The page itself loads; the API wants the token, so the page asks for it.
          await expect
            .poll(() => page.getByRole("status").textContent())
            .toBe("This server needs an access token.");
          // A wrong token is refused, and the page says so (not that a token is needed).
          await page.getByLabel("Access token").fill("guess");
          await page.getByLabel("Access token").press("Enter");
          await expect
            .poll(() => page.getByRole("status").textContent())
            .toBe("The server refused this access token.");
          await expect
            .poll(() => page.locator("#token-note").textContent())
            .toBe("The server refused this access token.");
          await page.getByLabel("Access token").fill("open-sesame");
          await page.getByLabel("Access token").press("Enter");
          await page.getByLabel("Message").fill("fix the greeting");
          await page.getByLabel("Message").press("Enter");
          await page.getByRole("button", { name: "Approve edit_file" }).waitFor({ timeout: 5_000 });
          const diff = page.locator('details[data-call-id="e1"] pre.diff');
          expect(await diff.locator(".del").allTextContents()).toEqual(["-world\n"]);
          expect(await diff.locator(".add").allTextContents()).toEqual(["+there\n"]);
          expect(edits).toEqual([]);
          await page.getByRole("button", { name: "Approve edit_file" }).click();
          await page.getByText("Edited.").waitFor({ timeout: 5_000 });
          expect(edits).toEqual(["greet.ts"]);
        },
        { allowStatus: [401] },
      );
    } finally {
      await serving.close();
    }
  }, 30_000);
});
