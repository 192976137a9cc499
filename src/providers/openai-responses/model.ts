/**
 * `openaiResponses()`: OpenAI's Responses API with streaming.
 */
import type { Model } from "../../model/types.js";
import { errorFromResponse } from "../error-responses.js";
import { openAiHeaders } from "../openai/model.js";
import {
  endpoint,
  type HttpProviderOptions,
  requireApiKey,
  requireModel,
  resolveHttpSettings,
} from "../provider-options.js";
import { streamTurn, type WireFormat } from "../streaming-turn.js";
import { encodeResponsesBody, OPENAI_RESPONSES } from "./request.js";
import { ResponsesStreamDecoder } from "./stream.js";

export type OpenAIResponsesOptions = HttpProviderOptions & {
  /** The model id, e.g. `"gpt-5-mini"`. */
  model: string;
  /** Default: the `OPENAI_API_KEY` environment variable. */
  apiKey?: string;
  /** Including `/v1`. Default: `OPENAI_BASE_URL`, else `https://api.openai.com/v1`. */
  baseURL?: string;
  organization?: string;
  project?: string;
  /**
   * Let OpenAI keep responses server-side. Default false: Quiver keeps the transcript, and
   * reasoning travels as encrypted content (works with Zero Data Retention).
   */
  store?: boolean;
  /**
   * Ask for encrypted reasoning so it can be replayed. Default: on for reasoning models
   * (o-series, gpt-5, codex) and whenever `modelSettings.reasoning` is set; non-reasoning
   * models reject the option.
   */
  encryptedReasoning?: boolean;
  /** Reasoning summaries streamed as reasoning text. Default "auto"; `null` turns them off. */
  reasoningSummary?: "auto" | "concise" | "detailed" | null;
};

const REASONING_MODEL = /^(o\d|gpt-5|codex)/;

/**
 * An OpenAI model through the Responses API: function calls, `function_call_output`, and
 * reasoning items carried across turns.
 *
 * @example
 * import { openaiResponses } from "quiver-agents/providers";
 * const agent = new Agent({ name: "helper", model: openaiResponses({ model: "gpt-5-mini" }),
 *   modelSettings: { reasoning: { effort: "low" } } });
 */
export function openaiResponses(options: OpenAIResponsesOptions): Model {
  requireModel(OPENAI_RESPONSES, options.model);
  const apiKey = requireApiKey(OPENAI_RESPONSES, options.apiKey, "OPENAI_API_KEY");
  const url = endpoint(
    options.baseURL ?? process.env.OPENAI_BASE_URL ?? "https://api.openai.com/v1",
    "/responses",
  );
  const headers = openAiHeaders(apiKey, options);
  const reasoningModel = REASONING_MODEL.test(options.model);
  const wire: WireFormat = {
    encode: (request, warn) => {
      const dialect = {
        model: options.model,
        store: options.store ?? false,
        encryptedReasoning:
          options.encryptedReasoning ?? (reasoningModel || request.settings.reasoning !== undefined),
        reasoningSummary:
          options.reasoningSummary === null ? undefined : (options.reasoningSummary ?? "auto"),
      };
      return { url, headers, body: encodeResponsesBody(request, dialect, warn) };
    },
    decoder: () => new ResponsesStreamDecoder(),
    errorFromResponse: (status, responseHeaders, body) =>
      errorFromResponse(OPENAI_RESPONSES, status, responseHeaders, body),
  };
  const settings = resolveHttpSettings(OPENAI_RESPONSES, options);
  return {
    name: `${OPENAI_RESPONSES}:${options.model}`,
    stream: (request) => streamTurn(wire, settings, request),
  };
}
