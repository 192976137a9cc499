/**
 * Images and documents through `Runner.run` to the Messages API, against a local server
 * replaying Anthropic's wire format: `image` and `document` blocks with base64, URL and text
 * sources, the same blocks inside `tool_result`, and a `UserError` (nothing sent) for audio and
 * for a document URL that is not a PDF.
 */
import { Agent, type ContentBlock, Runner, tool, UserError } from "quiver-agents";
import { anthropic } from "quiver-agents/providers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { rejectLikeAnthropic, validateMessagesRequest } from "./anthropic-api.js";
import { PDF_2_PAGES, PNG_1PX, wav } from "./media.js";
import { fixture, replayServers, streamFixture, typedFrame } from "./replay-server.js";

const serve = replayServers({ validate: validateMessagesRequest, reject: rejectLikeAnthropic });

const replay = (name: string) => streamFixture(fixture(`anthropic/${name}.jsonl`), { frame: typedFrame });

function agentOn(url: string, tools: ConstructorParameters<typeof Agent>[0]["tools"] = []) {
  return new Agent({
    name: "looker",
    // Without prompt caching, the blocks are exactly what the mapping makes.
    model: anthropic({
      model: "claude-sonnet-4-5",
      apiKey: "test-key",
      baseURL: url,
      maxRetries: 0,
      promptCaching: false,
    }),
    tools,
  });
}

describe("anthropic() — multimodal input", () => {
  it("sends images (base64 and by URL) and documents (PDF inline and by URL, text) as blocks", async () => {
    const server = await serve([replay("text")]);
    const parts: ContentBlock[] = [
      { type: "text", text: "Compare these." },
      { type: "image", data: PNG_1PX, mimeType: "image/png" },
      { type: "image", url: "https://example.com/cat.jpg" },
      { type: "file", data: PDF_2_PAGES, mimeType: "application/pdf", filename: "q3.pdf" },
      { type: "file", url: "https://example.com/q4.pdf", mimeType: "application/pdf" },
      {
        type: "file",
        data: Buffer.from("ship on Friday").toString("base64"),
        mimeType: "text/plain",
        filename: "notes.txt",
      },
    ];
    await Runner.run(agentOn(server.url), parts);
    expect(server.rejected).toEqual([]);
    expect(server.requests[0]!.body.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "Compare these." },
          { type: "image", source: { type: "base64", media_type: "image/png", data: PNG_1PX } },
          { type: "image", source: { type: "url", url: "https://example.com/cat.jpg" } },
          {
            type: "document",
            source: { type: "base64", media_type: "application/pdf", data: PDF_2_PAGES },
            title: "q3.pdf",
          },
          { type: "document", source: { type: "url", url: "https://example.com/q4.pdf" } },
          {
            type: "document",
            source: { type: "text", media_type: "text/plain", data: "ship on Friday" },
            title: "notes.txt",
          },
        ],
      },
    ]);
  });

  it("sends the image and the PDF a tool returns inside its tool_result", async () => {
    const server = await serve([replay("tool-use"), replay("text")]);
    const weather = tool({
      name: "get_weather",
      description: "Current weather for a city.",
      parameters: z.object({ city: z.string() }),
      execute: () => ({
        content: [
          { type: "text" as const, text: "18°C, light rain" },
          { type: "image" as const, data: PNG_1PX, mimeType: "image/png" },
          { type: "file" as const, data: PDF_2_PAGES, mimeType: "application/pdf", filename: "radar.pdf" },
        ],
      }),
    });
    await Runner.run(agentOn(server.url, [weather]), "What's the weather in Paris?");
    expect(server.rejected).toEqual([]);
    expect(server.requests[1]!.body.messages.at(-1)).toEqual({
      role: "user",
      content: [
        {
          type: "tool_result",
          tool_use_id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
          content: [
            { type: "text", text: "18°C, light rain" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: PNG_1PX } },
            {
              type: "document",
              source: { type: "base64", media_type: "application/pdf", data: PDF_2_PAGES },
              title: "radar.pdf",
            },
          ],
        },
      ],
    });
  });

  it("refuses audio and a non-PDF document URL with a UserError naming provider and part, before any request", async () => {
    const server = await serve([replay("text")]);
    const agent = agentOn(server.url);
    const audio = Runner.run(agent, [{ type: "audio", data: wav(0.01), mimeType: "audio/wav" }]);
    await expect(audio).rejects.toThrow(UserError);
    await expect(audio).rejects.toThrow(
      "anthropic cannot take an audio part (audio/wav) in a user message: Claude takes no audio input",
    );
    const page = Runner.run(agent, [
      { type: "file", url: "https://example.com/notes.txt", mimeType: "text/plain" },
    ]);
    await expect(page).rejects.toThrow(
      "anthropic cannot take a file by URL (text/plain, https://example.com/notes.txt) in a user message: a document by URL must be a PDF",
    );
    const bmp = Runner.run(agent, [{ type: "image", data: "Qk0=", mimeType: "image/bmp" }]);
    await expect(bmp).rejects.toThrow("anthropic cannot take an image (image/bmp)");
    expect(server.requests).toHaveLength(0);
  });
});
