import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Browser, Page } from "playwright-core";
import { Agent, type ContentBlock, type ModelRequest, ScriptedModel, tool } from "quiver-agents";
import { createServer, type Serving, serve } from "quiver-agents/server";
import { SqliteStore } from "quiver-agents/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { launchBrowser, send, withPage } from "./page-browser.js";

let browser: Browser;

beforeAll(async () => {
  browser = await launchBrowser();
}, 30_000);

afterAll(async () => {
  await browser?.close();
});

/** A model that says what the last message held, and records every request (`model.requests`). */
function showingModel(turns = 6) {
  const answer = (request: ModelRequest) => {
    const content = request.messages.at(-1)!.content;
    const parts = typeof content === "string" ? ["text"] : content.map((part) => part.type);
    return { text: `I was shown: ${parts.join(", ")}` };
  };
  return new ScriptedModel(Array.from({ length: turns }, () => answer));
}

/** A PNG drawn by the browser (a small bar chart), as bytes. */
async function chartPng(page: Page, width = 240, height = 150): Promise<Buffer> {
  const url = await page.evaluate(
    ({ w, h }) => {
      const canvas = (globalThis as any).document.createElement("canvas");
      canvas.width = w;
      canvas.height = h;
      const g = canvas.getContext("2d");
      g.fillStyle = "#f4f6fb";
      g.fillRect(0, 0, w, h);
      ["#2451c7", "#1f7a3a", "#b3261e", "#8a5cf5"].forEach((color, i) => {
        g.fillStyle = color;
        const bar = (h - 20) * (0.35 + 0.18 * i);
        g.fillRect(20 + i * 55, h - 10 - bar, 40, bar);
      });
      return canvas.toDataURL("image/png") as string;
    },
    { w: width, h: height },
  );
  return Buffer.from(url.slice(url.indexOf(",") + 1), "base64");
}

/** What an `<img>` in the page shows: its source's scheme and its decoded width. */
const shown = (page: Page, selector: string) =>
  page.locator(selector).evaluateAll((images) =>
    images.map((img: any) => ({
      scheme: String(img.src).split(":")[0],
      width: img.naturalWidth as number,
    })),
  );

/** POSTs to /api/runs the page made. */
function countRuns(page: Page): { count: number } {
  const seen = { count: 0 };
  page.on("request", (request) => {
    if (request.method() === "POST" && new URL(request.url()).pathname === "/api/runs") seen.count++;
  });
  return seen;
}

describe("attachments in the chat page", () => {
  it("attaches an image with the button, sends it byte for byte, shows it inline, and again from a SqliteStore after a restart", async () => {
    const dir = mkdtempSync(join(tmpdir(), "quiver-page-attach-"));
    const path = join(dir, "runs.db");
    let store = new SqliteStore({ path });
    const model = showingModel();
    let serving: Serving = await serve(
      createServer({ agent: new Agent({ name: "analyst", model }), store }),
      {
        port: 0,
      },
    );
    const port = serving.port;
    try {
      await withPage(
        browser,
        serving,
        async (page) => {
          const png = await chartPng(page);
          // The attach button is a named control, reached by Tab from the message box backwards.
          await page.getByLabel("Message").press("Shift+Tab");
          expect(await page.evaluate(() => (globalThis as any).document.activeElement.id)).toBe("attach");
          await page
            .locator("#file-input")
            .setInputFiles({ name: "chart.png", mimeType: "image/png", buffer: png });
          await page.getByRole("button", { name: "Remove chart.png" }).waitFor();
          expect(await shown(page, "#attachments img")).toEqual([{ scheme: "blob", width: 240 }]);
          await page.getByLabel("Message").fill("What is in this chart?");
          const folder = resolve("test-artifacts/page");
          mkdirSync(folder, { recursive: true });
          await page.screenshot({ path: join(folder, "attach-1280.png") });

          await page.getByLabel("Message").press("Enter");
          await page.getByText("I was shown: text, image").waitFor({ timeout: 5_000 });
          const content = model.requests[0]!.messages.at(-1)!.content as ContentBlock[];
          expect(content).toEqual([
            { type: "text", text: "What is in this chart?" },
            { type: "image", data: png.toString("base64"), mimeType: "image/png" },
          ]);
          // Sent: the chip is gone, and the image is in the conversation.
          expect(await page.locator("#attachments li").count()).toBe(0);
          expect(await page.locator("#attachments").isHidden()).toBe(true);
          await expect.poll(() => shown(page, ".user img")).toEqual([{ scheme: "blob", width: 240 }]);
          expect(await page.locator(".user img").getAttribute("alt")).toBe("chart.png");
          await page.screenshot({ path: join(folder, "attach-sent-1280.png") });

          await page.getByRole("button", { name: "New chat" }).click();
          await send(page, "second question");
          await page.getByText("I was shown: text").waitFor({ timeout: 5_000 });

          // The server goes away and comes back with the same database: the image is in the history.
          await serving.close();
          await store.close();
          store = new SqliteStore({ path });
          serving = await serve(createServer({ agent: new Agent({ name: "analyst", model }), store }), {
            port,
          });
          await page.reload();
          await page.locator(".user", { hasText: "second question" }).waitFor({ timeout: 5_000 });
          await page
            .getByRole("navigation", { name: "Past chats" })
            .getByRole("button", { name: /What is in this chart/ })
            .click();
          await page.getByText("I was shown: text, image").waitFor({ timeout: 5_000 });
          await expect.poll(() => shown(page, ".user img")).toEqual([{ scheme: "blob", width: 240 }]);
        },
        { width: 1280 },
      );
    } finally {
      await serving.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);

  it("pastes an image and drops a PDF; refuses other types and files over the limits, in the page", async () => {
    const model = showingModel();
    const serving = await serve(createServer({ agent: new Agent({ name: "reader", model }) }), { port: 0 });
    try {
      await withPage(browser, serving, async (page) => {
        const runs = countRuns(page);
        const png = await chartPng(page, 60, 40);
        const pdf = Buffer.from("%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n%%EOF\n");
        const note = page.locator("#attach-note");
        // Files made in the page, handed over as the browser does: a paste, a drop, the file input.
        await page.evaluate(
          ({ pngBase64, pdfBase64 }) => {
            const { document, DataTransfer, File, ClipboardEvent, DragEvent } = globalThis as any;
            const bytes = (b64: string) => Uint8Array.from(atob(b64), (c: string) => c.charCodeAt(0));
            const files = (...list: any[]) => {
              const transfer = new DataTransfer();
              for (const file of list) transfer.items.add(file);
              return transfer;
            };
            (globalThis as any).__paste = () =>
              document.getElementById("message").dispatchEvent(
                new ClipboardEvent("paste", {
                  clipboardData: files(new File([bytes(pngBase64)], "image.png", { type: "image/png" })),
                  bubbles: true,
                  cancelable: true,
                }),
              );
            (globalThis as any).__drop = (name: string, type: string, size?: number, kind = "drop") =>
              document.getElementById("scroller").dispatchEvent(
                new DragEvent(kind, {
                  dataTransfer: files(
                    new File([size ? new Uint8Array(size) : bytes(pdfBase64)], name, { type }),
                  ),
                  bubbles: true,
                  cancelable: true,
                }),
              );
            (globalThis as any).__choose = (name: string, type: string, size: number) => {
              const input = document.getElementById("file-input");
              input.files = files(new File([new Uint8Array(size)], name, { type })).files;
              input.dispatchEvent(new Event("change", { bubbles: true }));
            };
          },
          { pngBase64: png.toString("base64"), pdfBase64: pdf.toString("base64") },
        );

        // Too large: refused with the reason, no chip, and nothing goes to the server.
        await page.evaluate(() => (globalThis as any).__choose("huge.png", "image/png", 21 * 1024 * 1024));
        expect(await note.textContent()).toBe("huge.png is 21 MB: a file may be at most 20 MB.");
        expect(await page.locator("#attachments li").count()).toBe(0);
        await page.getByLabel("Message").press("Enter");
        // Dragged over the conversation, the page says it will take the file (and the browser will not open it).
        expect(
          await page.evaluate(() => (globalThis as any).__drop("a.pdf", "application/pdf", 1, "dragover")),
        ).toBe(false);
        expect(await page.locator(".main.dropping").count()).toBe(1);
        // Not a type the page takes.
        await page.evaluate(() => (globalThis as any).__drop("notes.txt", "text/plain", 10));
        expect(await note.textContent()).toBe(
          "notes.txt cannot be attached: only images (PNG, JPEG, GIF, WebP) and PDFs can.",
        );
        // Two files that each fit but together would not fit one request (32 MB, as base64).
        await page.evaluate(() =>
          (globalThis as any).__drop("big-a.pdf", "application/pdf", 15 * 1024 * 1024),
        );
        await page.evaluate(() =>
          (globalThis as any).__drop("big-b.pdf", "application/pdf", 15 * 1024 * 1024),
        );
        expect(await note.textContent()).toMatch(
          /^big-b\.pdf \(15 MB\) would take this message over the 32 MB it may carry/,
        );
        // Removed by keyboard: the chip's remove button has the file's name.
        await page.getByRole("button", { name: "Remove big-a.pdf" }).press("Enter");
        expect(await page.locator("#attachments li").count()).toBe(0);
        expect(await page.evaluate(() => (globalThis as any).document.activeElement.id)).toBe("attach");
        expect(runs.count).toBe(0);

        // A pasted image and a dropped PDF go with the message, byte for byte.
        await page.evaluate(() => (globalThis as any).__paste());
        await page.evaluate(() => (globalThis as any).__drop("q3-report.pdf", "application/pdf"));
        await page.getByRole("button", { name: "Remove image.png" }).waitFor();
        expect(await page.locator("#attachments li:not(.image)").textContent()).toBe(
          `PDFq3-report.pdf${pdf.length} bytes✕`,
        );
        expect(await note.isHidden()).toBe(true);
        await page.screenshot({ path: join(resolve("test-artifacts/page"), "attach-390.png") });
        // Files alone make a message.
        await page.getByLabel("Message").press("Enter");
        await page.getByText("I was shown: image, file").waitFor({ timeout: 5_000 });
        expect(runs.count).toBe(1);
        expect(model.requests[0]!.messages.at(-1)!.content).toEqual([
          { type: "image", data: png.toString("base64"), mimeType: "image/png" },
          {
            type: "file",
            data: pdf.toString("base64"),
            mimeType: "application/pdf",
            filename: "q3-report.pdf",
          },
        ]);
        await expect.poll(() => shown(page, ".user img")).toEqual([{ scheme: "blob", width: 60 }]);
        expect(await page.locator(".user .media-chip").textContent()).toBe(
          `PDFq3-report.pdf${pdf.length} bytes`,
        );
      });
    } finally {
      await serving.close();
    }
  }, 20_000);

  it("shows an image a tool returns inline, and one given by a remote URL only as a link", async () => {
    const png =
      "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    const screenshot = tool({
      name: "screenshot",
      description: "Take a screenshot of a page.",
      parameters: z.object({ url: z.string() }),
      readOnly: true,
      execute: async ({ url }) => ({
        content: [
          { type: "text" as const, text: `screenshot of ${url}` },
          { type: "image" as const, data: png, mimeType: "image/png" },
          { type: "image" as const, url: "https://remote.example/pixel.png", mimeType: "image/png" },
        ],
      }),
    });
    const model = new ScriptedModel([
      { toolCalls: [{ name: "screenshot", args: { url: "https://example.com" } }] },
      { text: "Here it is." },
    ]);
    const serving = await serve(
      createServer({ agent: new Agent({ name: "qa", model, tools: [screenshot] }) }),
      { port: 0 },
    );
    try {
      // Images load from the page itself and the blob: URLs its script makes, from nowhere else.
      const csp = (await fetch(serving.url)).headers.get("content-security-policy")!;
      expect(csp.split("; ").filter((directive) => directive.startsWith("img-src"))).toEqual([
        "img-src 'self' blob:",
      ]);
      await withPage(browser, serving, async (page, trouble) => {
        await send(page, "Check the page.");
        await page.getByText("Here it is.").waitFor({ timeout: 5_000 });
        await expect.poll(() => shown(page, ".tool img")).toEqual([{ scheme: "blob", width: 1 }]);
        expect(await page.locator(".tool img").getAttribute("alt")).toBe("image from screenshot");
        const link = page.locator(".tool a.media-chip");
        expect(await link.textContent()).toBe("Image: https://remote.example/pixel.png");
        expect(await link.getAttribute("rel")).toBe("noopener noreferrer nofollow");
        // Never fetched by the page (withPage also fails on any request to another host).
        expect(trouble.remote).toEqual([]);
      });
    } finally {
      await serving.close();
    }
  }, 15_000);
});
