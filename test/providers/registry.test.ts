import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { UserError } from "../../src/errors.js";
import { openaiCompatible, registerProvider, resolveModel } from "../../src/providers/index.js";
import { ollamaBaseUrl } from "../../src/providers/registry.js";
import { rejectLikeOpenAI, validateChatRequest } from "./openai-chat-api.js";
import { collect, fixture, startReplayServer, streamFixture } from "./replay-server.js";

const VARIABLES = [
  "OPENAI_API_KEY",
  "OPENAI_BASE_URL",
  "ANTHROPIC_API_KEY",
  "ANTHROPIC_BASE_URL",
  "OLLAMA_HOST",
  "GROQ_API_KEY",
];
let saved: Record<string, string | undefined> = {};
beforeEach(() => {
  saved = Object.fromEntries(VARIABLES.map((name) => [name, process.env[name]]));
  for (const name of VARIABLES) delete process.env[name];
});
afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

describe("resolveModel() — provider:model-id strings", () => {
  it("builds each known provider's model from the environment", () => {
    process.env.OPENAI_API_KEY = "sk-test";
    process.env.ANTHROPIC_API_KEY = "sk-ant-test";
    expect(resolveModel("openai:gpt-4.1-mini").name).toBe("openai:gpt-4.1-mini");
    expect(resolveModel("openai-responses:gpt-5-mini").name).toBe("openai-responses:gpt-5-mini");
    expect(resolveModel("anthropic:claude-sonnet-4-5").name).toBe("anthropic:claude-sonnet-4-5");
    // Everything after the first colon is the model id.
    expect(resolveModel("ollama:qwen3:8b").name).toBe("ollama:qwen3:8b");
  });

  it("fails at construction when the key is missing, naming the variable", () => {
    expect(() => resolveModel("openai:gpt-4.1-mini")).toThrow(UserError);
    expect(() => resolveModel("openai:gpt-4.1-mini")).toThrow(/OPENAI_API_KEY/);
    expect(() => resolveModel("anthropic:claude-sonnet-4-5")).toThrow(/ANTHROPIC_API_KEY/);
    expect(() => resolveModel("groq:llama-3.3-70b-versatile")).toThrow(/GROQ_API_KEY/);
    // Local servers need no key.
    expect(() => resolveModel("ollama:qwen3")).not.toThrow();
  });

  it("names the known providers for an unknown prefix or a malformed string", () => {
    expect(() => resolveModel("mistery:model")).toThrow(UserError);
    expect(() => resolveModel("mistery:model")).toThrow(
      /known providers: openai, openai-responses, anthropic, ollama/,
    );
    expect(() => resolveModel("gpt-4.1-mini")).toThrow(/provider:model-id/);
    expect(() => resolveModel("openai:")).toThrow(UserError);
  });

  it("talks to the server OPENAI_BASE_URL points at", async () => {
    const server = await startReplayServer({
      replies: [streamFixture(fixture("openai-chat/text.jsonl"))],
      validate: (req) => validateChatRequest(req, { apiKey: "sk-env" }),
      reject: rejectLikeOpenAI,
    });
    try {
      process.env.OPENAI_API_KEY = "sk-env";
      process.env.OPENAI_BASE_URL = `${server.url}/v1`;
      const events = await collect(
        resolveModel("openai:gpt-4.1-mini").stream({
          messages: [{ role: "user", content: "hi" }],
          tools: [],
          settings: {},
        }),
      );
      expect(events.at(-1)).toEqual({ type: "finish", reason: "stop" });
      expect(server.requests[0]!.body.model).toBe("gpt-4.1-mini");
      expect(server.rejected).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it("reaches Ollama where OLLAMA_HOST says, the way Ollama reads it", async () => {
    expect(ollamaBaseUrl(undefined)).toBe("http://127.0.0.1:11434/v1");
    expect(ollamaBaseUrl("0.0.0.0")).toBe("http://127.0.0.1:11434/v1");
    expect(ollamaBaseUrl("gpu-box:9000")).toBe("http://gpu-box:9000/v1");
    expect(ollamaBaseUrl("https://ollama.example.com")).toBe("https://ollama.example.com/v1");
    expect(ollamaBaseUrl("[::1]")).toBe("http://[::1]:11434/v1");
    const server = await startReplayServer({
      replies: [streamFixture(fixture("openai-chat/compat-same-index.jsonl"))],
      validate: (req) => validateChatRequest(req, { apiKey: null, compatible: true }),
      reject: rejectLikeOpenAI,
    });
    try {
      process.env.OLLAMA_HOST = server.url.replace("http://", "");
      const events = await collect(
        resolveModel("ollama:qwen3").stream({
          messages: [{ role: "user", content: "hi" }],
          tools: [],
          settings: {},
        }),
      );
      expect(events.at(-1)).toEqual({ type: "finish", reason: "tool_calls" });
      expect(server.requests[0]!.path).toBe("/v1/chat/completions");
    } finally {
      await server.close();
    }
  });

  it("accepts providers registered at run time", () => {
    registerProvider("vllm-test", (model) =>
      openaiCompatible({ name: "vllm-test", baseURL: "http://127.0.0.1:8000/v1", model }),
    );
    expect(resolveModel("vllm-test:Qwen/Qwen3-32B").name).toBe("vllm-test:Qwen/Qwen3-32B");
    expect(() => registerProvider("Bad Name", () => resolveModel("ollama:x"))).toThrow(UserError);
  });
});
