import { createServer, MAX_BODY_BYTES, serve } from "quiver-agents/server";
import { describe, expect, it } from "vitest";
import { agentWith } from "./helpers.js";

type ErrorBody = { error: { code: string; message: string } };

describe("POST /api/runs body limit", () => {
  it("413 over 1 MB of text, as on every route; the bytes of attachments do not count", async () => {
    const serving = await serve(createServer({ agent: agentWith([{ text: "ok" }, { text: "ok" }]) }), {
      port: 0,
    });
    const start = (body: unknown) =>
      fetch(`${serving.url}/api/runs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    try {
      const long = "x".repeat(1_200_000);
      for (const body of [{ message: long }, { content: [{ type: "text", text: long }] }]) {
        const refused = await start(body);
        expect(refused.status).toBe(413);
        const error = ((await refused.json()) as ErrorBody).error;
        expect(error.code).toBe("body_too_large");
        expect(error.message).toContain(String(MAX_BODY_BYTES));
      }

      // A 1.5 MB PDF (base64) with a line of text is a message with a file: it is taken.
      const pdf = Buffer.concat([
        Buffer.from("%PDF-1.4\n"),
        Buffer.alloc(1_100_000, 32),
        Buffer.from("\n%%EOF"),
      ]).toString("base64");
      const withFile = await start({
        content: [
          { type: "text", text: "summarise this" },
          { type: "file", data: pdf, mimeType: "application/pdf", filename: "big.pdf" },
        ],
      });
      expect(withFile.status, await withFile.clone().text()).toBe(201);
      expect((await start({ message: "x".repeat(900_000) })).status).toBe(201);
    } finally {
      await serving.close();
    }
  });
});
