/**
 * Model fallback against real local HTTP servers replaying each provider's wire format: one
 * answers 503, the next 429 with Retry-After, the next hangs, the next closes the connection
 * mid-stream, and the last (Anthropic's Messages API) answers. Each provider makes its own
 * retries first; the turn then moves down the chain, and no tool of a failed turn runs.
 */
import {
  Agent,
  fallback,
  fallsOver,
  ProviderError,
  type RunEvent,
  Runner,
  ScriptedModel,
  tool,
} from "quiver-agents";
import { anthropic, openai } from "quiver-agents/providers";
import { MemoryStore } from "quiver-agents/store";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { rejectLikeAnthropic, validateMessagesRequest } from "./anthropic-api.js";
import { rejectLikeOpenAI, validateChatRequest } from "./openai-chat-api.js";
import {
  closedAfterEach,
  errorReply,
  fixture,
  type Reply,
  startReplayServer,
  streamFixture,
  typedFrame,
} from "./replay-server.js";

const servers = closedAfterEach();

async function openaiServer(replies: Reply[]) {
  const server = await startReplayServer({
    replies,
    validate: (r) => validateChatRequest(r, {}),
    reject: rejectLikeOpenAI,
  });
  servers.push(server);
  return server;
}

function chat(url: string, model: string, options: Partial<Parameters<typeof openai>[0]> = {}) {
  return openai({
    model,
    apiKey: "test-key",
    baseURL: `${url}/v1`,
    maxRetries: 1,
    retryBackoff: { initialMs: 5, maxMs: 20 },
    ...options,
  });
}

function weatherAgent(model: ConstructorParameters<typeof Agent>[0]["model"], ran: string[]) {
  const getWeather = tool({
    name: "get_weather",
    description: "Weather for a city.",
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }, ctx) => {
      ran.push(`${ctx.toolCallId}:${city}`);
      return `18C in ${city}`;
    },
  });
  return new Agent({ name: "weather", model, tools: [getWeather] });
}

describe("a fallback chain of real providers", () => {
  it("503, 429 with Retry-After, a hang, a cut stream: each provider retries, then the turn moves on; the last answers", async () => {
    const unavailable = errorReply(503, {
      error: { message: "The server is overloaded", type: "server_error" },
    });
    const limited = errorReply(
      429,
      { error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } },
      { "retry-after": "1" },
    );
    const s1 = await openaiServer([
      unavailable,
      unavailable,
      streamFixture(fixture("openai-chat/text.jsonl")),
    ]);
    const s2 = await openaiServer([limited, limited]);
    const stall = streamFixture(fixture("openai-chat/text.jsonl"), { cutAfter: 1, after: "stall" });
    const s3 = await openaiServer([stall, stall]);
    const cut = streamFixture(fixture("openai-chat/tool-call.jsonl"), { cutAfter: 3, after: "disconnect" });
    const s4 = await openaiServer([cut, cut]);
    const s5 = await startReplayServer({
      replies: [streamFixture(fixture("anthropic/tool-use.jsonl"), { frame: typedFrame })],
      validate: validateMessagesRequest,
      reject: rejectLikeAnthropic,
    });
    servers.push(s5);

    const ran: string[] = [];
    const agent = weatherAgent(
      [
        chat(s1.url, "gpt-4.1-mini"),
        chat(s2.url, "gpt-4.1"),
        chat(s3.url, "gpt-4o", { timeoutMs: 400 }),
        chat(s4.url, "gpt-4o-mini"),
        anthropic({ model: "claude-sonnet-4-5", apiKey: "test-key", baseURL: s5.url, maxRetries: 0 }),
      ],
      ran,
    );
    const handle = Runner.stream(agent, "What's the weather in Paris?");
    const events: RunEvent[] = [];
    for await (const event of handle) events.push(event);
    const result = await handle.result();

    expect(result).toMatchObject({ stopReason: "completed", output: "Hello! How can I help?" });
    const fallbacks = events.filter((e) => e.type === "model_fallback");
    expect(fallbacks.map((e) => [e.from, e.to, e.turn])).toEqual([
      ["openai:gpt-4.1-mini", "openai:gpt-4.1", 1],
      ["openai:gpt-4.1", "openai:gpt-4o", 1],
      ["openai:gpt-4o", "openai:gpt-4o-mini", 1],
      ["openai:gpt-4o-mini", "anthropic:claude-sonnet-4-5", 1],
    ]);
    expect(fallbacks[0]!.reason).toMatch(/503/);
    expect(fallbacks[1]!.reason).toMatch(/429/);
    // Each provider made its own retry before the turn moved on (the 429 waited the 1 s it asked
    // for), except the one that hung: with a model waiting, a hung server is not asked again.
    expect([s1, s2, s3, s4].map((s) => s.requests.length)).toEqual([3, 2, 1, 2]);
    // Only the call of the model that answered ran: the cut stream's half-sent call never did.
    expect(ran).toEqual(["toolu_01T1x1fJ34qAmk2tNTrN7Up6:Paris"]);
    const turns = events.filter((e) => e.type === "turn_completed");
    expect(turns.map((e) => e.model)).toEqual(["anthropic:claude-sonnet-4-5", undefined]);
    const started = events.filter((e) => e.type === "turn_started");
    expect(started.map((e) => e.model)).toEqual(["openai:gpt-4.1-mini", "openai:gpt-4.1-mini"]);
    // Usage per model: turn 1's tokens are Anthropic's, turn 2's OpenAI's.
    expect(turns[0]!.usage).toMatchObject({ inputTokens: 472 });
    expect(turns[1]!.usage).toMatchObject({ inputTokens: 1234 });
    // The text the cut stream sent before it failed is not in the transcript.
    expect(result.messages.filter((m) => m.role === "assistant")).toHaveLength(2);
  }, 30_000);

  it("a server asking to wait longer than a moment is not waited for while another model can answer", async () => {
    const limited = errorReply(
      429,
      { error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } },
      { "retry-after": "20" },
    );
    const s1 = await openaiServer([limited, limited]);
    const s2 = await openaiServer([streamFixture(fixture("openai-chat/text.jsonl"))]);
    const agent = weatherAgent([chat(s1.url, "gpt-4.1"), chat(s2.url, "gpt-4.1-mini")], []);
    const started = performance.now();
    const handle = Runner.stream(agent, "Hi");
    const fallbacks: string[] = [];
    for await (const event of handle) if (event.type === "model_fallback") fallbacks.push(event.reason);
    expect((await handle.result()).output).toBe("Hello! How can I help?");
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(s1.requests).toHaveLength(1);
    expect(fallbacks[0]).toMatch(/retry after 20 s, and another model is waiting to answer: not retried/);

    // The last model of a chain has nobody to hand over to: it waits as asked (up to maxRetryAfterMs).
    const s3 = await openaiServer([limited]);
    const alone = weatherAgent([chat(s3.url, "gpt-4.1", { maxRetryAfterMs: 5_000 })], []);
    const error = await Runner.run(alone, "Hi").catch((e: unknown) => e);
    expect(String(error)).toMatch(/longer than maxRetryAfterMs 5000 ms: not retried/);
  });

  it("a turn parked for approval after a fallback closes on resume naming the model that answered", async () => {
    const unavailable = errorReply(503, { error: { message: "overloaded", type: "server_error" } });
    const s1 = await openaiServer([
      unavailable,
      unavailable,
      streamFixture(fixture("openai-chat/text.jsonl")),
    ]);
    const s2 = await startReplayServer({
      replies: [streamFixture(fixture("anthropic/tool-use.jsonl"), { frame: typedFrame })],
      validate: validateMessagesRequest,
      reject: rejectLikeAnthropic,
    });
    servers.push(s2);
    const ran: string[] = [];
    const getWeather = tool({
      name: "get_weather",
      description: "Weather for a city.",
      parameters: z.object({ city: z.string() }),
      needsApproval: true,
      execute: async ({ city }) => {
        ran.push(city);
        return `18C in ${city}`;
      },
    });
    const agent = new Agent({
      name: "weather",
      model: [
        chat(s1.url, "gpt-4.1-mini"),
        anthropic({ model: "claude-sonnet-4-5", apiKey: "test-key", baseURL: s2.url, maxRetries: 0 }),
      ],
      tools: [getWeather],
    });
    const store = new MemoryStore();
    const parked = await Runner.run(agent, "What's the weather in Paris?", { store });
    expect(parked.stopReason).toBe("awaiting_approval");
    await Runner.decide(store, parked.runId, parked.pending![0]!.id, true);
    const done = await Runner.resume(agent, parked.runId, { store }).result();
    expect(done.output).toBe("Hello! How can I help?");
    expect(ran).toEqual(["Paris"]);

    const log = await store.read(parked.runId);
    const completed = log.filter((e) => e.type === "turn_completed");
    expect(completed[0]).toMatchObject({
      turn: 1,
      model: "anthropic:claude-sonnet-4-5",
      finish: "tool_calls",
      usage: { inputTokens: 472 },
    });
    expect(completed[1]).toMatchObject({ turn: 2, usage: { inputTokens: 1234 } });
    expect(completed[1]!.model).toBeUndefined();
    // Each usage event names the model whose tokens they are.
    expect(log.filter((e) => e.type === "usage").map((e) => e.model)).toEqual([
      "anthropic:claude-sonnet-4-5",
      "openai:gpt-4.1-mini",
    ]);
  });

  it("a 400 request error does not fall over unless `on` says so", async () => {
    const bad = errorReply(400, { error: { message: "Invalid 'messages'", type: "invalid_request_error" } });
    const s1 = await openaiServer([bad]);
    const s2 = await openaiServer([streamFixture(fixture("openai-chat/text.jsonl"))]);
    const agent = weatherAgent([chat(s1.url, "gpt-4.1-mini"), chat(s2.url, "gpt-4.1")], []);
    await expect(Runner.run(agent, "hi")).rejects.toMatchObject({ name: "ProviderError", status: 400 });
    expect(s2.requests).toHaveLength(0);

    const s3 = await openaiServer([bad]);
    const s4 = await openaiServer([streamFixture(fixture("openai-chat/text.jsonl"))]);
    const anyError = fallback(chat(s3.url, "gpt-4.1-mini"), chat(s4.url, "gpt-4.1"), {
      on: (failure) => "error" in failure && failure.error instanceof ProviderError,
    });
    const result = await Runner.run(weatherAgent(anyError, []), "hi");
    expect(result.output).toBe("Hello! How can I help?");
  });

  it("OpenAI's 403 model_not_found (a model the project may not use) falls over; the error keeps the API's code", async () => {
    const noAccess = errorReply(403, {
      error: {
        message: "Project `proj_abc` does not have access to model `gpt-5`",
        type: "invalid_request_error",
        param: null,
        code: "model_not_found",
      },
    });
    const s1 = await openaiServer([noAccess]);
    const s2 = await openaiServer([streamFixture(fixture("openai-chat/text.jsonl"))]);
    const events: RunEvent[] = [];
    const handle = Runner.stream(weatherAgent([chat(s1.url, "gpt-5"), chat(s2.url, "gpt-4.1")], []), "hi");
    for await (const event of handle) events.push(event);
    expect((await handle.result()).output).toBe("Hello! How can I help?");
    expect(s1.requests).toHaveLength(1); // a 403 is not retried
    expect(events.find((e) => e.type === "model_fallback")).toMatchObject({
      from: "openai:gpt-5",
      to: "openai:gpt-4.1",
      reason: expect.stringContaining("does not have access to model"),
    });

    // The code is on the ProviderError, so an `on` rule matches it instead of the message.
    const overflow = errorReply(400, {
      error: {
        message: "This model's maximum context length is 128000 tokens.",
        type: "invalid_request_error",
        param: "messages",
        code: "context_length_exceeded",
      },
    });
    const s3 = await openaiServer([overflow]);
    const alone = Runner.run(weatherAgent(chat(s3.url, "gpt-4.1-mini"), []), "hi");
    await expect(alone).rejects.toMatchObject({
      name: "ProviderError",
      status: 400,
      type: "invalid_request_error",
      code: "context_length_exceeded",
    });
    const s4 = await openaiServer([overflow]);
    const s5 = await openaiServer([streamFixture(fixture("openai-chat/text.jsonl"))]);
    const longer = fallback(chat(s4.url, "gpt-4.1-mini"), chat(s5.url, "gpt-4.1"), {
      on: (f) =>
        fallsOver(f) ||
        ("error" in f && f.error instanceof ProviderError && f.error.code === "context_length_exceeded"),
    });
    expect((await Runner.run(weatherAgent(longer, []), "hi")).output).toBe("Hello! How can I help?");
  });

  it("a content-filter refusal moves on only when `on` accepts it; what the refusing model said never shows", async () => {
    const refuse = new ScriptedModel([{ text: "I can't", finish: "content_filter" }]);
    const answer = new ScriptedModel([{ text: "Here you go" }]);
    const events: RunEvent[] = [];
    const chain = fallback(refuse, answer, { on: (f) => "contentFilter" in f || fallsOver(f) });
    const handle = Runner.stream(weatherAgent(chain, []), "hi");
    for await (const event of handle) events.push(event);
    expect((await handle.result()).output).toBe("Here you go");
    expect(events.filter((e) => e.type === "text_delta").map((e) => e.delta)).toEqual(["Here you go"]);
    expect(events.find((e) => e.type === "model_fallback")).toMatchObject({ reason: /content filter/ });

    const plain = await Runner.run(
      weatherAgent(fallback(new ScriptedModel([{ text: "I can't", finish: "content_filter" }]), answer), []),
      "hi",
    );
    expect(plain.output).toBe("I can't");
  });
});
