/**
 * Assembles streamed tool calls: argument fragments arrive per call (possibly interleaved
 * across calls); the complete calls are emitted once the turn's finish reason is known.
 */
import { randomUUID } from "node:crypto";
import type { FinishReason, ModelStreamEvent } from "../model/types.js";
import { repairToolArguments } from "./json-repair.js";

/**
 * A complete `tool_call` event. When the arguments had to be repaired, `args` holds the
 * repaired JSON, `rawArgs` what the model sent, and `repairs` what was fixed.
 */
export type ToolCallEvent = Extract<ModelStreamEvent, { type: "tool_call" }> & {
  rawArgs?: string;
  repairs?: string[];
};

/** `end`: the last character of `args` that is not whitespace (kept as fragments arrive). */
type PendingCall = { id: string | undefined; name: string; args: string; end: string };

/** The last character of `text` that is not whitespace, or `fallback` when it has none. */
function lastVisible(text: string, fallback: string): string {
  for (let i = text.length - 1; i >= 0; i--) {
    const ch = text[i]!;
    if (ch !== " " && ch !== "\n" && ch !== "\r" && ch !== "\t") return ch;
  }
  return fallback;
}

/** Collects the calls of one turn, addressed by their order of appearance (0, 1, 2…). */
export class ToolCallAssembler {
  private readonly calls: PendingCall[] = [];

  get count(): number {
    return this.calls.length;
  }

  /** Begins a new call and returns its index together with the first delta event. */
  start(id: string | undefined, name: string | undefined, argsDelta = ""): [number, ModelStreamEvent] {
    const index = this.calls.length;
    this.calls.push({
      id: id || undefined,
      name: name ?? "",
      args: argsDelta,
      end: lastVisible(argsDelta, ""),
    });
    const event: ModelStreamEvent = { type: "tool_call_delta", index, argsDelta };
    if (id) event.id = id;
    if (name) event.name = name;
    return [index, event];
  }

  /** Adds to call `index`; `name` and `id` fill in what earlier fragments lacked. */
  append(index: number, argsDelta: string, more: { id?: string; name?: string } = {}): ModelStreamEvent {
    const call = this.calls[index]!;
    call.args += argsDelta;
    call.end = lastVisible(argsDelta, call.end);
    const event: ModelStreamEvent = { type: "tool_call_delta", index, argsDelta };
    if (more.id && !call.id) {
      call.id = more.id;
      event.id = more.id;
    }
    if (more.name && !call.name) {
      call.name = more.name;
      event.name = more.name;
    }
    return event;
  }

  /** Replaces the arguments of call `index` with the provider's final text (authoritative). */
  setArguments(index: number, args: string): void {
    const call = this.calls[index]!;
    call.args = args;
    call.end = lastVisible(args, "");
  }

  idOf(index: number): string | undefined {
    return this.calls[index]?.id;
  }

  /**
   * Whether a fragment naming `name` (and no id) begins a call after call `index` rather than
   * adding to it: that call is named already, and either by another name or with arguments
   * that are whole JSON. Servers that send each call whole without an id (Gemini's
   * compatible endpoint, some local ones) are told apart this way; one that repeats the name
   * on every fragment of a call is not split.
   */
  followsWholeCall(index: number, name: string): boolean {
    const call = this.calls[index];
    if (call === undefined || call.name === "") return false;
    if (call.name !== name) return true;
    // Whole JSON arguments end with a closing bracket: anything else is a call still under way,
    // told without looking at the arguments (a server repeating the name on every fragment of a
    // long call had every fragment parse all of them so far: quadratic in their length).
    if (call.end !== "}" && call.end !== "]") return false;
    try {
      JSON.parse(call.args);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * The complete calls, in order. Empty arguments become `{}` (several APIs send nothing for
   * a tool without parameters). Malformed JSON is repaired when that is unambiguous, except
   * after a `length` finish: those arguments were cut off and will not run anyway.
   */
  complete(finish: FinishReason): ToolCallEvent[] {
    return this.calls.map((call, index) => {
      const raw = call.args.trim() === "" ? "{}" : call.args;
      const event: ToolCallEvent = {
        type: "tool_call",
        index,
        id: call.id ?? generatedCallId(),
        name: call.name,
        args: raw,
      };
      if (finish !== "length") {
        const repaired = repairToolArguments(raw);
        if (repaired) {
          event.args = repaired.text;
          event.rawArgs = call.args;
          event.repairs = repaired.repairs;
        }
      }
      return event;
    });
  }
}

/** For servers that send a call without an id (some local OpenAI-compatible servers). */
export function generatedCallId(): string {
  return `call_${randomUUID().replaceAll("-", "").slice(0, 24)}`;
}
