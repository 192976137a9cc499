/**
 * Images and PDFs through `Runner.run` to the Responses API, against a local server replaying
 * its wire format: `input_image` and `input_file` in the user message and inside a function's
 * output, and a `UserError` (nothing sent) for audio, which the API does not take.
 */
import { Agent, type ContentBlock, Runner, tool, UserError } from "quiver-agents";
import { openaiResponses } from "quiver-agents/providers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { PDF_2_PAGES, PNG_1PX, wav } from "./media.js";
import { rejectLikeOpenAI } from "./openai-chat-api.js";
import { validateResponsesRequest } from "./openai-responses-api.js";
import { fixture, replayServers, streamFixture, typedFrame } from "./replay-server.js";

const serve = replayServers({ validate: validateResponsesRequest, reject: rejectLikeOpenAI });

const replay = (name: string) =>
  streamFixture(fixture(`openai-responses/${name}.jsonl`), { frame: typedFrame });

function agentOn(url: string, tools: ConstructorParameters<typeof Agent>[0]["tools"] = []) {
  return new Agent({
    name: "looker",
    model: openaiResponses({
      model: "gpt-4.1-mini",
      apiKey: "test-key",
      baseURL: `${url}/v1`,
      maxRetries: 0,
    }),
    tools,
  });
}

describe("openaiResponses() — multimodal input", () => {
  it("sends an image (base64 and by URL) and a PDF (inline and by URL) as input parts", async () => {
    const server = await serve([replay("text")]);
    const parts: ContentBlock[] = [
      { type: "text", text: "Compare these." },
      { type: "image", data: PNG_1PX, mimeType: "image/png" },
      { type: "image", url: "https://example.com/cat.jpg" },
      { type: "file", data: PDF_2_PAGES, mimeType: "application/pdf", filename: "q3.pdf" },
      { type: "file", url: "https://example.com/q4.pdf", mimeType: "application/pdf" },
    ];
    const result = await Runner.run(agentOn(server.url), parts);
    expect(result.output).toBe("Hello! How can I help?");
    expect(server.rejected).toEqual([]);
    expect(server.requests[0]!.body.input).toEqual([
      {
        role: "user",
        content: [
          { type: "input_text", text: "Compare these." },
          { type: "input_image", image_url: `data:image/png;base64,${PNG_1PX}`, detail: "auto" },
          { type: "input_image", image_url: "https://example.com/cat.jpg", detail: "auto" },
          { type: "input_file", filename: "q3.pdf", file_data: `data:application/pdf;base64,${PDF_2_PAGES}` },
          { type: "input_file", file_url: "https://example.com/q4.pdf" },
        ],
      },
    ]);
  });

  it("sends the image and the PDF a tool returns inside its function_call_output", async () => {
    const server = await serve([replay("parallel-calls"), replay("text")]);
    const weather = tool({
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
    const time = tool({
      name: "get_time",
      description: "Current time in a time zone.",
      parameters: z.object({ tz: z.string() }),
      execute: () => ({
        content: [
          { type: "file" as const, data: PDF_2_PAGES, mimeType: "application/pdf", filename: "tz.pdf" },
        ],
      }),
    });
    await Runner.run(agentOn(server.url, [weather, time]), "Weather and time in Paris?");
    expect(server.rejected).toEqual([]);
    const outputs = server.requests[1]!.body.input.filter(
      (item: any) => item.type === "function_call_output",
    );
    expect(outputs).toEqual([
      {
        type: "function_call_output",
        call_id: "call_A",
        output: [
          { type: "input_text", text: "18°C, light rain" },
          { type: "input_image", image_url: `data:image/png;base64,${PNG_1PX}`, detail: "auto" },
        ],
      },
      {
        type: "function_call_output",
        call_id: "call_B",
        output: [
          { type: "input_file", filename: "tz.pdf", file_data: `data:application/pdf;base64,${PDF_2_PAGES}` },
        ],
      },
    ]);
  });

  it("refuses audio with a UserError naming provider and part, before any request", async () => {
    const server = await serve([replay("text")]);
    const run = Runner.run(agentOn(server.url), [
      { type: "text", text: "Transcribe this." },
      { type: "audio", data: wav(0.01), mimeType: "audio/wav" },
    ]);
    await expect(run).rejects.toThrow(UserError);
    await expect(run).rejects.toThrow(
      "openai-responses cannot take an audio part (audio/wav) in a user message: the Responses API takes no audio input",
    );
    expect(server.requests).toHaveLength(0);
  });
});
