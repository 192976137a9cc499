/**
 * Model strings: `"provider:model-id"` → a `Model`, configured from the usual environment
 * variables. This is what `new Agent({ model: "openai:gpt-4.1-mini" })` goes through.
 */
import { UserError } from "../errors.js";
import type { Model } from "../model/types.js";
import { anthropic } from "./anthropic/model.js";
import { type OpenAICompatibleOptions, openai, openaiCompatible } from "./openai/model.js";
import { openaiResponses } from "./openai-responses/model.js";
import { requireApiKey } from "./provider-options.js";

/** Makes the model for the part after the first `:` (which may itself contain colons: `ollama:qwen3:8b`). */
export type ModelFactory = (modelId: string) => Model;

/** A compatible server whose key (if any) and address come from the environment. */
function compatible(
  name: string,
  defaultBaseUrl: string,
  urlVariable: string,
  keyVariable?: string,
  extra: Partial<OpenAICompatibleOptions> = {},
): ModelFactory {
  return (model) =>
    openaiCompatible({
      name,
      model,
      baseURL: process.env[urlVariable] || defaultBaseUrl,
      ...(keyVariable ? { apiKey: requireApiKey(name, undefined, keyVariable) } : {}),
      ...extra,
    });
}

const builtIn: Record<string, ModelFactory> = {
  openai: (model) => openai({ model }),
  "openai-responses": (model) => openaiResponses({ model }),
  anthropic: (model) => anthropic({ model }),
  ollama: (model) =>
    openaiCompatible({ name: "ollama", model, baseURL: ollamaBaseUrl(process.env.OLLAMA_HOST) }),
  openrouter: compatible(
    "openrouter",
    "https://openrouter.ai/api/v1",
    "OPENROUTER_BASE_URL",
    "OPENROUTER_API_KEY",
  ),
  groq: compatible("groq", "https://api.groq.com/openai/v1", "GROQ_BASE_URL", "GROQ_API_KEY"),
  // DeepSeek's thinking mode answers 400 to a tool-call turn sent back without its reasoning.
  deepseek: compatible("deepseek", "https://api.deepseek.com/v1", "DEEPSEEK_BASE_URL", "DEEPSEEK_API_KEY", {
    replayReasoningContent: true,
  }),
  lmstudio: compatible("lmstudio", "http://127.0.0.1:1234/v1", "LMSTUDIO_BASE_URL"),
  llamacpp: compatible("llamacpp", "http://127.0.0.1:8080/v1", "LLAMACPP_BASE_URL"),
};
const registered = new Map<string, ModelFactory>(Object.entries(builtIn));

/**
 * Resolves `"provider:model-id"`. Known providers: openai, openai-responses, anthropic,
 * ollama, openrouter, groq, deepseek, lmstudio, llamacpp, and any added with
 * `registerProvider`. A missing API key or an unknown provider is a `UserError`.
 *
 * @example
 * const model = resolveModel("anthropic:claude-sonnet-4-5"); // reads ANTHROPIC_API_KEY
 * const local = resolveModel("ollama:qwen3");                 // OLLAMA_HOST or 127.0.0.1:11434
 */
export function resolveModel(id: string): Model {
  if (typeof id !== "string")
    throw new UserError(`a model string must be "provider:model-id", got ${typeof id}`);
  const colon = id.indexOf(":");
  const provider = colon === -1 ? "" : id.slice(0, colon).trim().toLowerCase();
  const modelId = colon === -1 ? "" : id.slice(colon + 1).trim();
  if (provider === "" || modelId === "") {
    throw new UserError(
      `model "${id}" is not "provider:model-id" (e.g. "openai:gpt-4.1-mini"); known providers: ${known()}`,
    );
  }
  const factory = registered.get(provider);
  if (!factory)
    throw new UserError(`unknown model provider "${provider}" in "${id}"; known providers: ${known()}`);
  return factory(modelId);
}

/**
 * Adds (or replaces) a provider prefix for model strings.
 *
 * @example
 * registerProvider("vllm", (model) => openaiCompatible({ name: "vllm", baseURL: "http://gpu-box:8000/v1", model }));
 * new Agent({ name: "a", model: "vllm:Qwen/Qwen3-32B" });
 */
export function registerProvider(name: string, factory: ModelFactory): void {
  if (!/^[a-z0-9][a-z0-9._-]*$/.test(name)) {
    throw new UserError(`provider name "${name}" must be lowercase letters, digits, ".", "_" or "-"`);
  }
  registered.set(name, factory);
}

function known(): string {
  return [...registered.keys()].join(", ");
}

/**
 * Ollama's own reading of `OLLAMA_HOST`: without a scheme it is http on port 11434 (with
 * one, the scheme's default port), and the listen-everywhere address 0.0.0.0 means this
 * machine.
 */
export function ollamaBaseUrl(host: string | undefined): string {
  let value = (host ?? "").trim();
  if (value === "") return "http://127.0.0.1:11434/v1";
  const schemeGiven = /^[a-z][a-z0-9+.-]*:\/\//i.test(value);
  if (!schemeGiven) value = `http://${value}`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UserError(`OLLAMA_HOST "${host}" is not a host, host:port or URL`);
  }
  if (url.hostname === "0.0.0.0") url.hostname = "127.0.0.1";
  if (!schemeGiven && !/^(\[[^\]]*\]|[^:/]*):\d+/.test(value.slice("http://".length))) url.port = "11434";
  const path = url.pathname.replace(/\/+$/, "");
  return `${url.protocol}//${url.host}${path}/v1`;
}
