/**
 * Images, PDFs and audio through `Runner.run` to Chat Completions, against a local server
 * replaying OpenAI's wire format: the exact parts each request carries, a tool's image in the
 * user message after the tool messages, and a `UserError` (with nothing sent) for what the
 * API cannot take.
 */
import { Agent, type ContentBlock, Runner, tool, UserError } from "quiver-agents";
import { openai } from "quiver-agents/providers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { PDF_2_PAGES, PNG_1PX, wav } from "./media.js";
import { rejectLikeOpenAI, validateChatRequest } from "./openai-chat-api.js";
import { fixture, replayServers, streamFixture } from "./replay-server.js";

const serve = replayServers({ validate: (req) => validateChatRequest(req), reject: rejectLikeOpenAI });

const text = () => streamFixture(fixture("openai-chat/text.jsonl"));

function agentOn(url: string, tools: ConstructorParameters<typeof Agent>[0]["tools"] = []) {
  return new Agent({
    name: "looker",
    instructions: "You are terse.",
    model: openai({ model: "gpt-4.1-mini", apiKey: "test-key", baseURL: `${url}/v1`, maxRetries: 0 }),
    tools,
  });
}

describe("openai() — multimodal input", () => {
  it("sends an image (base64 and by URL), a PDF and a recording as the user message's parts", async () => {
    const server = await serve([text()]);
    const parts: ContentBlock[] = [
      { type: "text", text: "Compare these." },
      { type: "image", data: PNG_1PX, mimeType: "image/png" },
      { type: "image", url: "https://example.com/cat.jpg" },
      { type: "file", data: PDF_2_PAGES, mimeType: "application/pdf", filename: "q3.pdf" },
      { type: "audio", data: wav(0.01), mimeType: "audio/wav" },
    ];
    const result = await Runner.run(agentOn(server.url), parts);
    expect(result.output).toBe("Hello! How can I help?");
    expect(server.rejected).toEqual([]);
    expect(server.requests[0]!.body.messages).toEqual([
      { role: "system", content: "You are terse." },
      {
        role: "user",
        content: [
          { type: "text", text: "Compare these." },
          { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_1PX}` } },
          { type: "image_url", image_url: { url: "https://example.com/cat.jpg" } },
          {
            type: "file",
            file: { filename: "q3.pdf", file_data: `data:application/pdf;base64,${PDF_2_PAGES}` },
          },
          { type: "input_audio", input_audio: { data: wav(0.01), format: "wav" } },
        ],
      },
    ]);
  });

  it("sends a text document as text, headed by its name", async () => {
    const server = await serve([text()]);
    const notes = Buffer.from("# Notes\nship on Friday").toString("base64");
    await Runner.run(agentOn(server.url), [
      { type: "text", text: "Summarise." },
      { type: "file", data: notes, mimeType: "text/markdown", filename: "notes.md" },
    ]);
    expect(server.requests[0]!.body.messages[1].content).toEqual([
      { type: "text", text: "Summarise." },
      { type: "text", text: "[file: notes.md (text/markdown)]\n# Notes\nship on Friday" },
    ]);
  });

  it("puts the image a tool returns in a user message after the tool messages", async () => {
    const server = await serve([streamFixture(fixture("openai-chat/tool-call.jsonl")), text()]);
    const radar = tool({
      name: "get_weather",
      description: "Current weather for a city.",
      parameters: z.object({ city: z.string() }),
      execute: () => ({
        content: [
          { type: "text" as const, text: "18°C, light rain" },
          { type: "image" as const, data: PNG_1PX, mimeType: "image/png" },
        ],
      }),
    });
    await Runner.run(agentOn(server.url, [radar]), "What's the weather in Paris?");
    expect(server.rejected).toEqual([]);
    expect(server.requests[1]!.body.messages.slice(2)).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_Vq3kT8mZ2nXr5LpA7wYb1cDe",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Paris"}' },
          },
        ],
      },
      {
        role: "tool",
        tool_call_id: "call_Vq3kT8mZ2nXr5LpA7wYb1cDe",
        content: "18°C, light rain\n[1 image attached in the next user message]",
      },
      {
        role: "user",
        content: [
          { type: "text", text: "Images returned by get_weather (call call_Vq3kT8mZ2nXr5LpA7wYb1cDe):" },
          { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_1PX}` } },
        ],
      },
    ]);
  });

  it("refuses what Chat Completions cannot take with a UserError naming provider and part, before any request", async () => {
    const server = await serve([text()]);
    const agent = agentOn(server.url);
    const pdfUrl = Runner.run(agent, [
      { type: "text", text: "Read it." },
      { type: "file", url: "https://example.com/q3.pdf", mimeType: "application/pdf" },
    ]);
    await expect(pdfUrl).rejects.toThrow(UserError);
    await expect(pdfUrl).rejects.toThrow(
      "openai cannot take a file by URL (application/pdf, https://example.com/q3.pdf) in a user message: Chat Completions has no field for a document's URL",
    );
    const ogg = Runner.run(agent, [{ type: "audio", data: "T2dnUw==", mimeType: "audio/ogg" }]);
    await expect(ogg).rejects.toThrow(
      "openai cannot take an audio part (audio/ogg) in a user message: Chat Completions takes wav and mp3 recordings only",
    );
    const docx = Runner.run(agent, [
      { type: "file", data: "UEsDBA==", mimeType: "application/msword", filename: "a.doc" },
    ]);
    await expect(docx).rejects.toThrow("openai cannot take a file (application/msword, a.doc)");
    expect(server.requests).toHaveLength(0);
  });
});
