/**
 * Attachments through the server: the AI SDK's own chat client sends a file part (an image, a
 * PDF) on POST /api/chat, the native API takes content parts, AG-UI's HttpAgent sends image and
 * document parts — and the run's model receives them as image and file parts. What a run
 * refuses (a part over maxAttachmentBytes, a video) is a 400 naming it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Message as AgUiMessage, HttpAgent } from "@ag-ui/client";
import { Agent, type ContentBlock, ScriptedModel } from "quiver-agents";
import { createServer, type Serving, serve } from "quiver-agents/server";
import { SqliteStore } from "quiver-agents/store";
import { afterEach, describe, expect, it } from "vitest";
import { chatClient, lastAssistant, textOf, VERSIONS } from "./chat-clients.js";
import { eventually, post } from "./helpers.js";

const PNG_1PX =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const PDF = Buffer.from("%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n%%EOF").toString("base64");

const dirs: string[] = [];
const servings: Serving[] = [];
afterEach(async () => {
  for (const serving of servings.splice(0)) await serving.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function sqlite(): SqliteStore {
  const dir = mkdtempSync(join(tmpdir(), "quiver-attach-"));
  dirs.push(dir);
  return new SqliteStore({ path: join(dir, "runs.db") });
}

/** An agent whose model says how many images and files it was shown. */
function looker() {
  const model = new ScriptedModel(
    Array.from({ length: 4 }, () => (req: { messages: readonly { content: unknown }[] }) => {
      const blocks = req.messages.flatMap((m) =>
        Array.isArray(m.content) ? (m.content as ContentBlock[]) : [],
      );
      const images = blocks.filter((b) => b.type === "image").length;
      const files = blocks.filter((b) => b.type === "file").length;
      return { text: `${images} image(s), ${files} file(s)` };
    }),
  );
  return { model, agent: new Agent({ name: "looker", model }) };
}

type FileSender = { sendMessage(message: { text: string; files: unknown[] }): Promise<void> };

describe.each(VERSIONS)("useChat (%s) sends file parts on POST /api/chat", (version) => {
  for (const stored of [false, true]) {
    it(`the model receives the image and the PDF${stored ? " (stored: the next message still has them)" : ""}`, async () => {
      const { model, agent } = looker();
      const server = createServer({ agent, ...(stored && { store: sqlite() }) });
      const chat = chatClient(version, server, { id: `chat-files-${stored}` });
      await (chat as unknown as FileSender).sendMessage({
        text: "What is in these?",
        files: [
          {
            type: "file",
            mediaType: "image/png",
            filename: "pixel.png",
            url: `data:image/png;base64,${PNG_1PX}`,
          },
          {
            type: "file",
            mediaType: "application/pdf",
            filename: "q3.pdf",
            url: `data:application/pdf;base64,${PDF}`,
          },
        ],
      });
      expect(chat.error).toBeUndefined();
      expect(textOf(lastAssistant(chat))).toBe("1 image(s), 1 file(s)");
      expect(model.requests[0]!.messages).toEqual([
        {
          role: "user",
          content: [
            { type: "text", text: "What is in these?" },
            { type: "image", data: PNG_1PX, mimeType: "image/png" },
            { type: "file", data: PDF, mimeType: "application/pdf", filename: "q3.pdf" },
          ],
        },
      ]);
      // The next message: the conversation (from the store, or from the client) keeps them.
      await chat.sendMessage({ text: "And now?" });
      expect(textOf(lastAssistant(chat))).toBe("1 image(s), 1 file(s)");
    });
  }

  it("an image by https URL stays a URL; a part over maxAttachmentBytes is a 400 naming it", async () => {
    const { model, agent } = looker();
    const server = createServer({ agent, runOptions: { maxAttachmentBytes: 16 } });
    const chat = chatClient(version, server, { id: "chat-url" });
    await (chat as unknown as FileSender).sendMessage({
      text: "Look",
      files: [{ type: "file", mediaType: "image/jpeg", url: "https://example.com/cat.jpg" }],
    });
    expect(model.requests[0]!.messages[0]!.content).toEqual([
      { type: "text", text: "Look" },
      { type: "image", url: "https://example.com/cat.jpg", mimeType: "image/jpeg" },
    ]);
    const big = await server.fetch(
      post("/api/chat", {
        id: "chat-big",
        messages: [
          {
            id: "u1",
            role: "user",
            parts: [
              { type: "file", mediaType: "application/pdf", url: `data:application/pdf;base64,${PDF}` },
            ],
          },
        ],
      }),
    );
    expect(big.status).toBe(400);
    expect(((await big.json()) as { error: { message: string } }).error.message).toMatch(
      /block 0 \(file: application\/pdf\) is 0\.0 MB \(\d+ bytes\), over maxAttachmentBytes/,
    );
  });
});

describe("POST /api/runs takes content parts", () => {
  it("the model receives them; a malformed part is a 400 naming it", async () => {
    const { model, agent } = looker();
    const server = createServer({ agent });
    const created = await server.fetch(
      post("/api/runs", {
        content: [
          { type: "text", text: "Read this" },
          { type: "file", url: `data:application/pdf;base64,${PDF}`, filename: "q3.pdf" },
        ],
      }),
    );
    expect(created.status).toBe(201);
    await eventually(() => model.requests.length === 1);
    expect(model.requests[0]!.messages[0]!.content).toEqual([
      { type: "text", text: "Read this" },
      { type: "file", data: PDF, mimeType: "application/pdf", filename: "q3.pdf" },
    ]);
    const bad = await server.fetch(
      post("/api/runs", { content: [{ type: "image", mimeType: "image/png" }] }),
    );
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(
      /block 0 \(image\) needs exactly one of "data" \(its bytes as base64\) or "url"/,
    );
    const both = await server.fetch(
      post("/api/runs", { message: "hi", content: [{ type: "text", text: "hi" }] }),
    );
    expect(both.status).toBe(400);
  });
});

describe("AG-UI image and document parts", () => {
  it("HttpAgent's media parts reach the model; a video is a 400", async () => {
    const { model, agent } = looker();
    const serving = await serve(createServer({ agent }), { port: 0 });
    servings.push(serving);
    const url = `${serving.url}/api/ag-ui`;
    const ui = new HttpAgent({ url, threadId: "t-media" });
    const message = {
      id: "m1",
      role: "user",
      content: [
        { type: "text", text: "Compare" },
        { type: "image", source: { type: "data", value: PNG_1PX, mimeType: "image/png" } },
        {
          type: "document",
          source: { type: "url", value: "https://example.com/q3.pdf", mimeType: "application/pdf" },
          metadata: { filename: "q3.pdf" },
        },
      ],
    } as AgUiMessage;
    ui.messages = [message];
    await ui.runAgent();
    expect(model.requests[0]!.messages[0]!.content).toEqual([
      { type: "text", text: "Compare" },
      { type: "image", data: PNG_1PX, mimeType: "image/png" },
      { type: "file", url: "https://example.com/q3.pdf", mimeType: "application/pdf", filename: "q3.pdf" },
    ]);
    const last = ui.messages.at(-1)!;
    expect(last.role).toBe("assistant");
    expect(last.content).toBe("1 image(s), 1 file(s)");
    // Another client on the thread gets the conversation back, the user's media as parts.
    const other = new HttpAgent({ url, threadId: "t-media" });
    await other.runAgent();
    expect(other.messages[0]!.content).toEqual(message.content);

    const video = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        threadId: "t-video",
        runId: "r1",
        state: {},
        tools: [],
        context: [],
        forwardedProps: {},
        messages: [
          {
            id: "v1",
            role: "user",
            content: [{ type: "video", source: { type: "url", value: "https://example.com/a.mp4" } }],
          },
        ],
      }),
    });
    expect(video.status).toBe(400);
    expect(((await video.json()) as { error: { message: string } }).error.message).toBe(
      "the user message, part 0: video parts are not supported",
    );
  });
});
