/**
 * `anthropic()`: Claude through the Messages API with streaming.
 */
import type { Model } from "../../model/types.js";
import { errorFromResponse } from "../error-responses.js";
import {
  endpoint,
  type HttpProviderOptions,
  requireApiKey,
  requireModel,
  resolveHttpSettings,
  withHeaders,
} from "../provider-options.js";
import { streamTurn, type WireFormat } from "../streaming-turn.js";
import { ANTHROPIC, encodeMessagesBody } from "./request.js";
import { MessagesStreamDecoder } from "./stream.js";

export type AnthropicOptions = HttpProviderOptions & {
  /** The model id, e.g. `"claude-sonnet-4-5"`. */
  model: string;
  /** Default: the `ANTHROPIC_API_KEY` environment variable. */
  apiKey?: string;
  /** Without `/v1`. Default: `ANTHROPIC_BASE_URL`, else `https://api.anthropic.com`. */
  baseURL?: string;
  /**
   * `max_tokens` when `modelSettings.maxTokens` is not set (the API requires one). Default by
   * model: 4096 for Claude 3, 8192 for Claude 3.5, 16384 for later models.
   */
  maxTokens?: number;
  /**
   * Mark the system prompt, the tool list and the newest message as cacheable
   * (`cache_control: ephemeral`), so each turn of a tool loop re-reads the prefix from the
   * cache at a tenth of the price. Default true.
   */
  promptCaching?: boolean;
  /** Beta features, sent as the `anthropic-beta` header. */
  betas?: string[];
};

export const ANTHROPIC_VERSION = "2023-06-01";

/**
 * A Claude model through the Anthropic Messages API.
 *
 * @example
 * import { anthropic } from "quiver-agents/providers";
 * const agent = new Agent({ name: "helper", model: anthropic({ model: "claude-sonnet-4-5" }) });
 */
export function anthropic(options: AnthropicOptions): Model {
  requireModel(ANTHROPIC, options.model);
  const apiKey = requireApiKey(ANTHROPIC, options.apiKey, "ANTHROPIC_API_KEY");
  const url = endpoint(
    options.baseURL ?? process.env.ANTHROPIC_BASE_URL ?? "https://api.anthropic.com",
    "/v1/messages",
  );
  const own: Record<string, string> = {
    "content-type": "application/json",
    accept: "text/event-stream",
    "x-api-key": apiKey,
    "anthropic-version": ANTHROPIC_VERSION,
  };
  if (options.betas && options.betas.length > 0) own["anthropic-beta"] = options.betas.join(",");
  const headers = withHeaders(own, options.headers);
  const dialect = {
    model: options.model,
    maxTokens: options.maxTokens ?? defaultMaxTokens(options.model),
    promptCaching: options.promptCaching ?? true,
  };
  const wire: WireFormat = {
    encode: (request, warn) => ({ url, headers, body: encodeMessagesBody(request, dialect, warn) }),
    decoder: () => new MessagesStreamDecoder(),
    errorFromResponse: (status, responseHeaders, body) =>
      errorFromResponse(ANTHROPIC, status, responseHeaders, body),
  };
  const settings = resolveHttpSettings(ANTHROPIC, options);
  return { name: `anthropic:${options.model}`, stream: (request) => streamTurn(wire, settings, request) };
}

/**
 * A default output limit the model accepts: older models reject more than their maximum,
 * while a low limit cuts long tool arguments (a file's content) off with `length`.
 */
export function defaultMaxTokens(model: string): number {
  if (/claude-3-5/.test(model)) return 8192;
  if (/claude-3-(haiku|sonnet|opus)/.test(model)) return 4096;
  return 16384;
}
