/**
 * `quiver-agents/providers`: real model providers behind the one-method `Model` interface.
 */
export { type AiSdkLanguageModel, type FromAiSdkOptions, fromAiSdk } from "./ai-sdk/model.js";
export { type AnthropicOptions, anthropic } from "./anthropic/model.js";
export {
  type OpenAICompatibleOptions,
  type OpenAIOptions,
  openai,
  openaiCompatible,
} from "./openai/model.js";
export { type OpenAIResponsesOptions, openaiResponses } from "./openai-responses/model.js";
export type { HttpProviderOptions } from "./provider-options.js";
export { type ModelFactory, registerProvider, resolveModel } from "./registry.js";
export type { RetryBackoff } from "./retry.js";
export type { ToolCallEvent } from "./tool-calls.js";
export type { ProviderWarning, WarningHandler } from "./warnings.js";
