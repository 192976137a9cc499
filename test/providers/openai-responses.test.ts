import { describe, expect, it } from "vitest";
import { ProviderError } from "../../src/errors.js";
import type { Message, ModelStreamEvent } from "../../src/model/types.js";
import { openaiResponses } from "../../src/providers/index.js";
import type { ProviderWarning } from "../../src/providers/warnings.js";
import { rejectLikeOpenAI } from "./openai-chat-api.js";
import { validateResponsesRequest } from "./openai-responses-api.js";
import {
  closedAfterEach,
  collect,
  collectUntilError,
  errorReply,
  fixture,
  type ReplayServer,
  type Reply,
  type StreamOptions,
  startReplayServer,
  streamFixture,
  typedFrame,
} from "./replay-server.js";
import { ask, ofType, PNG_1PX, text, timeTool, toolRoundTrip, userAsks, weatherTool } from "./transcripts.js";

const servers = closedAfterEach();
async function serve(replies: Reply[]) {
  const server = await startReplayServer({
    replies,
    validate: validateResponsesRequest,
    reject: rejectLikeOpenAI,
  });
  servers.push(server);
  return server;
}
const replay = (name: string, options: StreamOptions = {}) =>
  streamFixture(fixture(`openai-responses/${name}.jsonl`), { frame: typedFrame, ...options });

const warnings: ProviderWarning[] = [];
function model(server: ReplayServer, options: Partial<Parameters<typeof openaiResponses>[0]> = {}) {
  return openaiResponses({
    model: "gpt-5-mini",
    apiKey: "test-key",
    baseURL: `${server.url}/v1`,
    retryBackoff: { initialMs: 5, maxMs: 20 },
    onWarning: (w) => warnings.push(w),
    ...options,
  });
}

describe("openaiResponses() — Responses API", () => {
  it("streams text with usage, statelessly (store: false, encrypted reasoning requested)", async () => {
    const server = await serve([replay("text")]);
    const events = await collect(model(server).stream(ask()));
    expect(text(events)).toBe("Hello! How can I help?");
    expect(ofType(events, "usage")[0]!.usage).toEqual({
      inputTokens: 2048,
      outputTokens: 11,
      totalTokens: 2059,
      cachedInputTokens: 1920,
      reasoningTokens: 0,
    });
    expect(events.at(-1)).toEqual({ type: "finish", reason: "stop" });
    expect(server.rejected).toEqual([]);
    expect(server.requests[0]!.body).toMatchObject({
      model: "gpt-5-mini",
      instructions: "You are terse.",
      input: [{ role: "user", content: "What's the weather in Paris?" }],
      store: false,
      include: ["reasoning.encrypted_content"],
    });
  });

  it("carries reasoning items across turns and replays them exactly with the call that followed", async () => {
    const server = await serve([replay("reasoning-tool-call"), replay("text")]);
    const first = await collect(
      model(server).stream(ask({ tools: [weatherTool], settings: { reasoning: { effort: "low" } } })),
    );
    expect(
      ofType(first, "reasoning_delta")
        .map((e) => e.delta)
        .join(""),
    ).toBe("**Checking the weather** I need get_weather for Paris.");
    expect(ofType(first, "tool_call")).toEqual([
      {
        type: "tool_call",
        index: 0,
        id: "call_Wm9kX2V4YW1wbGVfY2FsbF8x",
        name: "get_weather",
        args: '{"city":"Paris"}',
      },
    ]);
    const finish = first.at(-1) as Extract<ModelStreamEvent, { type: "finish" }>;
    expect(finish.reason).toBe("tool_calls");
    const items = (finish.providerData!["openai-responses"] as { items: any[] }).items;
    expect(items.map((i) => [i.type, i.id])).toEqual([
      ["reasoning", "rs_68a1f0c4bb11819aa1b2c3d4e5f60718"],
      ["function_call", "fc_68a1f0c5cc22819ab2c3d4e5f6071829"],
    ]);
    expect(items[0].encrypted_content).toBe("gAAAAABooPDEs3cr3tReasoningBlobQk9XyZ1Tq2w==");
    expect(server.requests[0]!.body.reasoning).toEqual({ effort: "low", summary: "auto" });

    const next: Message[] = [
      ...userAsks,
      {
        role: "assistant",
        content: [{ type: "reasoning", text: "**Checking the weather** I need get_weather for Paris." }],
        toolCalls: [
          {
            id: "c1",
            providerCallId: "call_Wm9kX2V4YW1wbGVfY2FsbF8x",
            name: "get_weather",
            args: { city: "Paris" },
          },
        ],
        providerData: finish.providerData!,
      },
      { role: "tool", toolCallId: "c1", name: "get_weather", content: "18°C", isError: false },
    ];
    await collect(
      model(server).stream(
        ask({ messages: next, tools: [weatherTool], settings: { reasoning: { effort: "low" } } }),
      ),
    );
    expect(server.rejected).toEqual([]);
    expect(server.requests[1]!.body.input).toEqual([
      { role: "user", content: "What's the weather in Paris?" },
      items[0],
      items[1],
      { type: "function_call_output", call_id: "call_Wm9kX2V4YW1wbGVfY2FsbF8x", output: "18°C" },
    ]);
  });

  it("assembles parallel calls whose argument deltas interleave, in output order", async () => {
    const server = await serve([replay("parallel-calls")]);
    const events = await collect(model(server).stream(ask({ tools: [weatherTool, timeTool] })));
    expect(ofType(events, "tool_call").map(({ id, name, args }) => [id, name, JSON.parse(args)])).toEqual([
      ["call_A", "get_weather", { city: "Paris" }],
      ["call_B", "get_time", { tz: "Europe/Paris" }],
    ]);
    // No reasoning in the turn: nothing to keep for replay.
    expect(events.at(-1)).toEqual({ type: "finish", reason: "tool_calls" });
    const tools = server.requests[0]!.body.tools;
    expect(tools.map((t: any) => [t.name, t.strict])).toEqual([
      ["get_weather", true],
      ["get_time", false],
    ]);
  });

  it("sends a tool result with an image as function_call_output content", async () => {
    const server = await serve([replay("text")]);
    await collect(model(server).stream(ask({ messages: toolRoundTrip("call_1"), tools: [weatherTool] })));
    expect(server.rejected).toEqual([]);
    expect(server.requests[0]!.body.input.slice(1)).toEqual([
      { role: "assistant", content: "Let me check." },
      { type: "function_call", call_id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' },
      {
        type: "function_call_output",
        call_id: "call_1",
        output: [
          { type: "input_text", text: "18°C, light rain" },
          { type: "input_image", image_url: `data:image/png;base64,${PNG_1PX}`, detail: "auto" },
        ],
      },
    ]);
  });

  it("drops another provider's reasoning and Anthropic thinking", async () => {
    const server = await serve([replay("text")]);
    const messages: Message[] = [
      ...userAsks,
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "claude thinking", providerData: { anthropic: { signature: "sig" } } },
          { type: "text", text: "Paris is mild today." },
        ],
        providerData: {
          anthropic: { content: [{ type: "thinking", thinking: "claude thinking", signature: "sig" }] },
        },
      },
      { role: "user", content: "Thanks" },
    ];
    await collect(model(server).stream(ask({ messages })));
    expect(server.rejected).toEqual([]);
    expect(JSON.stringify(server.requests[0]!.body.input)).not.toContain("claude thinking");
  });

  it("reports max_output_tokens as a length finish with the cut-off arguments", async () => {
    const server = await serve([replay("incomplete")]);
    const events = await collect(model(server).stream(ask({ settings: { maxTokens: 16 } })));
    expect(events.at(-1)).toEqual({ type: "finish", reason: "length" });
    expect(ofType(events, "tool_call")[0]!.args).toBe('{"path":"notes.md","content":"# No');
    expect(server.requests[0]!.body.max_output_tokens).toBe(16);
  });

  it("retries a failed response with a reset, and a 429 honouring retry-after-ms", async () => {
    const server = await serve([
      errorReply(
        429,
        {
          error: {
            message: "Rate limit reached for gpt-5-mini",
            type: "tokens",
            code: "rate_limit_exceeded",
          },
        },
        { "retry-after-ms": "30" },
      ),
      replay("failed"),
      replay("text"),
    ]);
    const events = await collect(model(server).stream(ask()));
    expect(server.requests).toHaveLength(3);
    const resets = ofType(events, "reset");
    expect(resets).toHaveLength(1);
    expect(resets[0]!.reason).toContain("server_error");
    expect(text(events.slice(events.findIndex((e) => e.type === "reset")))).toBe("Hello! How can I help?");
  });

  it("gives up after maxRetries on 500s and does not retry a 400", async () => {
    const fail = errorReply(500, { error: { message: "The server had an error", type: "server_error" } });
    const server = await serve([
      fail,
      fail,
      fail,
      errorReply(400, { error: { message: "Invalid input", type: "invalid_request_error", param: "input" } }),
    ]);
    const exhausted = await collectUntilError(model(server).stream(ask()));
    expect(exhausted.error).toBeInstanceOf(ProviderError);
    expect(exhausted.error).toMatchObject({ status: 500, retryable: true, provider: "openai-responses" });
    const invalid = await collectUntilError(model(server).stream(ask()));
    expect(invalid.error).toMatchObject({ status: 400, type: "invalid_request_error", retryable: false });
    expect(server.requests).toHaveLength(4);
  });

  it("reports a disconnect, a malformed chunk and a stream without completion as retryable", async () => {
    const server = await serve([
      replay("text", { cutAfter: 5, after: "disconnect" }),
      replay("text", { replace: { 4: '{"type":"response.output_text.delta","delta":"He' } }),
      replay("text", { cutAfter: 8, after: "end" }),
    ]);
    const m = model(server, { maxRetries: 0 });
    expect((await collectUntilError(m.stream(ask()))).error).toMatchObject({
      type: "connection_error",
      retryable: true,
    });
    expect((await collectUntilError(m.stream(ask()))).error).toMatchObject({
      type: "malformed_chunk",
      retryable: true,
    });
    expect((await collectUntilError(m.stream(ask()))).error).toMatchObject({
      type: "incomplete_stream",
      retryable: true,
    });
  });

  it("stops at once on abort, and times out a stalled stream", async () => {
    const server = await serve([
      replay("text", { cutAfter: 5, after: "stall" }),
      replay("text", { cutAfter: 5, after: "stall" }),
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

  it("maps model settings, warning about what the API lacks", async () => {
    warnings.length = 0;
    const server = await serve([replay("text")]);
    await collect(
      model(server, { model: "gpt-4.1-mini" }).stream(
        ask({
          tools: [weatherTool],
          settings: {
            temperature: 0.1,
            topP: 0.5,
            maxTokens: 200,
            stop: ["END"],
            toolChoice: { name: "get_weather" },
            parallelToolCalls: true,
            responseFormat: {
              type: "json_schema",
              name: "out",
              schema: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] },
              strict: true,
            },
            extra: { truncation: "auto" },
          },
        }),
      ),
    );
    expect(server.rejected).toEqual([]);
    const body = server.requests[0]!.body;
    expect(body).toMatchObject({
      temperature: 0.1,
      top_p: 0.5,
      max_output_tokens: 200,
      tool_choice: { type: "function", name: "get_weather" },
      parallel_tool_calls: true,
      truncation: "auto",
      text: {
        format: { type: "json_schema", name: "out", strict: true, schema: { additionalProperties: false } },
      },
    });
    expect(body.stop).toBeUndefined();
    // Not a reasoning model and no reasoning asked for: no encrypted reasoning requested.
    expect(body.include).toBeUndefined();
    expect(warnings.map((w) => w.message)).toEqual([expect.stringContaining("stop sequences")]);
  });
});
