import { describe, expect, it } from "vitest";
import { ProviderError, UserError } from "../../src/errors.js";
import { openai, openaiCompatible } from "../../src/providers/index.js";
import type { ProviderWarning } from "../../src/providers/warnings.js";
import { rejectLikeOpenAI, validateChatRequest } from "./openai-chat-api.js";
import {
  chatChunk,
  closedAfterEach,
  collect,
  collectUntilError,
  errorReply,
  fixture,
  type ReplayServer,
  type Reply,
  startReplayServer,
  streamFixture,
} from "./replay-server.js";
import { ask, ofType, text, timeTool, toolRoundTrip, userAsks, weatherTool } from "./transcripts.js";

const servers = closedAfterEach();

async function serve(replies: Reply[], expect: Parameters<typeof validateChatRequest>[1] = {}) {
  const server = await startReplayServer({
    replies,
    validate: (req) => validateChatRequest(req, expect),
    reject: rejectLikeOpenAI,
  });
  servers.push(server);
  return server;
}

const warnings: ProviderWarning[] = [];
function model(server: ReplayServer, options: Partial<Parameters<typeof openai>[0]> = {}) {
  return openai({
    model: "gpt-4.1-mini",
    apiKey: "test-key",
    baseURL: `${server.url}/v1`,
    retryBackoff: { initialMs: 5, maxMs: 20 },
    onWarning: (w) => warnings.push(w),
    ...options,
  });
}

describe("openai() — Chat Completions", () => {
  it("streams plain text, then usage and finish", async () => {
    const server = await serve([streamFixture(fixture("openai-chat/text.jsonl"))]);
    const events = await collect(model(server).stream(ask()));
    expect(text(events)).toBe("Hello! How can I help?");
    expect(events.at(-1)).toEqual({ type: "finish", reason: "stop" });
    expect(ofType(events, "usage")).toEqual([
      {
        type: "usage",
        usage: {
          inputTokens: 1234,
          outputTokens: 9,
          totalTokens: 1243,
          cachedInputTokens: 1024,
          reasoningTokens: 0,
        },
      },
    ]);
    const body = server.requests[0]!.body;
    expect(body.messages).toEqual([
      { role: "system", content: "You are terse." },
      { role: "user", content: "What's the weather in Paris?" },
    ]);
    expect(body.tools).toBeUndefined();
    expect(server.rejected).toEqual([]);
  });

  it("assembles one tool call and sends strict tools in strict form", async () => {
    const server = await serve([streamFixture(fixture("openai-chat/tool-call.jsonl"))]);
    const events = await collect(model(server).stream(ask({ tools: [weatherTool, timeTool] })));
    const deltas = ofType(events, "tool_call_delta");
    expect(deltas[0]).toMatchObject({ index: 0, id: "call_Vq3kT8mZ2nXr5LpA7wYb1cDe", name: "get_weather" });
    expect(deltas.map((d) => d.argsDelta).join("")).toBe('{"city":"Paris"}');
    expect(ofType(events, "tool_call")).toEqual([
      {
        type: "tool_call",
        index: 0,
        id: "call_Vq3kT8mZ2nXr5LpA7wYb1cDe",
        name: "get_weather",
        args: '{"city":"Paris"}',
      },
    ]);
    expect(events.at(-1)).toEqual({ type: "finish", reason: "tool_calls" });
    const [weather, time] = server.requests[0]!.body.tools;
    expect(weather.function.strict).toBe(true);
    expect(weather.function.parameters).toEqual({
      type: "object",
      properties: {
        city: { type: "string", description: "City name" },
        unit: { anyOf: [{ type: "string", enum: ["c", "f"] }, { type: "null" }] },
      },
      required: ["city", "unit"],
      additionalProperties: false,
    });
    expect(time.function.strict).toBeUndefined();
    expect(server.rejected).toEqual([]);
  });

  it("assembles several parallel calls whose fragments interleave", async () => {
    const server = await serve([streamFixture(fixture("openai-chat/parallel-interleaved.jsonl"))]);
    const events = await collect(model(server).stream(ask({ tools: [weatherTool, timeTool] })));
    const calls = ofType(events, "tool_call").map(({ id, name, args }) => ({
      id,
      name,
      args: JSON.parse(args),
    }));
    expect(calls).toEqual([
      { id: "call_A1b2C3d4E5f6G7h8I9j0K1l2", name: "get_weather", args: { city: "Paris" } },
      { id: "call_M3n4O5p6Q7r8S9t0U1v2W3x4", name: "get_weather", args: { city: "Tokyo" } },
      { id: "call_Y5z6A7b8C9d0E1f2G3h4I5j6", name: "get_time", args: { tz: "Asia/Tokyo" } },
    ]);
    // Deltas carry the call's own index, so a UI can show three calls filling in at once.
    const byIndex = new Map<number, string>();
    for (const d of ofType(events, "tool_call_delta"))
      byIndex.set(d.index, (byIndex.get(d.index) ?? "") + d.argsDelta);
    expect([...byIndex.values()].map((a) => JSON.parse(a))).toEqual([
      { city: "Paris" },
      { city: "Tokyo" },
      { tz: "Asia/Tokyo" },
    ]);
  });

  it("sends a tool result's images in a user message after the tool messages", async () => {
    const server = await serve([streamFixture(fixture("openai-chat/text.jsonl"))]);
    await collect(model(server).stream(ask({ messages: toolRoundTrip(), tools: [weatherTool] })));
    expect(server.rejected).toEqual([]);
    const messages = server.requests[0]!.body.messages;
    expect(messages.map((m: any) => m.role)).toEqual(["system", "user", "assistant", "tool", "user"]);
    expect(messages[2].tool_calls[0]).toEqual({
      id: "call_Vq3kT8mZ2nXr5LpA7wYb1cDe",
      type: "function",
      function: { name: "get_weather", arguments: '{"city":"Paris"}' },
    });
    expect(messages[3]).toEqual({
      role: "tool",
      tool_call_id: "call_Vq3kT8mZ2nXr5LpA7wYb1cDe",
      content: "18°C, light rain\n[1 image attached in the next user message]",
    });
    expect(messages[4].content[1].image_url.url).toMatch(/^data:image\/png;base64,iVBOR/);
  });

  it("reports a length cut-off and leaves the cut-off arguments unrepaired", async () => {
    const server = await serve([streamFixture(fixture("openai-chat/length.jsonl"))]);
    const events = await collect(model(server).stream(ask()));
    expect(events.at(-1)).toEqual({ type: "finish", reason: "length" });
    const [call] = ofType(events, "tool_call");
    expect(call!.args).toBe('{"path":"notes.md","content":"# Notes\\n\\nThe first');
    expect(call).not.toHaveProperty("repairs");
  });

  it("repairs slightly malformed arguments and says what it fixed", async () => {
    const server = await serve([streamFixture(fixture("openai-chat/malformed-args.jsonl"))]);
    const [call] = ofType(await collect(model(server).stream(ask({ tools: [weatherTool] }))), "tool_call");
    expect(JSON.parse(call!.args)).toEqual({ city: "Paris" });
    expect(call).toMatchObject({
      rawArgs: "{'city': \"Paris\",}",
      repairs: ["single-quoted string", "trailing comma"],
    });
  });

  it("waits as long as Retry-After says after a 429, then succeeds without a reset", async () => {
    const server = await serve([
      errorReply(
        429,
        { error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } },
        { "retry-after": "1" },
      ),
      streamFixture(fixture("openai-chat/text.jsonl")),
    ]);
    const started = Date.now();
    const events = await collect(model(server).stream(ask()));
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(ofType(events, "reset")).toEqual([]);
    expect(text(events)).toBe("Hello! How can I help?");
    expect(server.requests).toHaveLength(2);
  });

  it("honours retry-after-ms", async () => {
    const server = await serve([
      errorReply(
        429,
        { error: { message: "slow down", type: "requests" } },
        { "retry-after-ms": "150", "retry-after": "30" },
      ),
      streamFixture(fixture("openai-chat/text.jsonl")),
    ]);
    const started = Date.now();
    await collect(model(server).stream(ask()));
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(140);
    expect(elapsed).toBeLessThan(5_000);
  });

  it("fails at once when Retry-After asks for longer than maxRetryAfterMs", async () => {
    const server = await serve([
      errorReply(429, { error: { message: "quota", type: "insufficient_quota" } }, { "retry-after": "3600" }),
    ]);
    const { error } = await collectUntilError(model(server).stream(ask()));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ status: 429, type: "insufficient_quota", retryable: true });
    expect((error as Error).message).toContain("retry after 3600 s, longer than maxRetryAfterMs 60000 ms");
    expect(server.requests).toHaveLength(1);
  });

  it("gives up after maxRetries on repeated 500s", async () => {
    const fail = errorReply(500, { error: { message: "The server had an error", type: "server_error" } });
    const server = await serve([fail, fail, fail, fail]);
    const { error } = await collectUntilError(model(server).stream(ask()));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ status: 500, type: "server_error", retryable: true, provider: "openai" });
    expect(server.requests).toHaveLength(3);
  });

  it("does not retry a 400 and reports the API's error type and message", async () => {
    const server = await serve([
      errorReply(400, {
        error: {
          message: "Invalid 'messages[1].content'",
          type: "invalid_request_error",
          param: "messages",
          code: null,
        },
      }),
    ]);
    const { error } = await collectUntilError(model(server).stream(ask()));
    expect(error).toMatchObject({ status: 400, type: "invalid_request_error", retryable: false });
    expect((error as Error).message).toContain("Invalid 'messages[1].content'");
    expect(server.requests).toHaveLength(1);
  });

  it("retries a mid-stream disconnect with a reset, and the retry's output is complete", async () => {
    const lines = fixture("openai-chat/text.jsonl");
    const server = await serve([
      streamFixture(lines, { cutAfter: 3, after: "disconnect" }),
      streamFixture(lines),
    ]);
    const events = await collect(model(server).stream(ask()));
    const resetAt = events.findIndex((e) => e.type === "reset");
    expect(resetAt).toBeGreaterThan(0);
    expect(text(events.slice(0, resetAt))).toBe("Hello!");
    expect(text(events.slice(resetAt))).toBe("Hello! How can I help?");
    expect(ofType(events, "usage")).toHaveLength(1);
  });

  it("reports a mid-stream disconnect as a retryable error when retries are spent", async () => {
    const server = await serve([
      streamFixture(fixture("openai-chat/text.jsonl"), { cutAfter: 3, after: "disconnect" }),
    ]);
    const { events, error } = await collectUntilError(model(server, { maxRetries: 0 }).stream(ask()));
    expect(text(events)).toBe("Hello!");
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ retryable: true, type: "connection_error" });
  });

  it("treats a stream that ends without a finish reason as a retryable error", async () => {
    const server = await serve([
      streamFixture(fixture("openai-chat/text.jsonl"), { cutAfter: 4, after: "end" }),
    ]);
    const { error } = await collectUntilError(model(server, { maxRetries: 0 }).stream(ask()));
    expect(error).toMatchObject({ retryable: true, type: "incomplete_stream" });
  });

  it("fails on a malformed chunk, and recovers from one with a retry", async () => {
    const lines = fixture("openai-chat/text.jsonl");
    const broken = streamFixture(lines, {
      replace: { 2: '{"id":"chatcmpl-x","choices":[{"delta":{"content":"!"' },
    });
    const server = await serve([broken, broken, streamFixture(lines)]);
    const first = await collectUntilError(model(server, { maxRetries: 0 }).stream(ask()));
    expect(first.error).toMatchObject({ type: "malformed_chunk", retryable: true });
    const events = await collect(model(server, { maxRetries: 1 }).stream(ask()));
    expect(ofType(events, "reset")).toHaveLength(1);
    expect(text(events.slice(events.findIndex((e) => e.type === "reset")))).toBe("Hello! How can I help?");
  });

  it("stops the HTTP request at once when the signal aborts mid-stream", async () => {
    let closed!: () => void;
    const connectionClosed = new Promise<void>((r) => (closed = r));
    const server = await serve([
      async (res, req) => {
        res.on("close", () => closed());
        await streamFixture(fixture("openai-chat/text.jsonl"), { cutAfter: 2, after: "stall" })(res, req);
      },
    ]);
    const controller = new AbortController();
    const started = Date.now();
    const { events, error } = await collectUntilError(
      (async function* () {
        for await (const event of model(server).stream(ask({ signal: controller.signal }))) {
          yield event;
          if (event.type === "text_delta") controller.abort();
        }
      })(),
    );
    expect(text(events)).toBe("Hello");
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ type: "aborted", retryable: false });
    await connectionClosed;
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(server.requests).toHaveLength(1);
  });

  it("times out a stalled stream with the idle timeout (retryable)", async () => {
    const server = await serve([
      streamFixture(fixture("openai-chat/text.jsonl"), { cutAfter: 2, after: "stall" }),
    ]);
    const started = Date.now();
    const { error } = await collectUntilError(
      model(server, { idleTimeoutMs: 200, maxRetries: 0 }).stream(ask()),
    );
    expect(error).toMatchObject({ type: "idle_timeout", retryable: true });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("lets a reasoning model think silently past the idle timeout before its first output", async () => {
    const lines = fixture("openai-chat/text.jsonl");
    const thinking: Reply = async (res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(`data: ${lines[0]}\n\n`); // the role chunk, no output yet
      await new Promise((r) => setTimeout(r, 400));
      for (const line of lines.slice(1)) res.write(`data: ${line}\n\n`);
      res.end();
    };
    const server = await serve([thinking]);
    const events = await collect(model(server, { idleTimeoutMs: 150, maxRetries: 0 }).stream(ask()));
    expect(text(events)).toBe("Hello! How can I help?");
  });

  it("times out a server that never sends headers, then retries with a reset only if output was seen", async () => {
    const stall: Reply = () => {};
    const server = await serve([stall, streamFixture(fixture("openai-chat/text.jsonl"))]);
    const events = await collect(model(server, { idleTimeoutMs: 150 }).stream(ask()));
    expect(ofType(events, "reset")).toEqual([]);
    expect(text(events)).toBe("Hello! How can I help?");
  });

  it("bounds the wait even with a custom fetch that ignores its signal", async () => {
    const deaf: typeof fetch = () => new Promise<Response>(() => {});
    const server = await serve([]);
    const started = Date.now();
    const { error } = await collectUntilError(
      model(server, { fetch: deaf, idleTimeoutMs: 100, maxRetries: 0 }).stream(ask()),
    );
    expect(error).toMatchObject({ type: "idle_timeout", retryable: true });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("bounds the whole request with timeoutMs even while chunks keep coming", async () => {
    const server = await serve([streamFixture(fixture("openai-chat/text.jsonl"), { delayMs: 120 })]);
    const { error } = await collectUntilError(model(server, { timeoutMs: 250, maxRetries: 0 }).stream(ask()));
    expect(error).toMatchObject({ type: "timeout", retryable: true });
  });

  it("maps every model setting to the API's field", async () => {
    const server = await serve([streamFixture(fixture("openai-chat/text.jsonl"))]);
    await collect(
      model(server).stream(
        ask({
          tools: [weatherTool],
          settings: {
            temperature: 0.2,
            topP: 0.9,
            maxTokens: 512,
            stop: ["END"],
            toolChoice: { name: "get_weather" },
            parallelToolCalls: false,
            reasoning: { effort: "low" },
            responseFormat: {
              type: "json_schema",
              name: "answer",
              schema: { type: "object", properties: { a: { type: "number" } } },
              strict: true,
            },
            extra: { seed: 7, service_tier: "flex" },
          },
        }),
      ),
    );
    expect(server.rejected).toEqual([]);
    const body = server.requests[0]!.body;
    expect(body).toMatchObject({
      temperature: 0.2,
      top_p: 0.9,
      max_completion_tokens: 512,
      stop: ["END"],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      parallel_tool_calls: false,
      reasoning_effort: "low",
      seed: 7,
      service_tier: "flex",
      response_format: {
        type: "json_schema",
        json_schema: {
          name: "answer",
          strict: true,
          schema: {
            type: "object",
            properties: { a: { type: ["number", "null"] } },
            required: ["a"],
            additionalProperties: false,
          },
        },
      },
    });
  });

  it("sends a strict tool it cannot make strict as non-strict, with a warning", async () => {
    warnings.length = 0;
    const server = await serve([streamFixture(fixture("openai-chat/text.jsonl"))]);
    const record = {
      name: "tag",
      description: "Tag things.",
      parameters: {
        type: "object",
        properties: { tags: { type: "object", additionalProperties: { type: "string" } } },
      },
      strict: true,
    };
    await collect(model(server).stream(ask({ tools: [record] })));
    expect(server.requests[0]!.body.tools[0].function.strict).toBeUndefined();
    expect(warnings).toEqual([
      { provider: "openai", tool: "tag", message: expect.stringContaining("non-strict") },
    ]);
  });

  it("drops another provider's reasoning and shortens ids the API would reject", async () => {
    const server = await serve([streamFixture(fixture("openai-chat/text.jsonl"))]);
    const longId = "toolu_01A09q90qw90lq917835lq9:extra/characters-that-are-too-long";
    const messages = toolRoundTrip(longId);
    messages[1] = {
      ...messages[1]!,
      content: [
        {
          type: "reasoning",
          text: "private chain of thought",
          providerData: { anthropic: { signature: "sig" } },
        },
        { type: "text", text: "Let me check." },
      ],
      providerData: { anthropic: { content: [] } },
    } as (typeof messages)[1];
    await collect(model(server).stream(ask({ messages })));
    expect(server.rejected).toEqual([]);
    const sent = server.requests[0]!.body.messages;
    expect(JSON.stringify(sent)).not.toContain("private chain of thought");
    expect(sent[2].content).toBe("Let me check.");
    expect(sent[2].tool_calls[0].id.length).toBeLessThanOrEqual(40);
    expect(sent[3].tool_call_id).toBe(sent[2].tool_calls[0].id);
  });

  it("lets a header named like its own, in any case, replace it (a gateway's key)", async () => {
    const server = await serve([streamFixture(fixture("openai-chat/text.jsonl"))], { apiKey: "gateway-key" });
    await collect(model(server, { headers: { Authorization: "Bearer gateway-key" } }).stream(ask()));
    expect(server.requests[0]!.headers.authorization).toBe("Bearer gateway-key");
    expect(server.rejected).toEqual([]);
  });

  it("requires an API key at construction, naming the variable", () => {
    const saved = process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_API_KEY;
    try {
      expect(() => openai({ model: "gpt-4.1-mini" })).toThrow(UserError);
      expect(() => openai({ model: "gpt-4.1-mini" })).toThrow(/OPENAI_API_KEY/);
    } finally {
      if (saved !== undefined) process.env.OPENAI_API_KEY = saved;
    }
  });
});

describe("openaiCompatible() — quirks of OpenAI-compatible servers", () => {
  function local(server: ReplayServer, options: Partial<Parameters<typeof openaiCompatible>[0]> = {}) {
    return openaiCompatible({
      name: "local",
      baseURL: `${server.url}/v1`,
      model: "qwen3",
      retryBackoff: { initialMs: 5 },
      onWarning: () => {},
      ...options,
    });
  }
  const compatible = { apiKey: null, compatible: true } as const;

  it("tolerates null/missing tool-call indexes, `reasoning`, usage in the last chunk and no [DONE]", async () => {
    const server = await serve([streamFixture(fixture("openai-chat/compat-null-index.jsonl"))], compatible);
    const events = await collect(local(server).stream(ask({ tools: [weatherTool, timeTool] })));
    expect(ofType(events, "reasoning_delta").map((e) => e.delta)).toEqual(["Need the weather."]);
    expect(
      ofType(events, "tool_call").map(({ id, name, args }) => ({ id, name, args: JSON.parse(args) })),
    ).toEqual([
      { id: "call_a1", name: "get_weather", args: { city: "Oslo" } },
      { id: "call_b2", name: "get_time", args: { tz: "Europe/Oslo" } },
    ]);
    expect(ofType(events, "usage")[0]!.usage).toMatchObject({
      inputTokens: 210,
      outputTokens: 44,
      totalTokens: 254,
    });
    expect(events.at(-1)).toEqual({ type: "finish", reason: "tool_calls" });
    // Compatible servers get max_tokens and no Authorization header without a key.
    expect(server.requests[0]!.headers.authorization).toBeUndefined();
  });

  it("separates calls sent whole under the same index, and says tool_calls when the server said stop", async () => {
    const server = await serve([streamFixture(fixture("openai-chat/compat-same-index.jsonl"))], compatible);
    const events = await collect(local(server).stream(ask({ tools: [weatherTool] })));
    expect(ofType(events, "tool_call").map((c) => [c.id, JSON.parse(c.args).city])).toEqual([
      ["call_9x2kq1", "Lima"],
      ["call_4hb7tz", "Quito"],
    ]);
    expect(events.at(-1)).toEqual({ type: "finish", reason: "tool_calls" });
  });

  it("streams reasoning_content as reasoning and can send it back", async () => {
    const server = await serve(
      [
        streamFixture(fixture("openai-chat/compat-reasoning-content.jsonl")),
        streamFixture(fixture("openai-chat/text.jsonl")),
      ],
      { apiKey: "ds-key", compatible: true },
    );
    const deepseek = local(server, {
      name: "deepseek",
      apiKey: "ds-key",
      replayReasoningContent: true,
      model: "deepseek-reasoner",
    });
    const events = await collect(deepseek.stream(ask({ settings: { maxTokens: 100 } })));
    const reasoning = ofType(events, "reasoning_delta");
    expect(reasoning.map((e) => e.delta).join("")).toBe("The user asks for 2+2.");
    expect(text(events)).toBe("4");
    const finish = events.at(-1)!;
    expect(finish).toEqual({
      type: "finish",
      reason: "stop",
      providerData: { deepseek: { reasoningContent: "The user asks for 2+2." } },
    });
    expect(ofType(events, "usage")[0]!.usage).toMatchObject({
      inputTokens: 14,
      outputTokens: 20,
      reasoningTokens: 12,
      cachedInputTokens: 0,
    });
    expect(server.requests[0]!.body.max_tokens).toBe(100);

    await collect(
      deepseek.stream(
        ask({
          messages: [
            ...userAsks,
            {
              role: "assistant",
              content: [
                { type: "reasoning", text: "The user asks for 2+2.", providerData: { deepseek: {} } },
                {
                  type: "reasoning",
                  text: "someone else's thoughts",
                  providerData: { anthropic: { signature: "x" } },
                },
                { type: "text", text: "4" },
              ],
            },
            { role: "user", content: "And 3+3?" },
          ],
        }),
      ),
    );
    expect(server.requests[1]!.body.messages[2]).toEqual({
      role: "assistant",
      content: "4",
      reasoning_content: "The user asks for 2+2.",
    });
  });

  it("reports an error sent inside the stream", async () => {
    const server = await serve(
      [streamFixture(['{"error":{"message":"model is overloaded","type":"server_error"}}'])],
      compatible,
    );
    const { error } = await collectUntilError(local(server, { maxRetries: 0 }).stream(ask()));
    expect(error).toMatchObject({ type: "server_error", retryable: true });
    expect((error as Error).message).toContain("model is overloaded");
  });

  it("explains a JSON answer to a streaming request instead of retrying it", async () => {
    const server = await serve(
      [
        (res) => {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify({ error: { message: "model 'qwen9' not found", type: "not_found_error" } }));
        },
      ],
      compatible,
    );
    const { error } = await collectUntilError(local(server).stream(ask()));
    expect(error).toMatchObject({ type: "not_found_error", retryable: false });
    expect((error as Error).message).toContain("model 'qwen9' not found");
    expect(server.requests).toHaveLength(1);
  });

  it("reports llama.cpp's `error:` line before [DONE] as the error it is, not an empty answer", async () => {
    // llama-server's stream when the prompt exceeds the context (server_sent_event "error").
    const overflow = {
      code: 400,
      message: "the request exceeds the available context size",
      type: "exceed_context_size_error",
    };
    const server = await serve(
      [
        (res) => {
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.end(`error: ${JSON.stringify(overflow)}\n\ndata: [DONE]\n\n`);
        },
      ],
      compatible,
    );
    const { error } = await collectUntilError(local(server).stream(ask()));
    expect(error).toMatchObject({ type: "exceed_context_size_error", retryable: false });
    expect((error as Error).message).toContain("exceeds the available context size");
    expect(server.requests).toHaveLength(1);
  });

  it("does not take [DONE] after nothing at all for an empty answer", async () => {
    const server = await serve(
      [streamFixture(["[DONE]"]), streamFixture([chatChunk({ content: "Hi." }, "stop"), "[DONE]"])],
      compatible,
    );
    const events = await collect(local(server).stream(ask()));
    expect(text(events)).toBe("Hi.");
    expect(server.requests).toHaveLength(2);
  });

  it("tells apart parallel calls sent whole with no id, with no index or all at index 0", async () => {
    const whole = (call: object, index?: number) =>
      chatChunk({
        tool_calls: [{ ...(index === undefined ? {} : { index }), id: "", type: "function", ...call }],
      });
    for (const index of [undefined, 0]) {
      const server = await serve(
        [
          streamFixture([
            whole({ function: { name: "get_weather", arguments: '{"city":"Paris"}' } }, index),
            whole({ function: { name: "get_weather", arguments: '{"city":"Rome"}' } }, index),
            whole({ function: { name: "get_time", arguments: "{}" } }, index),
            chatChunk({}, "tool_calls"),
            "[DONE]",
          ]),
        ],
        compatible,
      );
      const events = await collect(local(server).stream(ask({ tools: [weatherTool, timeTool] })));
      expect(ofType(events, "tool_call").map((c) => [c.name, JSON.parse(c.args)])).toEqual([
        ["get_weather", { city: "Paris" }],
        ["get_weather", { city: "Rome" }],
        ["get_time", {}],
      ]);
    }
  });

  it("keeps a call whose every fragment repeats its name without an id", async () => {
    const part = (args: string) =>
      chatChunk({ tool_calls: [{ function: { name: "get_weather", arguments: args } }] });
    const server = await serve(
      [streamFixture([part('{"ci'), part('ty":"Os'), part('lo"}'), chatChunk({}, "tool_calls"), "[DONE]"])],
      compatible,
    );
    const events = await collect(local(server).stream(ask({ tools: [weatherTool] })));
    expect(ofType(events, "tool_call").map((c) => JSON.parse(c.args))).toEqual([{ city: "Oslo" }]);
  });

  it("assembles a long call whose every fragment repeats its name in time linear in its length", async () => {
    const part = (args: string) =>
      chatChunk({ tool_calls: [{ function: { name: "get_weather", arguments: args } }] });
    const timed = async (fragments: number) => {
      const city = "x".repeat(fragments * 20);
      const pieces = [part('{"city":"'), ...city.match(/.{20}/g)!.map(part), part('"}')];
      const server = await serve(
        [streamFixture([...pieces, chatChunk({}, "tool_calls"), "[DONE]"])],
        compatible,
      );
      const started = performance.now();
      const events = await collect(local(server).stream(ask({ tools: [weatherTool] })));
      const ms = performance.now() - started;
      expect(ofType(events, "tool_call").map((c) => JSON.parse(c.args))).toEqual([{ city }]);
      return ms;
    };
    await timed(2_000); // warm-up
    const small = await timed(4_000);
    const large = await timed(16_000);
    // Parsed whole at every fragment, four times the fragments took about sixteen times as long.
    expect(large / small).toBeLessThan(8);
  });

  it("takes the answer of a server that finishes and then leaves the connection open or drops it", async () => {
    const lines = [
      chatChunk({ content: "Complete answer." }),
      chatChunk({}, "stop"),
      JSON.stringify({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 3 } }),
    ];
    for (const after of ["stall", "disconnect"] as const) {
      const server = await serve([streamFixture(lines, { cutAfter: lines.length, after })], compatible);
      const started = Date.now();
      const events = await collect(local(server, { idleTimeoutMs: 10_000 }).stream(ask()));
      expect(text(events)).toBe("Complete answer.");
      expect(ofType(events, "usage")[0]!.usage).toMatchObject({ inputTokens: 5, outputTokens: 3 });
      expect(events.at(-1)).toEqual({ type: "finish", reason: "stop" });
      expect(ofType(events, "reset" as never)).toEqual([]);
      expect(server.requests).toHaveLength(1);
      // The quiet after the finish is not waited out to the idle timeout.
      expect(Date.now() - started).toBeLessThan(5_000);
    }
  });

  it("says a 200 HTML page is not a stream, naming the page and the baseURL, without retrying", async () => {
    const server = await serve(
      [
        (res) => {
          res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
          res.end("<!doctype html><html><head><title>Open WebUI</title></head><body>…</body></html>");
        },
      ],
      compatible,
    );
    const { error } = await collectUntilError(local(server).stream(ask()));
    expect(error).toMatchObject({ type: "unexpected_response", retryable: false });
    expect((error as Error).message).toMatch(/got an HTML page \("Open WebUI"\): check the baseURL/);
    expect(server.requests).toHaveLength(1);
  });

  it("streams a body labelled JSON that is a stream, chunk by chunk under the idle timeout", async () => {
    const lines = [
      chatChunk({ content: "one " }),
      chatChunk({ content: "two " }),
      chatChunk({ content: "three" }),
      chatChunk({}, "stop"),
      "[DONE]",
    ];
    const server = await serve(
      [streamFixture(lines, { headers: { "content-type": "application/json" }, delayMs: 150 })],
      compatible,
    );
    // 750 ms of streaming in all, never 400 ms of silence.
    const events = await collect(local(server, { idleTimeoutMs: 400, maxRetries: 0 }).stream(ask()));
    expect(text(events)).toBe("one two three");
  });

  it("takes a whole answer from a server that ignored stream: true", async () => {
    const server = await serve(
      [
        (res) => {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(
            JSON.stringify({
              id: "chatcmpl-1",
              object: "chat.completion",
              choices: [
                {
                  index: 0,
                  message: {
                    role: "assistant",
                    content: null,
                    tool_calls: [
                      {
                        id: "call_1",
                        type: "function",
                        function: { name: "get_weather", arguments: '{"city":"Lima"}' },
                      },
                    ],
                  },
                  finish_reason: "tool_calls",
                },
              ],
              usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
            }),
          );
        },
      ],
      compatible,
    );
    const events = await collect(local(server).stream(ask({ tools: [weatherTool] })));
    expect(ofType(events, "tool_call").map((c) => [c.id, JSON.parse(c.args)])).toEqual([
      ["call_1", { city: "Lima" }],
    ]);
    expect(ofType(events, "usage")[0]!.usage).toMatchObject({ inputTokens: 12, outputTokens: 7 });
    expect(events.at(-1)).toEqual({ type: "finish", reason: "tool_calls" });
  });

  it("reads content sent as parts: text as text, thinking as reasoning (Mistral)", async () => {
    const server = await serve(
      [
        streamFixture([
          chatChunk({
            role: "assistant",
            content: [{ type: "thinking", thinking: [{ type: "text", text: "Two and two." }] }],
          }),
          chatChunk({ content: [{ type: "text", text: "4" }] }),
          chatChunk({}, "stop"),
          "[DONE]",
        ]),
      ],
      compatible,
    );
    const events = await collect(local(server).stream(ask()));
    expect(ofType(events, "reasoning_delta").map((e) => e.delta)).toEqual(["Two and two."]);
    expect(text(events)).toBe("4");
  });

  it("keeps a baseURL's query string at the end (Azure's api-version)", async () => {
    const server = await serve([streamFixture([chatChunk({ content: "Hi." }, "stop"), "[DONE]"])], {
      ...compatible,
      path: "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
    });
    const model = local(server, {
      baseURL: `${server.url}/openai/deployments/gpt-4o/?api-version=2024-10-21`,
    });
    expect(text(await collect(model.stream(ask())))).toBe("Hi.");
    expect(server.rejected).toEqual([]);
  });

  it("needs a name and a baseURL", () => {
    expect(() => openaiCompatible({ name: "", baseURL: "http://x/v1", model: "m" })).toThrow(UserError);
    expect(() => openaiCompatible({ name: "x", baseURL: "", model: "m" })).toThrow(/baseURL/);
  });
});
