import {
  APICallError,
  JSONParseError,
  type LanguageModelV2,
  type LanguageModelV2StreamPart,
  type LanguageModelV3StreamPart,
} from "@ai-sdk/provider";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { describe, expect, it } from "vitest";
import { ProviderError, UserError } from "../../src/errors.js";
import type { Message, ModelStreamEvent } from "../../src/model/types.js";
import { fromAiSdk } from "../../src/providers/index.js";
import type { ProviderWarning } from "../../src/providers/warnings.js";
import { collect, collectUntilError, fixture } from "./replay-server.js";
import { ask, ofType, PNG_1PX, text, timeTool, toolRoundTrip, userAsks, weatherTool } from "./transcripts.js";

const parts = <T = LanguageModelV3StreamPart>(name: string) =>
  fixture(`ai-sdk/${name}.jsonl`).map((line) => JSON.parse(line) as T);
const streamOf = <T>(chunks: T[]) => ({ stream: convertArrayToReadableStream(chunks) });

/** A stream that sends `chunks` and then nothing, never closing. */
function stalling<T>(chunks: T[]) {
  return {
    stream: new ReadableStream<T>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(chunk);
      },
    }),
  };
}

const quick = { retryBackoff: { initialMs: 5, maxMs: 10 }, onWarning: () => {} };

describe("fromAiSdk() — AI SDK language models (specification v3)", () => {
  it("streams text and usage, and maps the request to call options", async () => {
    const mock = new MockLanguageModelV3({
      provider: "anthropic.messages",
      modelId: "claude-sonnet-4-5",
      doStream: streamOf(parts("v3-text")),
    });
    const warnings: ProviderWarning[] = [];
    const model = fromAiSdk(mock, { onWarning: (w) => warnings.push(w) });
    expect(model.name).toBe("anthropic.messages:claude-sonnet-4-5");
    const events = await collect(
      model.stream(
        ask({
          tools: [weatherTool],
          settings: {
            temperature: 0.4,
            topP: 0.9,
            maxTokens: 256,
            stop: ["END"],
            toolChoice: "required",
            parallelToolCalls: false,
            responseFormat: { type: "json_schema", name: "answer", schema: { type: "object" } },
            extra: { anthropic: { sendReasoning: true } },
          },
        }),
      ),
    );
    expect(text(events)).toBe("Hello! How can I help?");
    expect(ofType(events, "usage")[0]!.usage).toEqual({
      inputTokens: 1320,
      outputTokens: 9,
      totalTokens: 1329,
      cachedInputTokens: 1200,
    });
    expect(events.at(-1)).toEqual({ type: "finish", reason: "stop" });
    const options = mock.doStreamCalls[0]!;
    expect(options.prompt).toEqual([
      { role: "system", content: "You are terse." },
      { role: "user", content: [{ type: "text", text: "What's the weather in Paris?" }] },
    ]);
    expect(options).toMatchObject({
      temperature: 0.4,
      topP: 0.9,
      maxOutputTokens: 256,
      stopSequences: ["END"],
      toolChoice: { type: "required" },
      responseFormat: { type: "json", name: "answer", schema: { type: "object" } },
      providerOptions: { anthropic: { sendReasoning: true } },
    });
    expect(options.tools![0]).toMatchObject({
      type: "function",
      name: "get_weather",
      strict: true,
      inputSchema: { type: "object", required: ["city"] },
    });
    expect(options.abortSignal).toBeInstanceOf(AbortSignal);
    expect(warnings.map((w) => w.message)).toEqual([
      expect.stringContaining("parallelToolCalls"),
      expect.stringContaining("topK"),
    ]);
  });

  it("assembles interleaved tool calls and replays reasoning with its signature to the same provider only", async () => {
    const mock = new MockLanguageModelV3({
      provider: "anthropic.messages",
      modelId: "claude-sonnet-4-5",
      doStream: [streamOf(parts("v3-reasoning-tools")), streamOf(parts("v3-text"))],
    });
    const model = fromAiSdk(mock, quick);
    const events = await collect(model.stream(ask({ tools: [weatherTool] })));
    expect(
      ofType(events, "reasoning_delta")
        .map((e) => e.delta)
        .join(""),
    ).toBe("Two cities: call get_weather twice.");
    expect(ofType(events, "tool_call").map(({ id, args }) => [id, JSON.parse(args)])).toEqual([
      ["toolu_01Aa", { city: "Oslo" }],
      ["toolu_01Bb", { city: "Rome" }],
    ]);
    expect(ofType(events, "usage")[0]!.usage).toMatchObject({ reasoningTokens: 28 });
    const finish = events.at(-1) as Extract<ModelStreamEvent, { type: "finish" }>;
    expect(finish.reason).toBe("tool_calls");
    const assistant: Message = {
      role: "assistant",
      content: [{ type: "reasoning", text: "Two cities: call get_weather twice." }],
      toolCalls: [
        { id: "toolu_01Aa", name: "get_weather", args: { city: "Oslo" } },
        { id: "c2", providerCallId: "toolu_01Bb", name: "get_weather", args: { city: "Rome" } },
      ],
      providerData: finish.providerData!,
    };
    const transcript: Message[] = [
      ...userAsks,
      assistant,
      { role: "tool", toolCallId: "toolu_01Aa", name: "get_weather", content: "-3°C", isError: false },
      { role: "tool", toolCallId: "c2", name: "get_weather", content: "no data", isError: true },
    ];
    await collect(model.stream(ask({ messages: transcript, tools: [weatherTool] })));
    const prompt = mock.doStreamCalls[1]!.prompt;
    expect(prompt[2]).toEqual({
      role: "assistant",
      content: [
        {
          type: "reasoning",
          text: "Two cities: call get_weather twice.",
          providerOptions: { anthropic: { signature: "ErUBCkYIBRgCIkD2c2lnbmF0dXJl" } },
        },
        { type: "tool-call", toolCallId: "toolu_01Aa", toolName: "get_weather", input: { city: "Oslo" } },
        { type: "tool-call", toolCallId: "toolu_01Bb", toolName: "get_weather", input: { city: "Rome" } },
      ],
    });
    expect(prompt[3]).toEqual({
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: "toolu_01Aa",
          toolName: "get_weather",
          output: { type: "text", value: "-3°C" },
        },
        {
          type: "tool-result",
          toolCallId: "toolu_01Bb",
          toolName: "get_weather",
          output: { type: "error-text", value: "no data" },
        },
      ],
    });

    // Another provider (after a handoff) gets no reasoning at all.
    const other = new MockLanguageModelV3({
      provider: "openai.responses",
      modelId: "gpt-5-mini",
      doStream: streamOf(parts("v3-text")),
    });
    await collect(fromAiSdk(other, quick).stream(ask({ messages: transcript, tools: [weatherTool] })));
    const otherPrompt = other.doStreamCalls[0]!.prompt;
    expect(JSON.stringify(otherPrompt)).not.toContain("Two cities");
  });

  it("sends a tool result with an image as content output", async () => {
    const mock = new MockLanguageModelV3({ doStream: streamOf(parts("v3-text")) });
    await collect(
      fromAiSdk(mock, quick).stream(ask({ messages: toolRoundTrip("call_1"), tools: [weatherTool] })),
    );
    expect(mock.doStreamCalls[0]!.prompt.at(-1)).toEqual({
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
            ],
          },
        },
      ],
    });
  });

  it("reports a length finish with the cut-off arguments", async () => {
    const mock = new MockLanguageModelV3({ doStream: streamOf(parts("v3-length")) });
    const events = await collect(fromAiSdk(mock, quick).stream(ask()));
    expect(events.at(-1)).toEqual({ type: "finish", reason: "length" });
    expect(ofType(events, "tool_call")[0]!.args).toBe('{"path":"a.md","content":"# Ti');
  });

  it("retries a retryable API error (honouring retry-after) and not a bad request", async () => {
    const rateLimited = new APICallError({
      message: "Too Many Requests",
      url: "https://api.example.com/v1/messages",
      requestBodyValues: {},
      statusCode: 429,
      responseHeaders: { "retry-after-ms": "40" },
      isRetryable: true,
    });
    let calls = 0;
    const mock = new MockLanguageModelV3({
      doStream: async () => {
        calls++;
        if (calls === 1) throw rateLimited;
        return streamOf(parts("v3-text"));
      },
    });
    const started = Date.now();
    const events = await collect(fromAiSdk(mock, quick).stream(ask()));
    expect(Date.now() - started).toBeGreaterThanOrEqual(35);
    expect(text(events)).toBe("Hello! How can I help?");
    expect(ofType(events, "reset")).toEqual([]);

    const invalid = new MockLanguageModelV3({
      doStream: async () => {
        throw new APICallError({
          message: "Bad Request",
          url: "u",
          requestBodyValues: {},
          statusCode: 400,
          isRetryable: false,
          data: { error: { type: "invalid_request_error" } },
        });
      },
    });
    const { error } = await collectUntilError(fromAiSdk(invalid, quick).stream(ask()));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ status: 400, type: "invalid_request_error", retryable: false });
    expect(invalid.doStreamCalls).toHaveLength(1);
  });

  it("emits reset when an error part arrives after output, then streams the retry", async () => {
    const broken: LanguageModelV3StreamPart[] = [
      ...parts("v3-text").slice(0, 4),
      {
        type: "error",
        error: new APICallError({
          message: "Overloaded",
          url: "u",
          requestBodyValues: {},
          statusCode: 529,
          isRetryable: true,
        }),
      },
    ];
    const mock = new MockLanguageModelV3({ doStream: [streamOf(broken), streamOf(parts("v3-text"))] });
    const events = await collect(fromAiSdk(mock, quick).stream(ask()));
    const resetAt = events.findIndex((e) => e.type === "reset");
    expect(text(events.slice(0, resetAt))).toBe("Hello");
    expect(text(events.slice(resetAt))).toBe("Hello! How can I help?");
  });

  it("retries a chunk the AI SDK provider could not parse, as a malformed chunk", async () => {
    const broken: LanguageModelV3StreamPart[] = [
      ...parts("v3-text").slice(0, 4),
      { type: "error", error: new JSONParseError({ text: "{not json", cause: new SyntaxError("bad") }) },
    ];
    const mock = new MockLanguageModelV3({ doStream: [streamOf(broken), streamOf(parts("v3-text"))] });
    const events = await collect(fromAiSdk(mock, quick).stream(ask()));
    expect(events.some((e) => e.type === "reset")).toBe(true);
    expect(text(events.slice(events.findIndex((e) => e.type === "reset")))).toBe("Hello! How can I help?");
    expect(mock.doStreamCalls).toHaveLength(2);
  });

  it("gives up after maxRetries on repeated server errors", async () => {
    const mock = new MockLanguageModelV3({
      doStream: async () => {
        throw new APICallError({
          message: "Internal Server Error",
          url: "u",
          requestBodyValues: {},
          statusCode: 500,
          isRetryable: true,
        });
      },
    });
    const { error } = await collectUntilError(fromAiSdk(mock, quick).stream(ask()));
    expect(error).toMatchObject({ status: 500, retryable: true });
    expect(mock.doStreamCalls).toHaveLength(3);
  });

  it("retries a stream that breaks mid-way (a dropped connection), with a reset", async () => {
    // Errors only once the first parts were read (an errored stream drops what is queued).
    const breaking = () => {
      const queue = parts("v3-text").slice(0, 4);
      return {
        stream: new ReadableStream<LanguageModelV3StreamPart>({
          pull(controller) {
            const next = queue.shift();
            if (next) controller.enqueue(next);
            else controller.error(new TypeError("terminated"));
          },
        }),
      };
    };
    const mock = new MockLanguageModelV3({ doStream: [breaking(), streamOf(parts("v3-text"))] });
    const events = await collect(fromAiSdk(mock, quick).stream(ask()));
    expect(ofType(events, "reset")).toHaveLength(1);
    expect(text(events.slice(events.findIndex((e) => e.type === "reset")))).toBe("Hello! How can I help?");
    const once = new MockLanguageModelV3({ doStream: breaking() });
    const { error } = await collectUntilError(fromAiSdk(once, { ...quick, maxRetries: 0 }).stream(ask()));
    expect(error).toMatchObject({ type: "connection_error", retryable: true });
  });

  it("treats a stream without a finish part as a retryable error", async () => {
    const mock = new MockLanguageModelV3({ doStream: streamOf(parts("v3-text").slice(0, 5)) });
    const { error } = await collectUntilError(fromAiSdk(mock, { ...quick, maxRetries: 0 }).stream(ask()));
    expect(error).toMatchObject({ type: "incomplete_stream", retryable: true });
  });

  it("stops at once on abort even if the model ignores its signal, and times out a stall", async () => {
    const mock = new MockLanguageModelV3({
      doStream: () => Promise.resolve(stalling(parts("v3-text").slice(0, 4))),
    });
    const controller = new AbortController();
    const started = Date.now();
    const aborted = await collectUntilError(
      (async function* () {
        for await (const event of fromAiSdk(mock, quick).stream(ask({ signal: controller.signal }))) {
          yield event;
          if (event.type === "text_delta") controller.abort();
        }
      })(),
    );
    expect(aborted.error).toMatchObject({ type: "aborted", retryable: false });
    expect(mock.doStreamCalls[0]!.abortSignal!.aborted).toBe(true);
    const stalled = await collectUntilError(
      fromAiSdk(mock, { ...quick, idleTimeoutMs: 100, maxRetries: 0 }).stream(ask()),
    );
    expect(stalled.error).toMatchObject({ type: "idle_timeout", retryable: true });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("lets the model think silently past the idle timeout before its first output", async () => {
    const all = parts("v3-text");
    const mock = new MockLanguageModelV3({
      doStream: async () => ({
        stream: new ReadableStream<LanguageModelV3StreamPart>({
          async start(controller) {
            controller.enqueue(all[0]!); // stream-start: no output yet
            await new Promise((r) => setTimeout(r, 300));
            for (const part of all.slice(1)) controller.enqueue(part);
            controller.close();
          },
        }),
      }),
    });
    const events = await collect(
      fromAiSdk(mock, { ...quick, idleTimeoutMs: 100, maxRetries: 0 }).stream(ask()),
    );
    expect(text(events)).toBe("Hello! How can I help?");
  });

  it("rejects a model of an unknown specification version", () => {
    expect(() => fromAiSdk({ specificationVersion: "v1", provider: "old", modelId: "m" } as never)).toThrow(
      UserError,
    );
  });
});

describe("fromAiSdk() — specification v2 (AI SDK 5 providers)", () => {
  function v2Model(stream: LanguageModelV2StreamPart[]) {
    const calls: Parameters<LanguageModelV2["doStream"]>[0][] = [];
    const model: LanguageModelV2 = {
      specificationVersion: "v2",
      provider: "openai.chat",
      modelId: "gpt-4.1-mini",
      supportedUrls: {},
      doGenerate: () => Promise.reject(new Error("not used")),
      doStream: async (options) => {
        calls.push(options);
        return { stream: convertArrayToReadableStream(stream) };
      },
    };
    return { model, calls };
  }

  it("streams a v2 model: string finish reasons, flat usage, a complete call without deltas", async () => {
    const { model, calls } = v2Model(parts<LanguageModelV2StreamPart>("v2-tool-call"));
    const events = await collect(
      fromAiSdk(model, quick).stream(ask({ tools: [timeTool], messages: toolRoundTrip("call_9") })),
    );
    expect(text(events)).toBe("Checking.");
    expect(ofType(events, "tool_call")).toEqual([
      { type: "tool_call", index: 0, id: "call_v2_1", name: "get_time", args: '{"tz":"UTC"}' },
    ]);
    expect(ofType(events, "usage")[0]!.usage).toEqual({
      inputTokens: 50,
      outputTokens: 12,
      totalTokens: 62,
      cachedInputTokens: 10,
      reasoningTokens: 0,
    });
    expect(events.at(-1)).toEqual({ type: "finish", reason: "tool_calls" });
    // v2 has no `strict` on tools and calls image parts "media".
    expect(calls[0]!.tools![0]).not.toHaveProperty("strict");
    const toolMessage = calls[0]!.prompt.at(-1)!;
    expect(JSON.stringify(toolMessage)).toContain('"type":"media"');
  });
});
