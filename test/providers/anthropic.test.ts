import { describe, expect, it } from "vitest";
import { ProviderError, UserError } from "../../src/errors.js";
import type { AssistantMessage, Message, ModelStreamEvent } from "../../src/model/types.js";
import { anthropic } from "../../src/providers/index.js";
import type { ProviderWarning } from "../../src/providers/warnings.js";
import { rejectLikeAnthropic, validateMessagesRequest } from "./anthropic-api.js";
import {
  collect,
  collectUntilError,
  errorReply,
  fixture,
  type ReplayServer,
  replayServers,
  type StreamOptions,
  streamFixture,
  typedFrame,
} from "./replay-server.js";
import { ask, ofType, PNG_1PX, text, timeTool, toolRoundTrip, userAsks, weatherTool } from "./transcripts.js";

const serve = replayServers({ validate: validateMessagesRequest, reject: rejectLikeAnthropic });
const replay = (name: string, options: StreamOptions = {}) =>
  streamFixture(fixture(`anthropic/${name}.jsonl`), { frame: typedFrame, ...options });

const warnings: ProviderWarning[] = [];
function model(server: ReplayServer, options: Partial<Parameters<typeof anthropic>[0]> = {}) {
  return anthropic({
    model: "claude-sonnet-4-5",
    apiKey: "test-key",
    baseURL: server.url,
    retryBackoff: { initialMs: 5, maxMs: 20 },
    onWarning: (w) => warnings.push(w),
    ...options,
  });
}

describe("anthropic() — Messages API", () => {
  it("streams text and reports usage with cache reads and writes counted as input", async () => {
    const server = await serve([replay("text")]);
    const events = await collect(model(server).stream(ask()));
    expect(text(events)).toBe("Hello! How can I help?");
    expect(ofType(events, "usage")).toEqual([
      {
        type: "usage",
        usage: {
          inputTokens: 4512,
          outputTokens: 12,
          totalTokens: 4524,
          cachedInputTokens: 3000,
          cacheWriteTokens: 1500,
        },
      },
    ]);
    expect(events.at(-1)).toEqual({ type: "finish", reason: "stop" });
    expect(server.rejected).toEqual([]);
    const body = server.requests[0]!.body;
    expect(body).toMatchObject({
      model: "claude-sonnet-4-5",
      max_tokens: 16384,
      system: [{ type: "text", text: "You are terse.", cache_control: { type: "ephemeral" } }],
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What's the weather in Paris?", cache_control: { type: "ephemeral" } },
          ],
        },
      ],
    });
  });

  it("assembles a tool_use call from input_json_delta fragments", async () => {
    const server = await serve([replay("tool-use")]);
    const events = await collect(model(server).stream(ask({ tools: [weatherTool, timeTool] })));
    expect(text(events)).toBe("I'll check the weather.");
    expect(ofType(events, "tool_call")).toEqual([
      {
        type: "tool_call",
        index: 0,
        id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
        name: "get_weather",
        args: '{"city": "Paris"}',
      },
    ]);
    expect(events.at(-1)).toEqual({ type: "finish", reason: "tool_calls" });
    const tools = server.requests[0]!.body.tools;
    expect(tools[0]).toEqual({
      name: "get_weather",
      description: "Current weather for a city.",
      input_schema: {
        type: "object",
        properties: {
          city: { type: "string", description: "City name" },
          unit: { type: "string", enum: ["c", "f"] },
        },
        required: ["city"],
      },
    });
    expect(tools[1].cache_control).toEqual({ type: "ephemeral" });
  });

  it("assembles parallel tool_use blocks whose deltas interleave; a call without input gets {}", async () => {
    const server = await serve([replay("parallel-tool-use")]);
    const events = await collect(model(server).stream(ask({ tools: [weatherTool, timeTool] })));
    expect(ofType(events, "tool_call").map(({ id, name, args }) => [id, name, JSON.parse(args)])).toEqual([
      ["toolu_01A", "get_weather", { city: "Paris" }],
      ["toolu_01B", "get_weather", { city: "Tokyo" }],
      ["toolu_01C", "get_time", {}],
    ]);
  });

  it("sends tool results with images as tool_result blocks right after the tool_use turn", async () => {
    const server = await serve([replay("text")]);
    const messages: Message[] = [
      ...toolRoundTrip("toolu_01T1x1fJ34qAmk2tNTrN7Up6"),
      { role: "user", content: "Thanks! And tomorrow?" },
    ];
    await collect(model(server).stream(ask({ messages, tools: [weatherTool] })));
    expect(server.rejected).toEqual([]);
    const sent = server.requests[0]!.body.messages;
    expect(sent.map((m: any) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(sent[1].content).toEqual([
      { type: "text", text: "Let me check." },
      {
        type: "tool_use",
        id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
        name: "get_weather",
        input: { city: "Paris" },
      },
    ]);
    expect(sent[2].content[0]).toEqual({
      type: "tool_result",
      tool_use_id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
      content: [
        { type: "text", text: "18°C, light rain" },
        { type: "image", source: { type: "base64", media_type: "image/png", data: PNG_1PX } },
      ],
    });
    expect(sent[2].content[1]).toMatchObject({ type: "text", text: "Thanks! And tomorrow?" });
  });

  it("keeps thinking and redacted thinking with their signatures and replays them exactly", async () => {
    const server = await serve([replay("thinking"), replay("text")]);
    const first = await collect(
      model(server).stream(ask({ tools: [weatherTool], settings: { reasoning: { budgetTokens: 2048 } } })),
    );
    expect(
      ofType(first, "reasoning_delta")
        .map((e) => e.delta)
        .join(""),
    ).toBe("The user wants the weather. I should call get_weather.");
    const finish = first.at(-1) as Extract<ModelStreamEvent, { type: "finish" }>;
    const kept = [
      {
        type: "thinking",
        thinking: "The user wants the weather. I should call get_weather.",
        signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
      },
      { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP" },
      { type: "text", text: "Checking." },
      { type: "tool_use", id: "toolu_01Th1nk1ng", name: "now", input: {} },
    ];
    expect(finish).toEqual({
      type: "finish",
      reason: "tool_calls",
      providerData: { anthropic: { content: kept } },
    });

    // The transcript as a runner would store it: its own call id, the provider's kept apart.
    const assistant: AssistantMessage = {
      role: "assistant",
      content: [
        { type: "reasoning", text: "The user wants the weather. I should call get_weather." },
        { type: "text", text: "Checking." },
      ],
      toolCalls: [{ id: "call_1", providerCallId: "toolu_01Th1nk1ng", name: "now", args: {} }],
      providerData: finish.providerData!,
    };
    const next: Message[] = [
      ...userAsks,
      assistant,
      { role: "tool", toolCallId: "call_1", name: "now", content: "2025-06-01T10:00:00Z", isError: false },
    ];
    await collect(
      model(server).stream(
        ask({ messages: next, tools: [weatherTool], settings: { reasoning: { budgetTokens: 2048 } } }),
      ),
    );
    expect(server.rejected).toEqual([]);
    const sent = server.requests[1]!.body.messages;
    expect(sent[1].content).toEqual(kept);
    expect(sent[2].content[0]).toMatchObject({ type: "tool_result", tool_use_id: "toolu_01Th1nk1ng" });
  });

  it("lets headers replace its own whatever their case", async () => {
    const server = await serve([replay("text")]);
    await collect(
      model(server, {
        headers: { "X-Api-Key": "test-key", "Anthropic-Version": "2023-06-01", "X-Gateway": "g" },
      }).stream(ask()),
    );
    const sent = server.requests[0]!.headers;
    expect([sent["x-api-key"], sent["anthropic-version"], sent["x-gateway"]]).toEqual([
      "test-key",
      "2023-06-01",
      "g",
    ]);
  });

  it("keeps an empty text block of a thinking turn out of its replay (the API refuses it)", async () => {
    const lines = fixture("anthropic/thinking.jsonl").filter((line) => !line.includes('"text_delta"'));
    const server = await serve([streamFixture(lines, { frame: typedFrame })]);
    const first = await collect(
      model(server).stream(ask({ tools: [weatherTool], settings: { reasoning: { budgetTokens: 2048 } } })),
    );
    const finish = first.at(-1) as Extract<ModelStreamEvent, { type: "finish" }>;
    const kept = (finish.providerData!.anthropic as { content: Array<{ type: string }> }).content;
    expect(kept.map((block) => block.type)).toEqual(["thinking", "redacted_thinking", "tool_use"]);
  });

  it("takes a tool's input sent whole with its block's start (a translating gateway)", async () => {
    const frames = [
      '{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}',
      '{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}}',
      '{"type":"content_block_stop","index":0}',
      '{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_2","name":"get_weather","input":{"city":"X"}}}',
      '{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"city\\":\\"Rome\\"}"}}',
      '{"type":"content_block_stop","index":1}',
      '{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}',
      '{"type":"message_stop"}',
    ];
    const server = await serve([streamFixture(frames, { frame: typedFrame })]);
    const events = await collect(model(server).stream(ask({ tools: [weatherTool] })));
    expect(ofType(events, "tool_call").map((c) => JSON.parse(c.args))).toEqual([
      { city: "Paris" },
      { city: "Rome" },
    ]);
  });

  it("takes a turn whose stop reason came and whose connection then went quiet", async () => {
    const lines = fixture("anthropic/text.jsonl").filter((line) => !line.includes('"message_stop"'));
    const server = await serve([
      streamFixture(lines, { frame: typedFrame, cutAfter: lines.length, after: "stall" }),
    ]);
    const events = await collect(model(server, { idleTimeoutMs: 10_000 }).stream(ask()));
    expect(events.at(-1)).toMatchObject({ type: "finish", reason: "stop" });
    expect(server.requests).toHaveLength(1);
  });

  it("drops another provider's reasoning and normalises ids Anthropic would reject", async () => {
    const server = await serve([replay("text")]);
    const messages: Message[] = [
      ...userAsks,
      {
        role: "assistant",
        content: [
          {
            type: "reasoning",
            text: "encrypted elsewhere",
            providerData: { "openai-responses": { id: "rs_1", encrypted_content: "gAAA" } },
          },
          { type: "text", text: "" },
        ],
        toolCalls: [{ id: "call:1/openai", name: "get_weather", args: { city: "Paris" } }],
        providerData: { "openai-responses": { items: [] } },
      },
      { role: "tool", toolCallId: "call:1/openai", name: "get_weather", content: "", isError: true },
    ];
    await collect(model(server).stream(ask({ messages, tools: [weatherTool] })));
    expect(server.rejected).toEqual([]);
    const sent = server.requests[0]!.body.messages;
    expect(JSON.stringify(sent)).not.toContain("encrypted elsewhere");
    const use = sent[1].content[0];
    expect(use.type).toBe("tool_use");
    expect(use.id).toMatch(/^[a-zA-Z0-9_-]+$/);
    expect(sent[2].content[0]).toMatchObject({ type: "tool_result", tool_use_id: use.id, is_error: true });
  });

  it("reports a max_tokens cut-off as length, arguments unrepaired", async () => {
    const server = await serve([replay("length")]);
    const events = await collect(model(server).stream(ask()));
    expect(events.at(-1)).toEqual({ type: "finish", reason: "length" });
    expect(ofType(events, "tool_call")[0]!.args).toBe(
      '{"path": "notes.md", "content": "# Notes\\n\\nThe fir',
    );
  });

  it("retries a 429 after Retry-After, with no reset when nothing was streamed", async () => {
    const server = await serve([
      errorReply(
        429,
        {
          type: "error",
          error: {
            type: "rate_limit_error",
            message: "Number of request tokens has exceeded your per-minute rate limit",
          },
        },
        { "retry-after": "0" },
      ),
      replay("text"),
    ]);
    const events = await collect(model(server).stream(ask()));
    expect(ofType(events, "reset")).toEqual([]);
    // The retry is said as it happens (a run's warning event, a span event), not only in the time it took.
    expect(ofType(events, "warning")).toEqual([
      {
        type: "warning",
        code: "provider_retry",
        message: expect.stringMatching(/429.*per-minute rate limit.*: retrying in 0 ms \(retry 1 of \d+\)$/),
      },
    ]);
    expect(text(events)).toBe("Hello! How can I help?");
    expect(server.requests).toHaveLength(2);
  });

  it("gives up after maxRetries on 529 overloaded, reporting Anthropic's error type", async () => {
    const overloaded = errorReply(529, {
      type: "error",
      error: { type: "overloaded_error", message: "Overloaded" },
    });
    const server = await serve([overloaded, overloaded, overloaded]);
    const { error } = await collectUntilError(model(server).stream(ask()));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      status: 529,
      type: "overloaded_error",
      retryable: true,
      provider: "anthropic",
    });
    expect(server.requests).toHaveLength(3);
  });

  it("rejects an invalid request without retrying", async () => {
    const server = await serve([]);
    const bad = anthropic({
      model: "claude-sonnet-4-5",
      apiKey: "wrong-key",
      baseURL: server.url,
      onWarning: () => {},
    });
    const { error } = await collectUntilError(bad.stream(ask()));
    expect(error).toMatchObject({ status: 400, type: "invalid_request_error", retryable: false });
    expect(server.requests).toHaveLength(1);
  });

  it("retries after an overloaded error event mid-stream, emitting reset", async () => {
    const server = await serve([replay("overloaded"), replay("text")]);
    const events = await collect(model(server).stream(ask()));
    const resetAt = events.findIndex((e) => e.type === "reset");
    expect(text(events.slice(0, resetAt))).toBe("Hel");
    expect(text(events.slice(resetAt))).toBe("Hello! How can I help?");
  });

  it("reports a mid-stream disconnect and a malformed chunk as retryable errors", async () => {
    const server = await serve([
      replay("text", { cutAfter: 4, after: "disconnect" }),
      replay("text", {
        replace: { 3: '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel' },
      }),
    ]);
    const disconnect = await collectUntilError(model(server, { maxRetries: 0 }).stream(ask()));
    expect(disconnect.error).toMatchObject({ type: "connection_error", retryable: true });
    const malformed = await collectUntilError(model(server, { maxRetries: 0 }).stream(ask()));
    expect(malformed.error).toMatchObject({ type: "malformed_chunk", retryable: true });
  });

  it("treats a stream without a stop reason as a retryable error", async () => {
    const server = await serve([replay("text", { cutAfter: 6, after: "end" })]);
    const { error } = await collectUntilError(model(server, { maxRetries: 0 }).stream(ask()));
    expect(error).toMatchObject({ type: "incomplete_stream", retryable: true });
  });

  it("stops at once on abort, and times out a stalled stream", async () => {
    const server = await serve([
      replay("text", { cutAfter: 4, after: "stall" }),
      replay("text", { cutAfter: 4, after: "stall" }),
    ]);
    const controller = new AbortController();
    const started = Date.now();
    const aborted = await collectUntilError(
      (async function* () {
        for await (const event of model(server).stream(ask({ signal: controller.signal }))) {
          yield event;
          if (event.type === "text_delta") controller.abort();
        }
      })(),
    );
    expect(aborted.error).toMatchObject({ type: "aborted", retryable: false });
    const stalled = await collectUntilError(
      model(server, { idleTimeoutMs: 150, maxRetries: 0 }).stream(ask()),
    );
    expect(stalled.error).toMatchObject({ type: "idle_timeout", retryable: true });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("maps model settings, merging tool results and a follow-up into one user turn", async () => {
    warnings.length = 0;
    const server = await serve([replay("text")]);
    await collect(
      model(server).stream(
        ask({
          messages: [...toolRoundTrip("toolu_x"), { role: "user", content: "Answer as JSON." }],
          tools: [weatherTool],
          settings: {
            temperature: 0.3,
            topP: 0.8,
            maxTokens: 300,
            stop: ["</answer>"],
            toolChoice: "required",
            parallelToolCalls: false,
            responseFormat: {
              type: "json_schema",
              name: "forecast",
              schema: { type: "object", properties: { t: { type: "number" } } },
            },
            extra: { top_k: 40, metadata: { user_id: "u-1" } },
          },
        }),
      ),
    );
    expect(server.rejected).toEqual([]);
    const body = server.requests[0]!.body;
    expect(body).toMatchObject({
      temperature: 0.3,
      top_p: 0.8,
      max_tokens: 300,
      stop_sequences: ["</answer>"],
      tool_choice: { type: "any", disable_parallel_tool_use: true },
      top_k: 40,
      metadata: { user_id: "u-1" },
    });
    expect(body.system[0].text).toContain('"forecast"');
    expect(warnings.map((w) => w.message)).toEqual([expect.stringContaining("responseFormat")]);
  });

  it("turns reasoning effort into a thinking budget and drops what thinking forbids, with warnings", async () => {
    warnings.length = 0;
    const server = await serve([replay("text")]);
    await collect(
      model(server).stream(
        ask({
          tools: [weatherTool],
          settings: {
            reasoning: { effort: "medium" },
            temperature: 0.5,
            toolChoice: { name: "get_weather" },
            maxTokens: 1000,
          },
        }),
      ),
    );
    expect(server.rejected).toEqual([]);
    const body = server.requests[0]!.body;
    expect(body.thinking).toEqual({ type: "enabled", budget_tokens: 4096 });
    expect(body.max_tokens).toBe(5096);
    expect(body.temperature).toBeUndefined();
    expect(body.tool_choice).toEqual({ type: "auto" });
    expect(warnings).toHaveLength(3);
  });

  it("sends tool calls and results as text when the request defines no tools (after a handoff)", async () => {
    const server = await serve([replay("text")]);
    await collect(
      model(server).stream(
        ask({ messages: [...toolRoundTrip("toolu_1"), { role: "user", content: "Summarise." }] }),
      ),
    );
    expect(server.rejected).toEqual([]);
    const sent = server.requests[0]!.body.messages;
    expect(sent[1].content).toEqual([
      { type: "text", text: 'Let me check.\n[called tool get_weather with {"city":"Paris"}]' },
    ]);
    expect(sent[2].content[0]).toEqual({
      type: "text",
      text: "[result of tool get_weather]\n18°C, light rain",
    });
    expect(sent[2].content[1].type).toBe("image");
  });

  it("reports a request it cannot encode as a ProviderError, without sending it", async () => {
    const server = await serve([]);
    const messages: Message[] = [
      ...userAsks,
      { role: "assistant", content: "", toolCalls: [{ id: "t1", name: "now", args: { n: 1n } }] },
    ];
    const { error } = await collectUntilError(model(server).stream(ask({ messages, tools: [timeTool] })));
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ type: "invalid_request", retryable: false });
    expect(server.requests).toHaveLength(0);
  });

  it("requires an API key at construction, naming the variable", () => {
    const saved = process.env.ANTHROPIC_API_KEY;
    delete process.env.ANTHROPIC_API_KEY;
    try {
      expect(() => anthropic({ model: "claude-sonnet-4-5" })).toThrow(UserError);
      expect(() => anthropic({ model: "claude-sonnet-4-5" })).toThrow(/ANTHROPIC_API_KEY/);
    } finally {
      if (saved !== undefined) process.env.ANTHROPIC_API_KEY = saved;
    }
  });
});
