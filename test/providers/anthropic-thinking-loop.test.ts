/**
 * Anthropic runs a whole assistant turn, tool loop included, in one thinking mode: with thinking
 * on, the assistant message that opened the loop a request continues must start with a signed
 * thinking block. A loop opened by another provider (a fallback turn, a handoff) or built by hand
 * has none, and the API answers 400 ("Expected `thinking` or `redacted_thinking`, but found
 * `tool_use`"). For such a request thinking is off, with a warning. Against a local server that
 * applies that rule.
 */
import { Agent, type Message, type RunEvent, Runner, tool } from "quiver-agents";
import { anthropic, openai } from "quiver-agents/providers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { rejectLikeAnthropic, validateMessagesRequest } from "./anthropic-api.js";
import { rejectLikeOpenAI, validateChatRequest } from "./openai-chat-api.js";
import { collect, errorReply, fixture, replayServers, streamFixture, typedFrame } from "./replay-server.js";
import { weatherTool } from "./transcripts.js";

const openaiServer = replayServers({ validate: (req) => validateChatRequest(req), reject: rejectLikeOpenAI });
const anthropicServer = replayServers({ validate: validateMessagesRequest, reject: rejectLikeAnthropic });

const answer = () => streamFixture(fixture("anthropic/text.jsonl"), { frame: typedFrame });
const claude = (url: string) =>
  anthropic({
    model: "claude-sonnet-4-5",
    apiKey: "test-key",
    baseURL: url,
    maxRetries: 0,
    promptCaching: false,
    onWarning: () => {},
  });

const SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds";

describe("anthropic() with extended thinking, continuing a tool loop", () => {
  it("after a fallback turn answered with a tool call, sends the next request without thinking and says why", async () => {
    const ant = await anthropicServer([
      errorReply(529, { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }),
      answer(),
    ]);
    const gpt = await openaiServer([streamFixture(fixture("openai-chat/tool-call.jsonl"))]);
    const ran: string[] = [];
    const getWeather = tool({
      name: "get_weather",
      description: "Weather for a city.",
      parameters: z.object({ city: z.string() }),
      execute: ({ city }) => {
        ran.push(city);
        return `18C in ${city}`;
      },
    });
    const agent = new Agent({
      name: "weather",
      model: [
        claude(ant.url),
        openai({ model: "gpt-4.1", apiKey: "test-key", baseURL: `${gpt.url}/v1`, maxRetries: 0 }),
      ],
      modelSettings: { reasoning: { effort: "low" } },
      tools: [getWeather],
    });
    const handle = Runner.stream(agent, "Weather in Paris?");
    const events: RunEvent[] = [];
    for await (const event of handle) events.push(event);
    const result = await handle.result();

    expect(result).toMatchObject({ stopReason: "completed", output: "Hello! How can I help?" });
    expect(ran).toEqual(["Paris"]);
    expect(ant.rejected).toEqual([]);
    expect(ant.requests[0]!.body.thinking).toEqual({ type: "enabled", budget_tokens: 1024 });
    const second = ant.requests[1]!.body;
    expect(second).not.toHaveProperty("thinking");
    expect(second.messages.map((m: any) => m.content.map((b: any) => b.type))).toEqual([
      ["text"],
      ["tool_use"],
      ["tool_result"],
    ]);
    expect(events.filter((e) => e.type === "warning").map((e) => e.message)).toContainEqual(
      expect.stringMatching(/^extended thinking was not sent for this request: it continues a tool loop/),
    );
  });

  it("keeps thinking when the loop began with Claude's signed thinking, though a later step of it came from another model", async () => {
    const server = await anthropicServer([answer()]);
    const messages: Message[] = [
      { role: "user", content: "Weather in Paris and Rome?" },
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "Two cities.", providerData: { anthropic: { signature: SIGNATURE } } },
        ],
        toolCalls: [{ id: "toolu_01A", name: "get_weather", args: { city: "Paris" } }],
      },
      { role: "tool", toolCallId: "toolu_01A", name: "get_weather", content: "18C", isError: false },
      // The next step came from GPT after a fallback: no thinking block of its own.
      {
        role: "assistant",
        content: "",
        toolCalls: [{ id: "call_B", name: "get_weather", args: { city: "Rome" } }],
      },
      { role: "tool", toolCallId: "call_B", name: "get_weather", content: "24C", isError: false },
    ];
    const events = await collect(
      claude(server.url).stream({
        messages,
        tools: [weatherTool],
        settings: { reasoning: { effort: "low" } },
      }),
    );
    expect(server.rejected).toEqual([]);
    expect(server.requests[0]!.body.thinking).toEqual({ type: "enabled", budget_tokens: 1024 });
    expect(events.filter((e) => e.type === "warning")).toEqual([]);
  });

  it("keeps thinking for a new question after a loop that had none, and drops it for a hand-built loop", async () => {
    const server = await anthropicServer([answer(), answer()]);
    const loop: Message[] = [
      { role: "user", content: "Weather in Paris?" },
      {
        role: "assistant",
        content: "",
        toolCalls: [{ id: "call_A", name: "get_weather", args: { city: "Paris" } }],
      },
      { role: "tool", toolCallId: "call_A", name: "get_weather", content: "18C", isError: false },
    ];
    const settings = { reasoning: { effort: "low" as const } };
    const model = claude(server.url);
    await collect(
      model.stream({
        messages: [
          ...loop,
          { role: "assistant", content: "18C." },
          { role: "user", content: "And tomorrow?" },
        ],
        tools: [weatherTool],
        settings,
      }),
    );
    expect(server.requests[0]!.body.thinking).toEqual({ type: "enabled", budget_tokens: 1024 });
    const events = await collect(model.stream({ messages: loop, tools: [weatherTool], settings }));
    expect(server.requests[1]!.body).not.toHaveProperty("thinking");
    expect(events.filter((e) => e.type === "warning")).toHaveLength(1);
    expect(server.rejected).toEqual([]);
  });
});
