/**
 * Decoding a Chat Completions event stream, tolerant of what compatible servers do
 * differently: tool-call deltas without an `index` (or with `null`), several calls sent under
 * the same index, reasoning as `reasoning_content` or `reasoning`, usage only in the last
 * chunk, and no `[DONE]` at the end.
 */
import type { FinishReason, ModelStreamEvent, Usage } from "../../model/types.js";
import type { SseEvent } from "../sse.js";
import { parseChunk, type TurnDecoder, unfinishedStreamError } from "../streaming-turn.js";
import { ToolCallAssembler } from "../tool-calls.js";
import { chatStreamError } from "./errors.js";

type Json = Record<string, unknown>;

const asRecord = (value: unknown): Json | undefined =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : undefined;

export class ChatStreamDecoder implements TurnDecoder {
  done = false;
  private finish: FinishReason | undefined;
  private usage: Partial<Usage> | undefined;
  private readonly calls = new ToolCallAssembler();
  /** The server's tool-call `index` → our call index. */
  private readonly byIndex = new Map<number, number>();
  private readonly byId = new Map<string, number>();

  /**
   * A call's `extra_content`, by our call index: Gemini's compatible endpoint puts its thought
   * signature there and refuses the next request unless it comes back with the call.
   */
  private readonly extras = new Map<number, unknown>();

  /** Whether any text, reasoning or call arrived. */
  private output = false;

  /** The reasoning text, kept for `finish.providerData` when the dialect replays it. */
  private reasoning = "";

  get finished(): boolean {
    return this.finish !== undefined;
  }

  constructor(
    private readonly provider: string,
    private readonly keepReasoning = false,
  ) {}

  decode(event: SseEvent): ModelStreamEvent[] {
    const data = event.data.trim();
    if (data === "[DONE]") {
      this.done = true;
      return [];
    }
    if (data === "") return [];
    if (event.event === "error") {
      let value: unknown = data;
      try {
        value = JSON.parse(data);
      } catch {}
      throw chatStreamError(this.provider, value);
    }
    const chunk = parseChunk(this.provider, data);
    if (chunk.error !== undefined && chunk.error !== null) throw chatStreamError(this.provider, chunk.error);
    const usage = asRecord(chunk.usage);
    if (usage) this.usage = chatUsage(usage);
    const out: ModelStreamEvent[] = [];
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    for (const rawChoice of choices) {
      const choice = asRecord(rawChoice);
      // Only the first choice is a turn; `n > 1` is not something an agent asks for.
      if (!choice || (typeof choice.index === "number" && choice.index !== 0)) continue;
      const delta = asRecord(choice.delta) ?? asRecord(choice.message) ?? {};
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (typeof reasoning === "string" && reasoning !== "") {
        if (this.keepReasoning) this.reasoning += reasoning;
        out.push({ type: "reasoning_delta", delta: reasoning });
      }
      if (typeof delta.content === "string" && delta.content !== "") {
        out.push({ type: "text_delta", delta: delta.content });
      } else if (Array.isArray(delta.content)) {
        this.contentParts(delta.content, out);
      }
      // A refusal (structured outputs) is what the model said instead of an answer.
      if (typeof delta.refusal === "string" && delta.refusal !== "") {
        out.push({ type: "text_delta", delta: delta.refusal });
      }
      if (Array.isArray(delta.tool_calls)) {
        for (const raw of delta.tool_calls) {
          const call = asRecord(raw);
          if (call) out.push(this.toolCallDelta(call));
        }
      }
      if (typeof choice.finish_reason === "string" && choice.finish_reason !== "") {
        this.finish = finishReason(choice.finish_reason);
      }
    }
    if (out.length > 0) this.output = true;
    return out;
  }

  end(): ModelStreamEvent[] {
    let finish = this.finish;
    if (finish === undefined) {
      // `[DONE]` is an explicit end of stream even when a server forgot the finish reason,
      // but not after nothing at all (a server that failed without saying so); a stream that
      // just stops is a cut-off one.
      if (!this.done || !this.output) throw unfinishedStreamError(this.provider);
      finish = "stop";
    }
    // Several servers say "stop" for a turn that requested calls.
    if (finish === "stop" && this.calls.count > 0) finish = "tool_calls";
    const calls = this.calls.complete(finish);
    const out: ModelStreamEvent[] = [...calls];
    if (this.usage) out.push({ type: "usage", usage: this.usage });
    const kept: Json = {};
    if (this.reasoning !== "") kept.reasoningContent = this.reasoning;
    if (this.extras.size > 0) {
      kept.callExtras = Object.fromEntries(
        [...this.extras].map(([index, extra]) => [calls[index]!.id, extra]),
      );
    }
    out.push(
      Object.keys(kept).length > 0
        ? { type: "finish", reason: finish, providerData: { [this.provider]: kept } }
        : { type: "finish", reason: finish },
    );
    return out;
  }

  /**
   * Content sent as parts (Mistral's reasoning models): `text` parts are text, `thinking`
   * parts (a string, or text parts of their own) are reasoning.
   */
  private contentParts(parts: unknown[], out: ModelStreamEvent[]): void {
    for (const raw of parts) {
      const part = asRecord(raw);
      if (part?.type === "text" && typeof part.text === "string" && part.text !== "") {
        out.push({ type: "text_delta", delta: part.text });
      } else if (part?.type === "thinking") {
        const inner = Array.isArray(part.thinking) ? part.thinking : [part.thinking];
        const text = inner
          .map((piece) => (typeof piece === "string" ? piece : (asRecord(piece)?.text ?? "")))
          .filter((piece): piece is string => typeof piece === "string")
          .join("");
        if (text !== "") {
          if (this.keepReasoning) this.reasoning += text;
          out.push({ type: "reasoning_delta", delta: text });
        }
      }
    }
  }

  private toolCallDelta(call: Json): ModelStreamEvent {
    const fn = asRecord(call.function) ?? {};
    const id = typeof call.id === "string" && call.id !== "" ? call.id : undefined;
    const name = typeof fn.name === "string" && fn.name !== "" ? fn.name : undefined;
    const args =
      typeof fn.arguments === "string"
        ? fn.arguments
        : fn.arguments === undefined
          ? ""
          : JSON.stringify(fn.arguments);
    const serverIndex = typeof call.index === "number" ? call.index : undefined;
    let target: number | undefined;
    if (serverIndex !== undefined) {
      target = this.byIndex.get(serverIndex);
      // A new id under an index already in use is a new call (servers that send each call
      // whole, always at index 0).
      if (
        target !== undefined &&
        id !== undefined &&
        this.calls.idOf(target) !== undefined &&
        this.calls.idOf(target) !== id
      ) {
        target = undefined;
      }
    } else if (id !== undefined) {
      target = this.byId.get(id);
    } else if (this.calls.count > 0) {
      // No index and no id: a continuation of the call being streamed.
      target = this.calls.count - 1;
    }
    if (
      target !== undefined &&
      id === undefined &&
      name !== undefined &&
      this.calls.followsWholeCall(target, name)
    ) {
      target = undefined;
    }
    if (target === undefined) {
      const [index, event] = this.calls.start(id, name, args);
      if (serverIndex !== undefined) this.byIndex.set(serverIndex, index);
      if (id !== undefined) this.byId.set(id, index);
      if (call.extra_content !== undefined) this.extras.set(index, call.extra_content);
      return event;
    }
    if (call.extra_content !== undefined) this.extras.set(target, call.extra_content);
    if (id !== undefined && !this.byId.has(id)) this.byId.set(id, target);
    return this.calls.append(target, args, { ...(id ? { id } : {}), ...(name ? { name } : {}) });
  }
}

export function finishReason(reason: string): FinishReason {
  switch (reason) {
    case "length":
    case "max_tokens":
      return "length";
    case "tool_calls":
    case "function_call":
      return "tool_calls";
    case "content_filter":
      return "content_filter";
    default:
      return "stop";
  }
}

export function chatUsage(usage: Json): Partial<Usage> {
  const num = (value: unknown) => (typeof value === "number" && Number.isFinite(value) ? value : undefined);
  const input = num(usage.prompt_tokens) ?? 0;
  const output = num(usage.completion_tokens) ?? 0;
  const out: Partial<Usage> = {
    inputTokens: input,
    outputTokens: output,
    totalTokens: num(usage.total_tokens) ?? input + output,
  };
  // OpenAI: prompt_tokens_details.cached_tokens; DeepSeek: prompt_cache_hit_tokens.
  const cached =
    num(asRecord(usage.prompt_tokens_details)?.cached_tokens) ?? num(usage.prompt_cache_hit_tokens);
  if (cached !== undefined) out.cachedInputTokens = cached;
  const reasoning = num(asRecord(usage.completion_tokens_details)?.reasoning_tokens);
  if (reasoning !== undefined) out.reasoningTokens = reasoning;
  return out;
}
