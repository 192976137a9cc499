/**
 * `openai()` and `openaiCompatible()`: Chat Completions with streaming, for OpenAI and for
 * every server that speaks its wire format.
 */
import { UserError } from "../../errors.js";
import type { Model } from "../../model/types.js";
import { errorFromResponse } from "../error-responses.js";
import {
  endpoint,
  type HttpProviderOptions,
  type HttpSettings,
  requireApiKey,
  requireModel,
  resolveHttpSettings,
  withHeaders,
} from "../provider-options.js";
import { streamTurn, type WireFormat } from "../streaming-turn.js";
import { type ChatDialect, encodeChatBody } from "./request.js";
import { ChatStreamDecoder } from "./stream.js";

export type OpenAIOptions = HttpProviderOptions & {
  /** The model id, e.g. `"gpt-4.1-mini"`. */
  model: string;
  /** Default: the `OPENAI_API_KEY` environment variable. */
  apiKey?: string;
  /** Including `/v1`. Default: `OPENAI_BASE_URL`, else `https://api.openai.com/v1`. */
  baseURL?: string;
  organization?: string;
  project?: string;
};

/**
 * An OpenAI model through the Chat Completions API (streaming, usage included).
 *
 * @example
 * import { openai } from "quiver-agents/providers";
 * const agent = new Agent({ name: "helper", model: openai({ model: "gpt-4.1-mini" }) });
 */
export function openai(options: OpenAIOptions): Model {
  requireModel("openai", options.model);
  const apiKey = requireApiKey("openai", options.apiKey, "OPENAI_API_KEY");
  const baseURL = options.baseURL ?? process.env.OPENAI_BASE_URL ?? "https://api.openai.com/v1";
  const headers = openAiHeaders(apiKey, options);
  return chatModel(
    `openai:${options.model}`,
    resolveHttpSettings("openai", options),
    endpoint(baseURL, "/chat/completions"),
    headers,
    {
      provider: "openai",
      model: options.model,
      maxTokensField: "max_completion_tokens",
      strictTools: true,
      replayReasoningContent: false,
    },
  );
}

export type OpenAICompatibleOptions = HttpProviderOptions & {
  /** A short name for the server (`"ollama"`, `"vllm"`, `"openrouter"`): model name prefix, error prefix, `providerData` key. */
  name: string;
  /** Including `/v1`, e.g. `http://127.0.0.1:11434/v1`. */
  baseURL: string;
  model: string;
  /** Sent as `Authorization: Bearer …` when given; local servers usually need none. */
  apiKey?: string;
  /** Default `"max_tokens"`, which every compatible server knows. */
  maxTokensField?: "max_tokens" | "max_completion_tokens";
  /** Send `strict: true` tools in OpenAI's strict form (only for servers that support it). Default false. */
  strictTools?: boolean;
  /** Send the server's own reasoning back as `reasoning_content` (DeepSeek thinking mode with tools). Default false. */
  replayReasoningContent?: boolean;
};

/**
 * Any server with an OpenAI-style `/chat/completions` endpoint: Ollama, vLLM, llama.cpp
 * server, LM Studio, OpenRouter, Groq, DeepSeek…
 *
 * @example
 * import { openaiCompatible } from "quiver-agents/providers";
 * const local = openaiCompatible({ name: "ollama", baseURL: "http://127.0.0.1:11434/v1", model: "qwen3" });
 */
export function openaiCompatible(options: OpenAICompatibleOptions): Model {
  if (typeof options.name !== "string" || options.name.trim() === "") {
    throw new UserError('openaiCompatible: `name` is required (e.g. "ollama")');
  }
  if (typeof options.baseURL !== "string" || options.baseURL.trim() === "") {
    throw new UserError(
      `openaiCompatible(${options.name}): \`baseURL\` is required (e.g. http://127.0.0.1:11434/v1)`,
    );
  }
  requireModel(options.name, options.model);
  const headers = openAiHeaders(options.apiKey, options);
  return chatModel(
    `${options.name}:${options.model}`,
    resolveHttpSettings(options.name, options),
    endpoint(options.baseURL, "/chat/completions"),
    headers,
    {
      provider: options.name,
      model: options.model,
      maxTokensField: options.maxTokensField ?? "max_tokens",
      strictTools: options.strictTools ?? false,
      replayReasoningContent: options.replayReasoningContent ?? false,
    },
  );
}

function chatModel(
  name: string,
  settings: HttpSettings,
  url: string,
  headers: Record<string, string>,
  dialect: ChatDialect,
): Model {
  const wire: WireFormat = {
    encode: (request, warn) => ({ url, headers, body: encodeChatBody(request, dialect, warn) }),
    decoder: () => new ChatStreamDecoder(dialect.provider, dialect.replayReasoningContent),
    errorFromResponse: (status, responseHeaders, body) =>
      errorFromResponse(dialect.provider, status, responseHeaders, body),
  };
  return { name, stream: (request) => streamTurn(wire, settings, request) };
}

export function openAiHeaders(
  apiKey: string | undefined,
  options: { organization?: string; project?: string; headers?: Record<string, string> },
): Record<string, string> {
  const headers: Record<string, string> = { "content-type": "application/json", accept: "text/event-stream" };
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  if (options.organization) headers["openai-organization"] = options.organization;
  if (options.project) headers["openai-project"] = options.project;
  return withHeaders(headers, options.headers);
}
