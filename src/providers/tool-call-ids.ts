/**
 * Tool-call ids on the wire. Some APIs restrict them (Anthropic: `^[a-zA-Z0-9_-]+$`; OpenAI
 * chat: at most 40 characters), and a transcript may hold ids another provider or the runner
 * made. One `WireCallIds` per request maps every call and its result to the same valid id.
 */
import { createHash } from "node:crypto";
import type { ToolCall } from "../model/types.js";

const SAFE = /^[A-Za-z0-9_-]+$/;

/**
 * An id that matches `^[A-Za-z0-9_-]{1,maxLength}$`: unchanged when it already does, else
 * sanitised, shortened and suffixed with a hash of the original (so distinct ids stay distinct).
 *
 * @example
 * safeCallId("call:1/a", 40) // → "call_1_a_" + 8 hex characters
 */
export function safeCallId(id: string, maxLength: number): string {
  if (id.length > 0 && id.length <= maxLength && SAFE.test(id)) return id;
  const hash = createHash("sha256").update(id).digest("hex").slice(0, 8);
  const stem = id.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, Math.max(0, maxLength - 9));
  return stem === "" ? `call_${hash}`.slice(0, maxLength) : `${stem}_${hash}`;
}

/** Maps a transcript's calls and results to wire ids, consistently within one request. */
export class WireCallIds {
  private readonly byCallId = new Map<string, string>();
  private readonly used = new Set<string>();

  constructor(private readonly maxLength = 64) {}

  /**
   * The wire id of a call: the provider's own id when it has one (what the model saw), unless
   * an earlier call in this transcript already used it (some local servers number calls
   * `call_0`, `call_1`… afresh each turn); then the runner's unique id.
   */
  forCall(call: ToolCall): string {
    let wire = safeCallId(call.providerCallId ?? call.id, this.maxLength);
    if (this.used.has(wire)) wire = safeCallId(call.id, this.maxLength);
    if (this.used.has(wire)) wire = safeCallId(`${call.id}#${this.used.size}`, this.maxLength);
    this.used.add(wire);
    this.byCallId.set(call.id, wire);
    return wire;
  }

  /** The wire id for a tool result answering the call with transcript id `toolCallId`. */
  forResult(toolCallId: string): string {
    return this.byCallId.get(toolCallId) ?? safeCallId(toolCallId, this.maxLength);
  }
}
