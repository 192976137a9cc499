/**
 * The provider boundary: provider-neutral messages and the one-method `Model` interface.
 * Providers never see a `Tool`; they see `ToolSpec`s. Keep this file tiny and stable —
 * it is the contract every provider and the loop are written against.
 */

/** A JSON Schema document (draft 2020-12 unless its `$schema` says otherwise). */
export type JSONSchema = { [key: string]: unknown };

/** Plain text, the part every model reads. */
export type TextBlock = { type: "text"; text: string };
/**
 * An image: base64 `data` with its `mimeType` (`image/png`, `image/jpeg`, `image/gif`,
 * `image/webp`), or a `url` the provider fetches itself.
 *
 * @example
 * const shot: ImageBlock = { type: "image", data: png.toString("base64"), mimeType: "image/png" };
 * const remote: ImageBlock = { type: "image", url: "https://example.com/cat.jpg" };
 */
export type ImageBlock =
  | { type: "image"; data: string; mimeType: string; url?: undefined }
  | { type: "image"; url: string; mimeType?: string; data?: undefined };
/**
 * A document (a PDF, a text file…): base64 `data` or a `url`, its `mimeType`, and the
 * `filename` the model is told.
 *
 * @example
 * const pdf: FileBlock = { type: "file", data: bytes.toString("base64"), mimeType: "application/pdf", filename: "q3.pdf" };
 */
export type FileBlock =
  | { type: "file"; data: string; mimeType: string; filename?: string; url?: undefined }
  | { type: "file"; url: string; mimeType: string; filename?: string; data?: undefined };
/** Recorded sound as base64 `data` (`audio/wav`, `audio/mpeg`…), for models that listen. */
export type AudioBlock = { type: "audio"; data: string; mimeType: string; url?: undefined };
/** Model reasoning; `providerData` (keyed by provider) lets the same provider replay it exactly. */
export type ReasoningBlock = { type: "reasoning"; text: string; providerData?: Record<string, unknown> };
/** The parts that carry bytes (or a URL to them) rather than text. */
export type MediaBlock = ImageBlock | FileBlock | AudioBlock;
/** One part of a message's content: text, media, or the model's reasoning. */
export type ContentBlock = TextBlock | ImageBlock | FileBlock | AudioBlock | ReasoningBlock;

/**
 * One tool call. `id` is unique within its run; `providerCallId` keeps the provider's original
 * id when the runner had to assign a new one. `args` is the parsed JSON as the model sent it
 * (`{}` when unparseable, with the raw text in `rawArgs`).
 */
export type ToolCall = {
  /** Unique within the run; the key every event of the call carries. */
  id: string;
  /** The tool the model asked for. */
  name: string;
  /** The arguments as the model sent them, parsed from JSON (`{}` when unparseable). */
  args: unknown;
  /** The provider's own id, when Quiver had to assign `id` because that one was already used in the run. */
  providerCallId?: string;
  /** The argument text as sent, when it was not valid JSON. */
  rawArgs?: string;
};

/** Instructions for the model, as a message of the transcript. */
export type SystemMessage = { role: "system"; content: string | ContentBlock[] };
/** What the person (or a caller) says: text, or text with images, files and audio. */
export type UserMessage = { role: "user"; content: string | ContentBlock[] };
/** A model's answer: its text (and reasoning), and the tool calls it requested. */
export type AssistantMessage = {
  role: "assistant";
  content: string | ContentBlock[];
  /** The calls this turn requested, in request order. */
  toolCalls?: ToolCall[];
  /** Keyed by provider ("anthropic", "openai-responses"…); other providers drop it. */
  providerData?: Record<string, unknown>;
};
/** One call's result, as the model reads it. */
export type ToolMessage = {
  role: "tool";
  /** The `ToolCall.id` this answers. */
  toolCallId: string;
  /** The tool's name. */
  name: string;
  /** What the model reads: the rendered result, or the error text. */
  content: string | ContentBlock[];
  /** Whether the call failed (the content is an error). */
  isError: boolean;
  /** What the tool returned as `details`: for observers and UIs, never sent to the model. */
  details?: unknown;
  /**
   * Provenance: the content is third-party text (a web page, an MCP server's output or error).
   * A run that starts from a transcript holding such a message starts tainted, so continuing a
   * conversation keeps the care it needed. Providers never send this field.
   */
  untrusted?: boolean;
};
/** One entry of a transcript; switch on `role`. */
export type Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage;

/** What a model sees of a tool. */
export type ToolSpec = { name: string; description: string; parameters: JSONSchema; strict?: boolean };

/**
 * Provider-neutral request settings (`modelSettings` on an agent). Each provider maps them to
 * its API and sends a `warning` for one it cannot honour. Unset means the provider's default.
 */
export type ModelSettings = {
  /** Sampling temperature (`temperature`). */
  temperature?: number;
  /** Nucleus sampling (`top_p`). */
  topP?: number;
  /** The most tokens one answer may have (Anthropic, which needs one, defaults to `anthropic()`'s `maxTokens`, else a per-model value). */
  maxTokens?: number;
  /** Sequences that end the answer. */
  stop?: string[];
  /** Whether the model may (`auto`), must not (`none`) or must (`required`) call a tool, or must call the one named. */
  toolChoice?: "auto" | "none" | "required" | { name: string };
  /** Whether the model may request several calls in one turn (the request-side twin of `parallel`). */
  parallelToolCalls?: boolean;
  /** How hard a reasoning model thinks: `effort`, or (Anthropic) a thinking budget in tokens (at least 1,024). */
  reasoning?: { effort?: "low" | "medium" | "high"; budgetTokens?: number };
  /** Ask for JSON matching `schema` (set for you by the agent's `outputType`). */
  responseFormat?: { type: "json_schema"; name: string; schema: JSONSchema; strict?: boolean };
  /** Provider-specific fields passed through as they are. */
  extra?: Record<string, unknown>;
};

/**
 * One model request. `messages` is the transcript at the time of the request and is
 * read-only: a model must not keep a reference past its call (copying it every turn would
 * make a long run quadratic).
 */
export type ModelRequest = {
  system?: string;
  messages: readonly Message[];
  tools: ToolSpec[];
  settings: ModelSettings;
  signal?: AbortSignal;
  /**
   * Another model waits to take this request when this one fails (a fallback chain sets it): a
   * provider then gives up instead of waiting long — no retry after a timed-out attempt, none
   * after a server asks to wait more than `FALLBACK_WAIT_MS` — so the next model answers sooner.
   */
  fallbackWaiting?: boolean;
};

/** Tokens spent, as providers report them, summed over turns. */
export type Usage = {
  /** Every prompt token, cached ones included. */
  inputTokens: number;
  /** Tokens the model wrote. */
  outputTokens: number;
  /** Input plus output tokens. */
  totalTokens: number;
  /** The part of `inputTokens` read from the provider's prompt cache, where it reports it. */
  cachedInputTokens?: number;
  /** The part of `inputTokens` written to the provider's prompt cache (Anthropic bills it above the input rate). */
  cacheWriteTokens?: number;
  /** Tokens spent reasoning, where the provider reports them. */
  reasoningTokens?: number;
  /** Cost in US dollars: the provider's figure, else priced from `modelPrice`; absent when no price is known. */
  costUsd?: number;
};

/** Why a model's answer ended: done, to call tools, at `maxTokens`, or refused by a content filter. */
export type FinishReason = "stop" | "tool_calls" | "length" | "content_filter";

/**
 * A model turn as a stream ending with `finish`. Tool-call arguments arrive as raw JSON text;
 * a complete `tool_call` is authoritative over earlier deltas with the same index. A provider
 * that must retry after partial output emits `reset` (consumers discard that turn's deltas)
 * and streams again.
 */
export type ModelStreamEvent =
  | { type: "text_delta"; delta: string }
  | { type: "reasoning_delta"; delta: string; providerData?: Record<string, unknown> }
  | { type: "tool_call_delta"; index: number; id?: string; name?: string; argsDelta: string }
  /** `repairs` lists what a provider fixed in malformed argument JSON (`args` is the repaired text). */
  | { type: "tool_call"; index?: number; id: string; name: string; args: string; repairs?: string[] }
  | { type: "usage"; usage: Partial<Usage> }
  | { type: "reset"; reason: string }
  /** Something the provider had to degrade (a schema it cannot express, an unsupported setting). */
  | { type: "warning"; message: string; code?: string }
  /**
   * A fallback chain moved on: the model named `from` failed (`reason`) and what follows comes
   * from `to`. Like `reset`, what the turn streamed so far is discarded.
   */
  | { type: "fallback"; from: string; to: string; reason: string }
  | { type: "finish"; reason: FinishReason; providerData?: Record<string, unknown> };

/**
 * The provider boundary: one method. Failures throw `ProviderError`.
 *
 * @example
 * const model: Model = { name: "echo", async *stream() { yield { type: "text_delta", delta: "hi" }; yield { type: "finish", reason: "stop" }; } };
 */
export interface Model {
  name: string;
  stream(request: ModelRequest): AsyncIterable<ModelStreamEvent>;
}
