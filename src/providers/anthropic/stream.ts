/**
 * Decoding an Anthropic Messages event stream: text, thinking (with its signature),
 * redacted thinking, and `tool_use` blocks whose input arrives as `input_json_delta`s.
 */
import type { FinishReason, ModelStreamEvent, Usage } from "../../model/types.js";
import type { SseEvent } from "../sse.js";
import { parseChunk, type TurnDecoder, unfinishedStreamError } from "../streaming-turn.js";
import { ToolCallAssembler } from "../tool-calls.js";
import { anthropicStreamError } from "./errors.js";
import { ANTHROPIC } from "./request.js";

type Json = Record<string, unknown>;
const asRecord = (value: unknown): Json | undefined =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : undefined;
const num = (value: unknown) => (typeof value === "number" && Number.isFinite(value) ? value : undefined);

/**
 * One content block as it is being streamed. `call` is the tool-call index of a tool_use
 * block; `seeded`: its arguments came whole with the block's start (a translating gateway),
 * so a first `input_json_delta` replaces them rather than adding to them.
 */
type OpenBlock = { block: Json; call?: number; seeded?: boolean };

export class MessagesStreamDecoder implements TurnDecoder {
  done = false;
  private stopReason: string | undefined;
  private readonly usage: { input: number; cacheWrite: number; cacheRead: number; output: number } = {
    input: 0,
    cacheWrite: 0,
    cacheRead: 0,
    output: 0,
  };
  private sawUsage = false;
  private readonly calls = new ToolCallAssembler();
  /** The content blocks by the stream's block index, in order: kept for exact replay. */
  private readonly blocks = new Map<number, OpenBlock>();
  private sawThinking = false;

  get finished(): boolean {
    return this.stopReason !== undefined;
  }

  decode(event: SseEvent): ModelStreamEvent[] {
    const chunk = parseChunk(ANTHROPIC, event.data);
    const type = chunk.type ?? event.event;
    switch (type) {
      case "message_start":
        this.readUsage(asRecord(asRecord(chunk.message)?.usage));
        return [];
      case "content_block_start":
        return this.startBlock(num(chunk.index) ?? this.blocks.size, asRecord(chunk.content_block) ?? {});
      case "content_block_delta":
        return this.delta(num(chunk.index) ?? -1, asRecord(chunk.delta) ?? {});
      case "message_delta": {
        const reason = asRecord(chunk.delta)?.stop_reason;
        if (typeof reason === "string") this.stopReason = reason;
        this.readUsage(asRecord(chunk.usage));
        return [];
      }
      case "message_stop":
        this.done = true;
        return [];
      case "error":
        throw anthropicStreamError(chunk.error ?? chunk);
      default:
        // ping, content_block_stop, and event types added later.
        return [];
    }
  }

  end(): ModelStreamEvent[] {
    if (this.stopReason === undefined) throw unfinishedStreamError(ANTHROPIC);
    let finish = finishReason(this.stopReason);
    if (finish === "stop" && this.calls.count > 0) finish = "tool_calls";
    const calls = this.calls.complete(finish);
    const out: ModelStreamEvent[] = [...calls];
    if (this.sawUsage) out.push({ type: "usage", usage: this.totalUsage() });
    if (this.sawThinking) {
      // Thinking must go back exactly as streamed, in its place among the other blocks.
      // A text block that started and got no text is kept out: the API refuses an empty one.
      const content = [...this.blocks.entries()]
        .sort(([a], [b]) => a - b)
        .filter(([, open]) => open.block.type !== "text" || String(open.block.text ?? "").trim() !== "")
        .map(([, open]) =>
          open.call === undefined ? open.block : toolUseBlock(open.block, calls[open.call]!.args),
        );
      out.push({ type: "finish", reason: finish, providerData: { [ANTHROPIC]: { content } } });
    } else {
      out.push({ type: "finish", reason: finish });
    }
    return out;
  }

  private startBlock(index: number, block: Json): ModelStreamEvent[] {
    const kept: OpenBlock = { block: { ...block } };
    this.blocks.set(index, kept);
    switch (block.type) {
      case "text":
        return typeof block.text === "string" && block.text !== ""
          ? [{ type: "text_delta", delta: block.text }]
          : [];
      case "thinking":
        this.sawThinking = true;
        kept.block = {
          type: "thinking",
          thinking: typeof block.thinking === "string" ? block.thinking : "",
          signature: block.signature ?? "",
        };
        return typeof block.thinking === "string" && block.thinking !== ""
          ? [{ type: "reasoning_delta", delta: block.thinking }]
          : [];
      case "redacted_thinking":
        this.sawThinking = true;
        return [];
      case "tool_use": {
        // Anthropic starts with `input: {}` and streams the input; gateways that translate a
        // whole answer may put all of it here instead.
        const input = asRecord(block.input);
        const whole = input !== undefined && Object.keys(input).length > 0 ? JSON.stringify(input) : "";
        const [call, event] = this.calls.start(stringOr(block.id), stringOr(block.name), whole);
        kept.call = call;
        kept.seeded = whole !== "";
        return [event];
      }
      default:
        // server_tool_use, web_search_tool_result…: kept verbatim for replay.
        return [];
    }
  }

  private delta(index: number, delta: Json): ModelStreamEvent[] {
    const open = this.blocks.get(index);
    if (!open) return [];
    switch (delta.type) {
      case "text_delta": {
        const text = typeof delta.text === "string" ? delta.text : "";
        open.block.text = String(open.block.text ?? "") + text;
        return text === "" ? [] : [{ type: "text_delta", delta: text }];
      }
      case "thinking_delta": {
        const text = typeof delta.thinking === "string" ? delta.thinking : "";
        open.block.thinking = String(open.block.thinking ?? "") + text;
        return text === "" ? [] : [{ type: "reasoning_delta", delta: text }];
      }
      case "signature_delta":
        open.block.signature = String(open.block.signature ?? "") + String(delta.signature ?? "");
        return [];
      case "input_json_delta":
        if (open.call === undefined) return [];
        if (open.seeded) {
          open.seeded = false;
          this.calls.setArguments(open.call, "");
        }
        return [
          this.calls.append(open.call, typeof delta.partial_json === "string" ? delta.partial_json : ""),
        ];
      default:
        return [];
    }
  }

  private readUsage(usage: Json | undefined): void {
    if (!usage) return;
    this.sawUsage = true;
    // message_delta usage is cumulative; later values replace earlier ones.
    this.usage.input = num(usage.input_tokens) ?? this.usage.input;
    this.usage.cacheWrite = num(usage.cache_creation_input_tokens) ?? this.usage.cacheWrite;
    this.usage.cacheRead = num(usage.cache_read_input_tokens) ?? this.usage.cacheRead;
    this.usage.output = num(usage.output_tokens) ?? this.usage.output;
  }

  /**
   * Anthropic counts cache reads and writes apart from `input_tokens`; Quiver's
   * `inputTokens` is every prompt token (as OpenAI reports it), `cachedInputTokens` the reads,
   * `cacheWriteTokens` the writes (billed at 1.25× the input rate).
   */
  private totalUsage(): Partial<Usage> {
    const { input, cacheWrite, cacheRead, output } = this.usage;
    const inputTokens = input + cacheWrite + cacheRead;
    return {
      inputTokens,
      outputTokens: output,
      totalTokens: inputTokens + output,
      cachedInputTokens: cacheRead,
      ...(cacheWrite > 0 && { cacheWriteTokens: cacheWrite }),
    };
  }
}

function stringOr(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** The tool_use block as it must be replayed: `input` is the parsed object, never text. */
function toolUseBlock(block: Json, args: string): Json {
  let input: unknown = {};
  try {
    input = JSON.parse(args);
  } catch {
    // Unparseable input goes back as {} (the API requires an object).
  }
  const object = input !== null && typeof input === "object" && !Array.isArray(input) ? input : {};
  return { type: "tool_use", id: block.id, name: block.name, input: object };
}

export function finishReason(reason: string): FinishReason {
  switch (reason) {
    case "tool_use":
      return "tool_calls";
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "refusal":
      return "content_filter";
    default:
      // end_turn, stop_sequence, pause_turn
      return "stop";
  }
}
