/**
 * Decoding the stream parts of an AI SDK model (`LanguageModelV2StreamPart` /
 * `LanguageModelV3StreamPart`) into Quiver's model events.
 */
import type { LanguageModelV2StreamPart, LanguageModelV3StreamPart } from "@ai-sdk/provider";
import type { FinishReason, ModelStreamEvent, Usage } from "../../model/types.js";
import { unfinishedStreamError } from "../streaming-turn.js";
import { ToolCallAssembler } from "../tool-calls.js";
import { providerErrorFrom } from "./errors.js";
import { replayKey } from "./prompt.js";

export type StreamPart = LanguageModelV2StreamPart | LanguageModelV3StreamPart;
type Json = Record<string, unknown>;
const asRecord = (value: unknown): Json | undefined =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : undefined;
const num = (value: unknown) => (typeof value === "number" && Number.isFinite(value) ? value : undefined);

/** An assistant part as it will be replayed: reasoning, text or tool-call, with its provider metadata. */
type KeptPart = Json;

export class AiSdkStreamDecoder {
  private finish: FinishReason | undefined;
  private usage: Partial<Usage> | undefined;
  private readonly calls = new ToolCallAssembler();
  /** The stream's tool-call id → our call index. */
  private readonly callIndex = new Map<string, number>();
  /** Parts in the order they started, keyed by `kind:id`, for exact replay. */
  private readonly parts = new Map<string, KeptPart>();
  private sawReasoning = false;

  constructor(
    private readonly provider: string,
    private readonly warn: (message: string) => void,
  ) {}

  decode(part: StreamPart): ModelStreamEvent[] {
    switch (part.type) {
      case "stream-start":
        for (const warning of part.warnings) this.warn(describeWarning(warning));
        return [];
      case "text-start":
        this.keep(`text:${part.id}`, { type: "text", text: "" }, part.providerMetadata);
        return [];
      case "text-delta": {
        const kept = this.keep(`text:${part.id}`, { type: "text", text: "" }, part.providerMetadata);
        kept.text = String(kept.text) + part.delta;
        return part.delta === "" ? [] : [{ type: "text_delta", delta: part.delta }];
      }
      case "text-end":
        this.keep(`text:${part.id}`, { type: "text", text: "" }, part.providerMetadata);
        return [];
      case "reasoning-start":
      case "reasoning-end":
        this.sawReasoning = true;
        this.keep(`reasoning:${part.id}`, { type: "reasoning", text: "" }, part.providerMetadata);
        return [];
      case "reasoning-delta": {
        this.sawReasoning = true;
        const kept = this.keep(
          `reasoning:${part.id}`,
          { type: "reasoning", text: "" },
          part.providerMetadata,
        );
        kept.text = String(kept.text) + part.delta;
        return part.delta === "" ? [] : [{ type: "reasoning_delta", delta: part.delta }];
      }
      case "tool-input-start": {
        if (part.providerExecuted) return [];
        const [index, event] = this.calls.start(part.id, part.toolName);
        this.callIndex.set(part.id, index);
        this.keep(
          `call:${part.id}`,
          { type: "tool-call", toolCallId: part.id, toolName: part.toolName },
          part.providerMetadata,
        );
        return [event];
      }
      case "tool-input-delta": {
        const index = this.callIndex.get(part.id);
        return index === undefined ? [] : [this.calls.append(index, part.delta)];
      }
      case "tool-call": {
        if (part.providerExecuted) return [];
        this.keep(
          `call:${part.toolCallId}`,
          { type: "tool-call", toolCallId: part.toolCallId, toolName: part.toolName },
          part.providerMetadata,
        );
        const index = this.callIndex.get(part.toolCallId);
        // The complete call is authoritative over the input deltas.
        if (index !== undefined) {
          this.calls.setArguments(index, part.input);
          return [];
        }
        const [created, event] = this.calls.start(part.toolCallId, part.toolName, part.input);
        this.callIndex.set(part.toolCallId, created);
        return [event];
      }
      case "finish":
        this.finish = finishReason(part.finishReason);
        this.usage = usageOf(part.usage);
        return [];
      case "error":
        throw providerErrorFrom(this.provider, part.error);
      default:
        // tool-input-end, tool-result (provider-executed), file, source, response-metadata, raw…
        return [];
    }
  }

  end(): ModelStreamEvent[] {
    if (this.finish === undefined) throw unfinishedStreamError(this.provider);
    let finish = this.finish;
    if (finish === "stop" && this.calls.count > 0) finish = "tool_calls";
    const calls = this.calls.complete(finish);
    const out: ModelStreamEvent[] = [...calls];
    if (this.usage) out.push({ type: "usage", usage: this.usage });
    if (this.sawReasoning) {
      const content = [...this.parts.values()].map((part) => {
        if (part.type !== "tool-call") return part;
        const call = calls[this.callIndex.get(String(part.toolCallId)) ?? -1];
        return { ...part, input: parseInput(call?.args ?? "{}") };
      });
      out.push({ type: "finish", reason: finish, providerData: { [replayKey(this.provider)]: { content } } });
    } else {
      out.push({ type: "finish", reason: finish });
    }
    return out;
  }

  /** The kept part for `key` (created on first sight), with provider metadata merged in. */
  private keep(key: string, fresh: KeptPart, metadata: unknown): KeptPart {
    let part = this.parts.get(key);
    if (!part) {
      part = fresh;
      this.parts.set(key, part);
    }
    const meta = asRecord(metadata);
    if (meta) {
      const options = asRecord(part.providerOptions) ?? {};
      for (const [provider, values] of Object.entries(meta)) {
        options[provider] = { ...(asRecord(options[provider]) ?? {}), ...(asRecord(values) ?? {}) };
      }
      part.providerOptions = options;
    }
    return part;
  }
}

function parseInput(args: string): unknown {
  try {
    return JSON.parse(args);
  } catch {
    return {};
  }
}

/** v2 finish reasons are strings; v3 ones are `{ unified, raw }`. */
function finishReason(reason: unknown): FinishReason {
  const unified = typeof reason === "string" ? reason : asRecord(reason)?.unified;
  switch (unified) {
    case "length":
      return "length";
    case "content-filter":
      return "content_filter";
    case "tool-calls":
      return "tool_calls";
    default:
      return "stop";
  }
}

/** v2 usage is flat numbers; v3 nests `{ total, cacheRead… }` objects. */
function usageOf(usage: unknown): Partial<Usage> | undefined {
  const record = asRecord(usage);
  if (!record) return undefined;
  const input = asRecord(record.inputTokens);
  const output = asRecord(record.outputTokens);
  const out: Partial<Usage> = {};
  if (input || output) {
    const inputTokens = num(input?.total) ?? 0;
    const outputTokens = num(output?.total) ?? 0;
    Object.assign(out, { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens });
    const cached = num(input?.cacheRead);
    if (cached !== undefined) out.cachedInputTokens = cached;
    const reasoning = num(output?.reasoning);
    if (reasoning !== undefined) out.reasoningTokens = reasoning;
    return out;
  }
  const inputTokens = num(record.inputTokens) ?? 0;
  const outputTokens = num(record.outputTokens) ?? 0;
  Object.assign(out, {
    inputTokens,
    outputTokens,
    totalTokens: num(record.totalTokens) ?? inputTokens + outputTokens,
  });
  const cached = num(record.cachedInputTokens);
  if (cached !== undefined) out.cachedInputTokens = cached;
  const reasoning = num(record.reasoningTokens);
  if (reasoning !== undefined) out.reasoningTokens = reasoning;
  return out;
}

function describeWarning(warning: unknown): string {
  const record = asRecord(warning) ?? {};
  const subject = record.feature ?? record.setting ?? asRecord(record.tool)?.name;
  const details = typeof record.details === "string" ? `: ${record.details}` : "";
  if (typeof record.message === "string") return record.message;
  return `${String(record.type ?? "warning")} ${String(subject ?? "")}${details}`.trim();
}
