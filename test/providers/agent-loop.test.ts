/**
 * The providers inside the real loop: an Agent with a tool, run by Runner against a local
 * server that validates every request like the real API. This proves the pinned `Model`
 * boundary end to end: tool calls out, tool results back in, reasoning replayed, usage summed.
 */

import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { Agent, handoff, Runner, ScriptedModel, tool } from "../../src/index.js";
import { MISSING_RESULT } from "../../src/model/paired-calls.js";
import { anthropic, fromAiSdk, openaiCompatible, openaiResponses } from "../../src/providers/index.js";
import { rejectLikeAnthropic, validateMessagesRequest } from "./anthropic-api.js";
import { rejectLikeOpenAI, validateChatRequest } from "./openai-chat-api.js";
import { validateResponsesRequest } from "./openai-responses-api.js";
import {
  chatChunk,
  fixture,
  type ReplayServer,
  startReplayServer,
  streamFixture,
  typedFrame,
} from "./replay-server.js";

const servers: ReplayServer[] = [];
const savedEnv = { key: process.env.OPENAI_API_KEY, url: process.env.OPENAI_BASE_URL };
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  for (const [name, value] of [
    ["OPENAI_API_KEY", savedEnv.key],
    ["OPENAI_BASE_URL", savedEnv.url],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

const seen: unknown[] = [];
const getWeather = tool({
  name: "get_weather",
  description: "Current weather for a city.",
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => {
    seen.push(city);
    return `${city}: 18°C, light rain`;
  },
});
const now = tool({
  name: "now",
  description: "The current time.",
  parameters: z.object({}),
  execute: async () => "2025-06-01T10:00:00Z",
});

/** A Chat Completions replay server that "openai:…" model strings reach through the env. */
async function serveChat(...fixtures: string[]) {
  const server = await startReplayServer({
    replies: fixtures.map((name) => streamFixture(fixture(name))),
    validate: (req) => validateChatRequest(req),
    reject: rejectLikeOpenAI,
  });
  servers.push(server);
  process.env.OPENAI_API_KEY = "test-key";
  process.env.OPENAI_BASE_URL = `${server.url}/v1`;
  return server;
}

describe("providers in the agent loop", () => {
  it('runs new Agent({ model: "openai:gpt-4.1-mini" }) through a tool call to an answer', async () => {
    const server = await serveChat("openai-chat/tool-call.jsonl", "openai-chat/text.jsonl");
    seen.length = 0;
    const agent = new Agent({
      name: "weather",
      model: "openai:gpt-4.1-mini",
      instructions: "Be brief.",
      tools: [getWeather],
    });
    const result = await Runner.run(agent, "Weather in Paris?");
    expect(server.rejected).toEqual([]);
    expect(result.output).toBe("Hello! How can I help?");
    expect(seen).toEqual(["Paris"]);
    expect(result.usage).toMatchObject({ inputTokens: 82 + 1234, outputTokens: 17 + 9 });
    const second = server.requests[1]!.body.messages;
    expect(second.map((m: any) => m.role)).toEqual(["system", "user", "assistant", "tool"]);
    expect(second[3]).toMatchObject({
      tool_call_id: "call_Vq3kT8mZ2nXr5LpA7wYb1cDe",
      content: "Paris: 18°C, light rain",
    });
  });

  it("sends OpenAI a valid request after a handoff filter drops tool results, and for an input with a result but no call", async () => {
    // The filter handoffs.md shows: the calls stay, their results go. OpenAI answers 400 to
    // an assistant tool call with no tool message after it.
    const server = await serveChat("openai-chat/text.jsonl", "openai-chat/text.jsonl");
    const billing = new Agent({ name: "billing", model: "openai:gpt-4.1-mini", tools: [now] });
    const triage = new Agent({
      name: "triage",
      model: new ScriptedModel([
        {
          toolCalls: [
            { id: "t1", name: "now", args: {} },
            { id: "t2", name: "transfer_to_billing", args: {} },
          ],
        },
      ]),
      tools: [now],
      handoffs: [handoff(billing, { inputFilter: (messages) => messages.filter((m) => m.role !== "tool") })],
    });
    const handed = await Runner.run(triage, "I was double charged");
    expect(server.rejected).toEqual([]);
    expect(handed.output).toBe("Hello! How can I help?");
    const sent = server.requests[0]!.body.messages;
    expect(sent.map((m: any) => m.role)).toEqual(["user", "assistant", "tool", "tool"]);
    expect(sent[2]).toMatchObject({ tool_call_id: "t1", content: MISSING_RESULT });

    // A transcript whose tool result lost its call (an untrusted one: it still taints the run).
    const orphan = await Runner.run(billing, [
      { role: "user", content: "what time is it?" },
      { role: "tool", toolCallId: "gone", name: "now", content: "10:00", isError: false, untrusted: true },
      { role: "user", content: "and now?" },
    ]);
    expect(server.rejected).toEqual([]);
    expect(server.requests[1]!.body.messages.map((m: any) => m.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "user",
    ]);
    expect(orphan.messages[1]).toMatchObject({
      role: "assistant",
      toolCalls: [{ id: "gone", name: "now", args: {} }],
    });
    expect(orphan.messages[2]).toMatchObject({ role: "tool", toolCallId: "gone", untrusted: true });
  });

  it("does not run calls cut off by the length limit, and tells the model why", async () => {
    const server = await serveChat("openai-chat/length.jsonl", "openai-chat/text.jsonl");
    let wrote = false;
    const writeFile = tool({
      name: "write_file",
      description: "Write a file.",
      parameters: z.object({ path: z.string(), content: z.string() }),
      execute: async () => {
        wrote = true;
        return "ok";
      },
    });
    const result = await Runner.run(
      new Agent({ name: "writer", model: "openai:gpt-4.1-mini", tools: [writeFile] }),
      "Write notes.",
    );
    expect(server.rejected).toEqual([]);
    expect(wrote).toBe(false);
    expect(result.toolCalls[0]!.error?.kind).toBe("truncated_arguments");
    const toolMessage = server.requests[1]!.body.messages.find((m: any) => m.role === "tool");
    expect(toolMessage.content).toMatch(/^Tool error: /);
  });

  it('sends DeepSeek a tool-call turn\'s reasoning_content back, with "deepseek:…"', async () => {
    // DeepSeek's thinking mode answers 400 when a turn with tool calls comes back without it.
    const server = await startReplayServer({
      replies: [
        streamFixture([
          chatChunk({ role: "assistant", reasoning_content: "The user wants " }),
          chatChunk({ reasoning_content: "the weather: call get_weather." }),
          chatChunk({
            tool_calls: [
              {
                index: 0,
                id: "call_0",
                type: "function",
                function: { name: "get_weather", arguments: '{"city":"Paris"}' },
              },
            ],
          }),
          chatChunk({}, "tool_calls"),
          "[DONE]",
        ]),
        streamFixture([chatChunk({ content: "18°C in Paris." }, "stop"), "[DONE]"]),
      ],
      validate: (req) => {
        const problems = validateChatRequest(req, { compatible: true });
        for (const message of req.body.messages ?? []) {
          if (
            message.role === "assistant" &&
            message.tool_calls &&
            typeof message.reasoning_content !== "string"
          )
            problems.push('The "reasoning_content" in the thinking mode must be passed back to the API.');
        }
        return problems;
      },
      reject: rejectLikeOpenAI,
    });
    servers.push(server);
    const saved = { key: process.env.DEEPSEEK_API_KEY, url: process.env.DEEPSEEK_BASE_URL };
    process.env.DEEPSEEK_API_KEY = "test-key";
    process.env.DEEPSEEK_BASE_URL = `${server.url}/v1`;
    try {
      const agent = new Agent({ name: "weather", model: "deepseek:deepseek-chat", tools: [getWeather] });
      const result = await Runner.run(agent, "Weather in Paris?");
      expect(server.rejected).toEqual([]);
      expect(result.output).toBe("18°C in Paris.");
      const assistant = server.requests[1]!.body.messages.find((m: any) => m.role === "assistant");
      expect(assistant.reasoning_content).toBe("The user wants the weather: call get_weather.");
    } finally {
      for (const [name, value] of [
        ["DEEPSEEK_API_KEY", saved.key],
        ["DEEPSEEK_BASE_URL", saved.url],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it("sends Gemini's thought signature back with its call (OpenAI-compatible endpoint)", async () => {
    const signature = { google: { thought_signature: "CiQB0e2Kb5pc" } };
    const server = await startReplayServer({
      replies: [
        streamFixture([
          chatChunk(
            {
              role: "assistant",
              tool_calls: [
                {
                  extra_content: signature,
                  function: { arguments: '{"city":"Sydney"}', name: "get_weather" },
                  id: "function-call-1",
                  type: "function",
                },
              ],
            },
            "tool_calls",
          ),
          "[DONE]",
        ]),
        streamFixture([chatChunk({ content: "Sunny in Sydney." }, "stop"), "[DONE]"]),
      ],
      validate: (req) => {
        const problems = validateChatRequest(req, { compatible: true, apiKey: null });
        for (const message of req.body.messages ?? []) {
          const first = message.tool_calls?.[0];
          if (first && first.extra_content?.google?.thought_signature === undefined)
            problems.push(`Function call \`${first.function.name}\` is missing a \`thought_signature\`.`);
        }
        return problems;
      },
      reject: rejectLikeOpenAI,
    });
    servers.push(server);
    const model = openaiCompatible({
      name: "gemini",
      baseURL: `${server.url}/v1`,
      model: "gemini-3-pro-preview",
    });
    const result = await Runner.run(
      new Agent({ name: "weather", model, tools: [getWeather] }),
      "Weather in Sydney?",
    );
    expect(server.rejected).toEqual([]);
    expect(result.output).toBe("Sunny in Sydney.");
    const assistant = server.requests[1]!.body.messages.find((m: any) => m.role === "assistant");
    expect(assistant.tool_calls[0].extra_content).toEqual(signature);
  });

  it("replays Anthropic thinking intact on the next turn of a tool loop", async () => {
    const server = await startReplayServer({
      replies: [
        streamFixture(fixture("anthropic/thinking.jsonl"), { frame: typedFrame }),
        streamFixture(fixture("anthropic/text.jsonl"), { frame: typedFrame }),
      ],
      validate: validateMessagesRequest,
      reject: rejectLikeAnthropic,
    });
    servers.push(server);
    const model = anthropic({
      model: "claude-sonnet-4-5",
      apiKey: "test-key",
      baseURL: server.url,
      onWarning: () => {},
    });
    const agent = new Agent({
      name: "thinker",
      model,
      tools: [now],
      modelSettings: { reasoning: { budgetTokens: 2048 } },
    });
    const result = await Runner.run(agent, "What time is it?");
    expect(server.rejected).toEqual([]);
    expect(result.output).toBe("Hello! How can I help?");
    const replayed = server.requests[1]!.body.messages[1].content;
    expect(replayed.map((b: any) => b.type)).toEqual(["thinking", "redacted_thinking", "text", "tool_use"]);
    expect(replayed[0].signature).toBe("EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds");
  });

  it("carries Responses reasoning items into the next turn of a tool loop", async () => {
    const server = await startReplayServer({
      replies: [
        streamFixture(fixture("openai-responses/reasoning-tool-call.jsonl"), { frame: typedFrame }),
        streamFixture(fixture("openai-responses/text.jsonl"), { frame: typedFrame }),
      ],
      validate: validateResponsesRequest,
      reject: rejectLikeOpenAI,
    });
    servers.push(server);
    const model = openaiResponses({
      model: "gpt-5-mini",
      apiKey: "test-key",
      baseURL: `${server.url}/v1`,
      onWarning: () => {},
    });
    const agent = new Agent({
      name: "weather",
      model,
      tools: [getWeather],
      modelSettings: { reasoning: { effort: "low" } },
    });
    const result = await Runner.run(agent, "Weather in Paris?");
    expect(server.rejected).toEqual([]);
    expect(result.output).toBe("Hello! How can I help?");
    const input = server.requests[1]!.body.input;
    expect(input.map((item: any) => item.type ?? item.role)).toEqual([
      "user",
      "reasoning",
      "function_call",
      "function_call_output",
    ]);
    expect(input[1].encrypted_content).toBe("gAAAAABooPDEs3cr3tReasoningBlobQk9XyZ1Tq2w==");
    expect(input[3]).toMatchObject({
      call_id: "call_Wm9kX2V4YW1wbGVfY2FsbF8x",
      output: "Paris: 18°C, light rain",
    });
  });

  it("runs an AI SDK model through a tool loop", async () => {
    const lines = (name: string) => fixture(`ai-sdk/${name}.jsonl`).map((line) => JSON.parse(line));
    const mock = new MockLanguageModelV3({
      provider: "anthropic.messages",
      modelId: "claude-sonnet-4-5",
      doStream: [
        { stream: convertArrayToReadableStream(lines("v3-reasoning-tools")) },
        { stream: convertArrayToReadableStream(lines("v3-text")) },
      ],
    });
    seen.length = 0;
    const agent = new Agent({
      name: "weather",
      model: fromAiSdk(mock, { onWarning: () => {} }),
      tools: [getWeather],
    });
    const result = await Runner.run(agent, "Weather in Oslo and Rome?");
    expect(result.output).toBe("Hello! How can I help?");
    expect(seen).toEqual(["Oslo", "Rome"]);
    const prompt = mock.doStreamCalls[1]!.prompt;
    expect(prompt.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    const replayed = prompt[1]!;
    expect(JSON.stringify(replayed.content)).toContain("ErUBCkYIBRgCIkD2c2lnbmF0dXJl");
  });
});
