/**
 * Decoding a Responses API event stream: output items (messages, function calls, reasoning)
 * announced by `response.output_item.added`, filled by their delta events, and final in
 * `response.output_item.done`; the turn ends with `response.completed` or
 * `response.incomplete`.
 */
import type { FinishReason, ModelStreamEvent, Usage } from "../../model/types.js";
import type { SseEvent } from "../sse.js";
import { parseChunk, type TurnDecoder, unfinishedStreamError } from "../streaming-turn.js";
import { ToolCallAssembler } from "../tool-calls.js";
import { responsesStreamError } from "./errors.js";
import { OPENAI_RESPONSES } from "./request.js";

type Json = Record<string, unknown>;
const asRecord = (value: unknown): Json | undefined =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : undefined;
const num = (value: unknown) => (typeof value === "number" && Number.isFinite(value) ? value : undefined);

export class ResponsesStreamDecoder implements TurnDecoder {
  done = false;
  /** `response.completed` ends the stream and says why in one event. */
  get finished(): boolean {
    return this.done;
  }
  private finish: FinishReason | undefined;
  private usage: Partial<Usage> | undefined;
  private readonly calls = new ToolCallAssembler();
  /** output_index → tool-call index. */
  private readonly callAt = new Map<number, number>();
  /** Completed output items by output_index, kept for exact replay. */
  private readonly items = new Map<number, Json>();

  decode(event: SseEvent): ModelStreamEvent[] {
    const chunk = parseChunk(OPENAI_RESPONSES, event.data);
    const type = typeof chunk.type === "string" ? chunk.type : event.event;
    const outputIndex = num(chunk.output_index) ?? -1;
    switch (type) {
      case "response.output_item.added": {
        const item = asRecord(chunk.item);
        if (item?.type !== "function_call") return [];
        const [call, delta] = this.calls.start(
          typeof item.call_id === "string" ? item.call_id : undefined,
          typeof item.name === "string" ? item.name : undefined,
          typeof item.arguments === "string" ? item.arguments : "",
        );
        this.callAt.set(outputIndex, call);
        return [delta];
      }
      case "response.function_call_arguments.delta": {
        const call = this.callAt.get(outputIndex);
        if (call === undefined || typeof chunk.delta !== "string") return [];
        return [this.calls.append(call, chunk.delta)];
      }
      case "response.function_call_arguments.done": {
        const call = this.callAt.get(outputIndex);
        if (call !== undefined && typeof chunk.arguments === "string")
          this.calls.setArguments(call, chunk.arguments);
        return [];
      }
      case "response.output_text.delta":
      case "response.refusal.delta":
        return typeof chunk.delta === "string" && chunk.delta !== ""
          ? [{ type: "text_delta", delta: chunk.delta }]
          : [];
      case "response.reasoning_summary_text.delta":
      case "response.reasoning_text.delta":
        return typeof chunk.delta === "string" && chunk.delta !== ""
          ? [{ type: "reasoning_delta", delta: chunk.delta }]
          : [];
      case "response.reasoning_summary_part.added":
        // Summary parts are paragraphs: keep them apart in the streamed reasoning.
        return (num(chunk.summary_index) ?? 0) > 0 ? [{ type: "reasoning_delta", delta: "\n\n" }] : [];
      case "response.output_item.done": {
        const item = asRecord(chunk.item);
        if (!item) return [];
        this.items.set(outputIndex, item);
        const call = this.callAt.get(outputIndex);
        if (call !== undefined && typeof item.arguments === "string")
          this.calls.setArguments(call, item.arguments);
        return [];
      }
      case "response.completed":
      case "response.incomplete":
        this.complete(asRecord(chunk.response) ?? {}, type === "response.incomplete");
        return [];
      case "response.failed":
        throw responsesStreamError(asRecord(chunk.response)?.error ?? chunk);
      case "error":
        throw responsesStreamError(asRecord(chunk.error) ?? chunk);
      default:
        return [];
    }
  }

  end(): ModelStreamEvent[] {
    if (this.finish === undefined) throw unfinishedStreamError(OPENAI_RESPONSES);
    const out: ModelStreamEvent[] = [...this.calls.complete(this.finish)];
    if (this.usage) out.push({ type: "usage", usage: this.usage });
    const items = [...this.items.entries()].sort(([a], [b]) => a - b).map(([, item]) => item);
    if (items.some((item) => item.type === "reasoning")) {
      // Reasoning items must go back with the items that followed them, exactly.
      out.push({ type: "finish", reason: this.finish, providerData: { [OPENAI_RESPONSES]: { items } } });
    } else {
      out.push({ type: "finish", reason: this.finish });
    }
    return out;
  }

  private complete(response: Json, incomplete: boolean): void {
    this.done = true;
    const usage = asRecord(response.usage);
    if (usage) this.usage = responsesUsage(usage);
    if (incomplete) {
      const reason = asRecord(response.incomplete_details)?.reason;
      this.finish = reason === "content_filter" ? "content_filter" : "length";
      return;
    }
    // The output list of the final response is authoritative for items we may have missed.
    if (Array.isArray(response.output)) {
      response.output.forEach((item, index) => {
        const record = asRecord(item);
        if (record && !this.items.has(index)) this.items.set(index, record);
      });
    }
    this.finish = this.calls.count > 0 ? "tool_calls" : "stop";
  }
}

function responsesUsage(usage: Json): Partial<Usage> {
  const input = num(usage.input_tokens) ?? 0;
  const output = num(usage.output_tokens) ?? 0;
  const out: Partial<Usage> = {
    inputTokens: input,
    outputTokens: output,
    totalTokens: num(usage.total_tokens) ?? input + output,
  };
  const cached = num(asRecord(usage.input_tokens_details)?.cached_tokens);
  if (cached !== undefined) out.cachedInputTokens = cached;
  const reasoning = num(asRecord(usage.output_tokens_details)?.reasoning_tokens);
  if (reasoning !== undefined) out.reasoningTokens = reasoning;
  return out;
}
