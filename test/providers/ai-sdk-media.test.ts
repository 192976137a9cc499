/**
 * Images, documents and audio through `Runner.run` to an AI SDK language model: every part a
 * `file` part of the prompt (base64, or a URL the model says it takes), a tool's media as
 * `image-data` / `file-data` output, and a `UserError` (the model never called) for a URL
 * the model does not take.
 */
import type { LanguageModelV3StreamPart } from "@ai-sdk/provider";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { Agent, type ContentBlock, Runner, tool, UserError } from "quiver-agents";
import { fromAiSdk } from "quiver-agents/providers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { PDF_2_PAGES, PNG_1PX, wav } from "./media.js";
import { fixture } from "./replay-server.js";

const chunks = (name: string) =>
  fixture(`ai-sdk/${name}.jsonl`).map((line) => JSON.parse(line) as LanguageModelV3StreamPart);
const streamOf = (name: string) => () =>
  Promise.resolve({ stream: convertArrayToReadableStream(chunks(name)) });

const quick = { maxRetries: 0, onWarning: () => {} };

describe("fromAiSdk() — multimodal input", () => {
  it("passes every image, document and recording as a file part (URLs the model takes stay URLs)", async () => {
    const mock = new MockLanguageModelV3({
      doStream: streamOf("v3-text"),
      supportedUrls: { "image/*": [/^https:\/\/example\.com\//] },
    });
    const agent = new Agent({ name: "looker", model: fromAiSdk(mock, quick) });
    const parts: ContentBlock[] = [
      { type: "text", text: "Compare these." },
      { type: "image", data: PNG_1PX, mimeType: "image/png" },
      { type: "image", url: "https://example.com/cat.jpg" },
      { type: "file", data: PDF_2_PAGES, mimeType: "application/pdf", filename: "q3.pdf" },
      { type: "audio", data: wav(0.01), mimeType: "audio/wav" },
    ];
    await Runner.run(agent, parts);
    expect(mock.doStreamCalls[0]!.prompt).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "Compare these." },
          { type: "file", data: PNG_1PX, mediaType: "image/png" },
          { type: "file", data: new URL("https://example.com/cat.jpg"), mediaType: "image/*" },
          { type: "file", data: PDF_2_PAGES, mediaType: "application/pdf", filename: "q3.pdf" },
          { type: "file", data: wav(0.01), mediaType: "audio/wav" },
        ],
      },
    ]);
  });

  it("sends the image and the PDF a tool returns as image-data and file-data output", async () => {
    let turn = 0;
    const model = new MockLanguageModelV3({
      doStream: async () => ({
        stream: convertArrayToReadableStream(turn++ === 0 ? toolCallChunks() : chunks("v3-text")),
      }),
    });
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
    await Runner.run(
      new Agent({ name: "looker", model: fromAiSdk(model, quick), tools: [weather] }),
      "Weather?",
    );
    expect(model.doStreamCalls[1]!.prompt.at(-1)).toEqual({
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: "call_1",
          toolName: "get_weather",
          output: {
            type: "content",
            value: [
              { type: "text", text: "18°C, light rain" },
              { type: "image-data", data: PNG_1PX, mediaType: "image/png" },
              { type: "file-data", data: PDF_2_PAGES, mediaType: "application/pdf", filename: "radar.pdf" },
            ],
          },
        },
      ],
    });
  });

  it("refuses a URL the model does not take with a UserError, before calling the model", async () => {
    const mock = new MockLanguageModelV3({ doStream: streamOf("v3-text"), supportedUrls: {} });
    const agent = new Agent({ name: "looker", model: fromAiSdk(mock, quick) });
    const run = Runner.run(agent, [
      { type: "file", url: "https://example.com/q3.pdf", mimeType: "application/pdf" },
    ]);
    await expect(run).rejects.toThrow(UserError);
    await expect(run).rejects.toThrow(
      "mock-provider cannot take a file by URL (application/pdf, https://example.com/q3.pdf) in a user message: this model does not take that URL",
    );
    expect(mock.doStreamCalls).toHaveLength(0);
  });
});

/** One streamed call of get_weather with id call_1. */
function toolCallChunks(): LanguageModelV3StreamPart[] {
  return [
    { type: "stream-start", warnings: [] },
    { type: "tool-input-start", id: "call_1", toolName: "get_weather" },
    { type: "tool-input-delta", id: "call_1", delta: '{"city":"Paris"}' },
    { type: "tool-input-end", id: "call_1" },
    { type: "tool-call", toolCallId: "call_1", toolName: "get_weather", input: '{"city":"Paris"}' },
    {
      type: "finish",
      finishReason: { unified: "tool-calls", raw: "tool_use" },
      usage: {
        inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
        outputTokens: { total: 5, text: 5, reasoning: 0 },
      },
    },
  ] as LanguageModelV3StreamPart[];
}
