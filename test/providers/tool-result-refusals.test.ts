/**
 * A part a tool returns that the provider cannot send (audio or an SVG to Claude, a PDF by URL
 * to Chat Completions, a `.doc` anywhere, an image over Anthropic's 5 MB base64 limit, an empty
 * part) no longer fails the run after the tool ran: in that request it is a short note the model
 * reads, and the provider reports one warning. A stored session whose transcript holds such a
 * result goes on working. Against local servers replaying each API's wire format and rules.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LanguageModelV2, LanguageModelV2StreamPart } from "@ai-sdk/provider";
import { convertArrayToReadableStream } from "ai/test";
import { Agent, type ContentBlock, type RunEvent, Runner, tool } from "quiver-agents";
import { anthropic, fromAiSdk, openai, openaiResponses, type ProviderWarning } from "quiver-agents/providers";
import { SqliteStore } from "quiver-agents/store";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { rejectLikeAnthropic, validateMessagesRequest } from "./anthropic-api.js";
import { PDF_2_PAGES, PNG_1PX, wav } from "./media.js";
import { rejectLikeOpenAI, validateChatRequest } from "./openai-chat-api.js";
import { validateResponsesRequest } from "./openai-responses-api.js";
import {
  closedAfterEach,
  fixture,
  type Reply,
  startReplayServer,
  streamFixture,
  typedFrame,
} from "./replay-server.js";

const servers = closedAfterEach();
const dir = mkdtempSync(join(tmpdir(), "quiver-tool-refusals-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>').toString("base64");
const DOC = Buffer.from("\xd0\xcf\x11\xe0 a Word 97 file", "latin1").toString("base64");

/** A tool that does something (counted) and returns `parts`. */
function returning(name: string, parts: ContentBlock[], ran: string[] = []) {
  return tool({
    name,
    description: "Does its job and returns what it made.",
    parameters: z.object({ city: z.string() }),
    execute: () => {
      ran.push(name);
      return { content: parts };
    },
  });
}

/** The fixture's one tool call, renamed to `name`. */
const renamed = (lines: string[], name: string) =>
  lines.map((line) => line.replaceAll('"get_weather"', `"${name}"`));

async function runWithEvents(agent: Agent, input: string, options: Parameters<typeof Runner.stream>[2] = {}) {
  const handle = Runner.stream(agent, input, options);
  const events: RunEvent[] = [];
  for await (const event of handle) events.push(event);
  return { result: await handle.result(), events };
}

describe("anthropic(): a tool result it cannot take", () => {
  async function serve(replies: Reply[]) {
    const server = await startReplayServer({
      replies,
      validate: validateMessagesRequest,
      reject: rejectLikeAnthropic,
    });
    servers.push(server);
    return server;
  }
  const toolUse = (name: string) =>
    streamFixture(renamed(fixture("anthropic/tool-use.jsonl"), name), { frame: typedFrame });
  const answer = () => streamFixture(fixture("anthropic/text.jsonl"), { frame: typedFrame });

  it("sends a recording as a note with one warning, and the stored session keeps working", async () => {
    const server = await serve([toolUse("record_voice"), answer(), answer(), answer()]);
    const warnings: ProviderWarning[] = [];
    const ran: string[] = [];
    const agent = new Agent({
      name: "voicemail",
      model: anthropic({
        model: "claude-sonnet-4-5",
        apiKey: "test-key",
        baseURL: server.url,
        maxRetries: 0,
        promptCaching: false,
        onWarning: (warning) => warnings.push(warning),
      }),
      tools: [
        returning(
          "record_voice",
          [
            { type: "text", text: "recorded 1 s" },
            { type: "audio", data: wav(0.01), mimeType: "audio/wav" },
          ],
          ran,
        ),
      ],
    });
    const store = new SqliteStore({ path: join(dir, "voicemail.db") });
    const first = await runWithEvents(agent, "Send a voicemail to Bob", { store, sessionId: "bob" });
    expect(first.result.stopReason).toBe("completed");
    expect(ran).toEqual(["record_voice"]);
    expect(server.rejected).toEqual([]);
    const note = "[audio/wav from record_voice not shown: anthropic takes no audio]";
    expect(server.requests[1]!.body.messages.at(-1)).toEqual({
      role: "user",
      content: [
        {
          type: "tool_result",
          tool_use_id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
          content: [
            { type: "text", text: "recorded 1 s" },
            { type: "text", text: note },
          ],
        },
      ],
    });
    // One warning for the request, through onWarning and as the run's warning event.
    const said =
      "a part of tool results could not be sent and was replaced by a note to the model: audio/wav in the result of record_voice (call toolu_01T1x1fJ34qAmk2tNTrN7Up6): anthropic takes no audio";
    expect(warnings).toEqual([{ provider: "anthropic", message: said }]);
    expect(first.events.filter((e) => e.type === "warning")).toEqual([
      expect.objectContaining({ type: "warning", message: said }),
    ]);

    // Later runs of the session rebuild the same transcript: they are not poisoned by it.
    for (const question of ["Thanks. What's the weather?", "hello?"]) {
      const next = await Runner.run(agent, question, { store, sessionId: "bob" });
      expect(next.stopReason).toBe("completed");
    }
    expect(server.requests).toHaveLength(4);
    expect(JSON.stringify(server.requests[3]!.body.messages)).toContain(note);
    expect(ran).toEqual(["record_voice"]);
    await store.close();
  });

  it("notes an SVG, a .doc, an empty part and an image over 5 MB of base64; sends the rest", async () => {
    const server = await serve([toolUse("shoot"), answer()]);
    const big = Buffer.alloc(3_932_161, 1); // 5,242,884 characters as base64: just over the limit
    big.set(Buffer.from(PNG_1PX, "base64").subarray(0, 8));
    const agent = new Agent({
      name: "shooter",
      model: anthropic({
        model: "claude-sonnet-4-5",
        apiKey: "test-key",
        baseURL: server.url,
        maxRetries: 0,
        promptCaching: false,
        onWarning: () => {},
      }),
      tools: [
        returning("shoot", [
          { type: "image", data: SVG, mimeType: "image/svg+xml" },
          { type: "file", data: DOC, mimeType: "application/msword", filename: "brief.doc" },
          { type: "image", data: "", mimeType: "image/png" },
          { type: "image", data: big.toString("base64"), mimeType: "image/png" },
          { type: "image", data: PNG_1PX, mimeType: "image/png" },
        ]),
      ],
    });
    const { result, events } = await runWithEvents(agent, "Take the shots");
    expect(result.stopReason).toBe("completed");
    expect(server.rejected).toEqual([]);
    expect(server.requests[1]!.body.messages.at(-1).content[0].content).toEqual([
      {
        type: "text",
        text: "[image/svg+xml from shoot not shown: anthropic takes JPEG, PNG, GIF and WebP images only]",
      },
      {
        type: "text",
        text: "[brief.doc (application/msword) from shoot not shown: anthropic takes PDF and text documents only]",
      },
      { type: "text", text: "[image/png from shoot not shown: it is empty (0 bytes)]" },
      {
        type: "text",
        text: "[image/png from shoot not shown: anthropic takes images up to 5 MB as base64 (5,242,880 characters) and this one is 5,242,884]",
      },
      { type: "image", source: { type: "base64", media_type: "image/png", data: PNG_1PX } },
    ]);
    const warnings = events.filter((e) => e.type === "warning");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ message: /^4 parts of tool results could not be sent/ });
  });
});

describe("openai() (Chat Completions): a tool result it cannot take", () => {
  it("puts a note for a .doc, a PDF by URL and an SVG in the tool message; the PDF it can take is attached", async () => {
    const server = await startReplayServer({
      replies: [
        streamFixture(renamed(fixture("openai-chat/tool-call.jsonl"), "shoot")),
        streamFixture(fixture("openai-chat/text.jsonl")),
      ],
      validate: (req) => validateChatRequest(req),
      reject: rejectLikeOpenAI,
    });
    servers.push(server);
    const warnings: ProviderWarning[] = [];
    const agent = new Agent({
      name: "shooter",
      model: openai({
        model: "gpt-4.1-mini",
        apiKey: "test-key",
        baseURL: `${server.url}/v1`,
        maxRetries: 0,
        onWarning: (w) => warnings.push(w),
      }),
      tools: [
        returning("shoot", [
          { type: "text", text: "done" },
          { type: "file", data: DOC, mimeType: "application/msword", filename: "brief.doc" },
          { type: "file", url: "https://example.com/q3.pdf", mimeType: "application/pdf" },
          { type: "image", data: SVG, mimeType: "image/svg+xml" },
          { type: "file", data: PDF_2_PAGES, mimeType: "application/pdf", filename: "q4.pdf" },
        ]),
      ],
    });
    const result = await Runner.run(agent, "Take the shots");
    expect(result.output).toBe("Hello! How can I help?");
    expect(server.rejected).toEqual([]);
    const callId = "call_Vq3kT8mZ2nXr5LpA7wYb1cDe";
    expect(server.requests[1]!.body.messages.slice(2)).toEqual([
      {
        role: "tool",
        tool_call_id: callId,
        content: [
          "done",
          "[brief.doc (application/msword) from shoot not shown: Chat Completions takes PDF and text documents only]",
          "[application/pdf at https://example.com/q3.pdf from shoot not shown: Chat Completions takes no document by URL]",
          "[image/svg+xml from shoot not shown: Chat Completions takes PNG, JPEG, GIF and WebP images only]",
          "[1 attachment attached in the next user message]",
        ].join("\n"),
      },
      {
        role: "user",
        content: [
          { type: "text", text: `Attachments returned by shoot (call ${callId}):` },
          {
            type: "file",
            file: { filename: "q4.pdf", file_data: `data:application/pdf;base64,${PDF_2_PAGES}` },
          },
        ],
      },
    ]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.message).toMatch(/^3 parts of tool results could not be sent/);
  });
});

describe("openaiResponses(): a tool result it cannot take", () => {
  it("puts notes for audio and a .doc inside function_call_output", async () => {
    const server = await startReplayServer({
      replies: [
        streamFixture(renamed(fixture("openai-responses/reasoning-tool-call.jsonl"), "record_voice"), {
          frame: typedFrame,
        }),
        streamFixture(fixture("openai-responses/text.jsonl"), { frame: typedFrame }),
      ],
      validate: validateResponsesRequest,
      reject: rejectLikeOpenAI,
    });
    servers.push(server);
    const agent = new Agent({
      name: "voicemail",
      model: openaiResponses({
        model: "gpt-5-mini",
        apiKey: "test-key",
        baseURL: `${server.url}/v1`,
        maxRetries: 0,
        onWarning: () => {},
      }),
      tools: [
        returning("record_voice", [
          { type: "audio", data: wav(0.01), mimeType: "audio/wav" },
          { type: "file", data: DOC, mimeType: "application/msword", filename: "brief.doc" },
        ]),
      ],
    });
    const { result, events } = await runWithEvents(agent, "Send a voicemail");
    expect(result.stopReason).toBe("completed");
    expect(server.rejected).toEqual([]);
    expect(server.requests[1]!.body.input.at(-1)).toEqual({
      type: "function_call_output",
      call_id: "call_Wm9kX2V4YW1wbGVfY2FsbF8x",
      output: [
        {
          type: "input_text",
          text: "[audio/wav from record_voice not shown: the Responses API takes no audio]",
        },
        {
          type: "input_text",
          text: "[brief.doc (application/msword) from record_voice not shown: the Responses API takes PDF and text documents only]",
        },
      ],
    });
    expect(events.filter((e) => e.type === "warning")).toHaveLength(1);
  });
});

describe("fromAiSdk(): a tool result the specification cannot carry", () => {
  it("notes an image by URL in an AI SDK 5 (v2) tool result instead of failing", async () => {
    const calls: Parameters<LanguageModelV2["doStream"]>[0][] = [];
    const turns = [
      fixture("ai-sdk/v2-tool-call.jsonl"),
      [
        '{"type":"stream-start","warnings":[]}',
        '{"type":"text-start","id":"t"}',
        '{"type":"text-delta","id":"t","delta":"Noted."}',
        '{"type":"text-end","id":"t"}',
        '{"type":"finish","finishReason":"stop","usage":{"inputTokens":9,"outputTokens":2,"totalTokens":11}}',
      ],
    ];
    const model: LanguageModelV2 = {
      specificationVersion: "v2",
      provider: "openai.chat",
      modelId: "gpt-4.1-mini",
      supportedUrls: {},
      doGenerate: () => Promise.reject(new Error("not used")),
      doStream: async (options) => {
        calls.push(options);
        const lines = turns[calls.length - 1]!.map((line) => JSON.parse(line) as LanguageModelV2StreamPart);
        return { stream: convertArrayToReadableStream(lines) };
      },
    };
    const getTime = tool({
      name: "get_time",
      description: "The time, with a picture of a clock.",
      parameters: z.object({ tz: z.string() }),
      execute: () => ({
        content: [
          { type: "text" as const, text: "12:00" },
          { type: "image" as const, url: "https://example.com/clock.png", mimeType: "image/png" },
        ],
      }),
    });
    const agent = new Agent({
      name: "clock",
      model: fromAiSdk(model, { maxRetries: 0, onWarning: () => {} }),
      tools: [getTime],
    });
    const { result, events } = await runWithEvents(agent, "What time is it?");
    expect(result.output).toBe("Noted.");
    expect(calls[1]!.prompt.at(-1)).toEqual({
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: "call_v2_1",
          toolName: "get_time",
          output: {
            type: "content",
            value: [
              { type: "text", text: "12:00" },
              {
                type: "text",
                text: "[image/png at https://example.com/clock.png from get_time not shown: AI SDK 5 tool results take no URLs]",
              },
            ],
          },
        },
      ],
    });
    expect(events.filter((e) => e.type === "warning")).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(/^a part of tool results could not be sent/),
      }),
    ]);
  });
});
