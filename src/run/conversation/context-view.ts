import { FENCE_NOTE, fence } from "../../builtin-tools/fence.js";
import type { Message, ToolMessage } from "../../model/types.js";
import { contentChars, type ImageRule, messageChars } from "./estimate.js";

/** A tool result the model now sees as a one-line stub. `index` is its place in the transcript. */
export type ElidedResult = { callId: string; name: string; index: number; chars: number };

/** What one `compaction` event changed: results elided, and maybe older turns summarised. */
export type CompactionChange = {
  elided: ElidedResult[];
  /** Transcript messages `[0, messages)` are now one summary message with `text`. */
  summary?: { text: string; messages: number };
};

const RECALL = "recall_tool_result";

/**
 * The one line an elided result becomes: how much text it held, and its images or files (whose
 * size estimate says nothing a model can use), so the model knows what recalling it gives back.
 */
export function elisionStub(message: ToolMessage): string {
  const { content } = message;
  let chars = 0;
  const media: string[] = [];
  if (typeof content === "string") chars = content.length;
  else {
    for (const block of content) {
      if (block.type === "text") chars += block.text.length;
      else if (block.type !== "reasoning") media.push(block.type === "file" ? "file" : block.type);
    }
  }
  const parts = [`${thousands(chars)} chars`];
  for (const kind of ["image", "file", "audio"]) {
    const n = media.filter((m) => m === kind).length;
    if (n) parts.push(`${n} ${kind === "audio" ? "audio part" : kind}${n > 1 ? "s" : ""}`);
  }
  const held = parts.length > 1 ? `${parts.slice(0, -1).join(", ")} and ${parts.at(-1)}` : parts[0];
  return `[result of ${message.name} elided: ${held}; ${RECALL}(${JSON.stringify(message.toolCallId)}) to read it]`;
}

/** `12345` → `"12,345"`; `toLocaleString` goes through Intl, ~50× slower, and this runs per elision. */
function thousands(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** No stub is longer than this (a tool name is at most 64 chars): a longer result always shrinks. */
const MAX_STUB_CHARS = 256;

/** Opens the message that stands for the summarised turns. */
export const SUMMARY_HEADING =
  "[Summary of the earlier part of this conversation, condensed to fit the context window]";

/**
 * What the model is shown of a transcript: the transcript itself until it grows too long,
 * then with old tool results replaced by stubs and the oldest turns by a summary. The
 * transcript is never changed; the view is kept beside it and updated incrementally — new
 * messages are appended as they arrive, an elision replaces one entry — so keeping it costs
 * O(new messages) per turn, however long the conversation. Only a summary rebuilds it (rare,
 * and it costs a model call anyway).
 *
 * Every change is a `CompactionChange`; applying the same changes to the same transcript gives
 * the same view, which is how `replay()` and `Runner.resume` rebuild what the model saw.
 */
export class ContextView {
  readonly #transcript: readonly Message[];
  /** The view: `#head` (pinned system messages and the summary), then the transcript from `#cut`. */
  #messages: Message[] = [];
  #head: Message[] = [];
  #headChars = 0;
  #cut = 0;
  #synced = 0;
  #lastSynced: Message | undefined;
  /** The estimated size of what the view shows for each transcript index at or after `#cut`. */
  #sizes: number[] = [];
  #chars = 0;
  /** Transcript indexes where a turn begins: a cut there never separates calls from results. */
  #turnStarts: number[] = [];
  /** Elision moves forward only: everything before it was looked at already. */
  #cursor = 0;
  /** Results the model no longer sees in full (elided or summarised): call id → transcript index. */
  readonly #hidden = new Map<string, number>();
  #summary: string | undefined;
  /** Whether the summary covers untrusted output (then it is fenced, and so is the next one). */
  #summaryUntrusted = false;
  /** System messages of summarised turns: instructions are never summarised away. */
  #pinned: Message[] = [];

  /** How images count in the estimate: by the rule of the provider the view is sent to. */
  imageRule: ImageRule = "openai";

  constructor(transcript: readonly Message[]) {
    this.#transcript = transcript;
  }

  /** The messages to send: a live array, read-only to the model. */
  get messages(): readonly Message[] {
    return this.#messages;
  }

  /** The estimated size of the view, in characters. */
  get chars(): number {
    return this.#chars;
  }

  /** Whether the view differs from the transcript. */
  get compacted(): boolean {
    return this.#hidden.size > 0 || this.#summary !== undefined;
  }

  /** Where the kept tail starts: messages before it are summarised. */
  get cut(): number {
    return this.#cut;
  }

  get summary(): string | undefined {
    return this.#summary;
  }

  /** The results shown as stubs (not those inside the summary), in transcript order. */
  elided(): ElidedResult[] {
    const elided: ElidedResult[] = [];
    for (const [callId, index] of this.#hidden) {
      const message = this.#transcript[index];
      if (index < this.#cut || message?.role !== "tool") continue;
      elided.push({
        callId,
        name: message.name,
        index,
        chars: contentChars(message.content, this.imageRule),
      });
    }
    return elided.sort((a, b) => a.index - b.index);
  }

  /** The transcript index of a result the model sees only as a stub or through the summary. */
  hiddenIndex(callId: string): number | undefined {
    return this.#hidden.get(callId);
  }

  /** The estimated size of the view as it was when the transcript had `length` messages. */
  charsBefore(length: number): number {
    let chars = this.#headChars;
    const end = Math.min(length, this.#synced);
    for (let index = this.#cut; index < end; index++) chars += this.#sizes[index]!;
    return chars;
  }

  /** Mirrors the messages appended since the last call: O(new messages). */
  sync(): void {
    const transcript = this.#transcript;
    // The transcript was rewritten (a handoff's inputFilter): start over from the new one.
    if (
      this.#synced > transcript.length ||
      (this.#synced > 0 && transcript[this.#synced - 1] !== this.#lastSynced)
    ) {
      this.reset();
    }
    for (let index = this.#synced; index < transcript.length; index++) {
      const message = transcript[index]!;
      const size = messageChars(message, this.imageRule);
      this.#sizes[index] = size;
      this.#chars += size;
      this.#messages.push(message);
      if (startsTurn(message, transcript[index - 1])) this.#turnStarts.push(index);
    }
    this.#synced = transcript.length;
    this.#lastSynced = transcript[transcript.length - 1];
  }

  /** Forgets every change: the view is the transcript again. */
  reset(): void {
    this.#messages = [];
    this.#head = [];
    this.#headChars = 0;
    this.#cut = 0;
    this.#synced = 0;
    this.#lastSynced = undefined;
    this.#sizes = [];
    this.#chars = 0;
    this.#turnStarts = [];
    this.#cursor = 0;
    this.#hidden.clear();
    this.#summary = undefined;
    this.#summaryUntrusted = false;
    this.#pinned = [];
  }

  /** Where the last `turns` turns begin (everything from there stays whole). */
  windowStart(turns: number): number {
    const starts = this.#turnStarts;
    const start = starts.length >= turns ? starts[starts.length - turns]! : 0;
    return Math.max(start, this.#cut);
  }

  /**
   * Replaces tool results with stubs, oldest first, up to `before`, until `fits()` says the
   * view is small enough. A result shorter than its stub is left alone.
   */
  elideOldest(before: number, fits: () => boolean): ElidedResult[] {
    const elided: ElidedResult[] = [];
    const transcript = this.#transcript;
    let index = Math.max(this.#cursor, this.#cut);
    for (; index < before && !fits(); index++) {
      const message = transcript[index]!;
      if (message.role !== "tool" || this.#hidden.has(message.toolCallId)) continue;
      const chars = contentChars(message.content, this.imageRule);
      if (chars <= MAX_STUB_CHARS && elisionStub(message).length >= chars) continue;
      elided.push({ callId: message.toolCallId, name: message.name, index, chars });
      this.#elide(index, message);
    }
    this.#cursor = index;
    return elided;
  }

  /** Replaces the transcript's messages `[cut, upTo)` (and any earlier summary) with `text`. */
  summarize(upTo: number, text: string): void {
    const transcript = this.#transcript;
    if (upTo <= this.#cut || upTo > this.#synced) return;
    let dropped = 0;
    for (let index = this.#cut; index < upTo; index++) {
      const message = transcript[index]!;
      dropped += this.#sizes[index]!;
      if (message.role === "tool" && !this.#hidden.has(message.toolCallId))
        this.#hidden.set(message.toolCallId, index);
      if (message.role === "system") this.#pinned.push(message);
    }
    // A summary of third-party text is third-party text: fenced like what it summarizes, and
    // marked so a conversation continued from it stays tainted.
    let untrusted = this.#summaryUntrusted;
    for (let index = this.#cut; index < upTo && !untrusted; index++) {
      const message = transcript[index]!;
      if (message.role === "tool" && message.untrusted) untrusted = true;
    }
    const body = untrusted
      ? `${FENCE_NOTE}\n${fence(text, { source: "a summary of earlier turns that read third-party material" })}`
      : text;
    const summary: Message = { role: "user", content: `${SUMMARY_HEADING}\n\n${body}` };
    const head = [...this.#pinned, summary];
    let headChars = 0;
    for (const message of head) headChars += messageChars(message, this.imageRule);
    const tail = this.#messages.slice(this.#head.length + (upTo - this.#cut));
    this.#messages = [...head, ...tail];
    this.#chars += headChars - this.#headChars - dropped;
    this.#head = head;
    this.#headChars = headChars;
    this.#cut = upTo;
    this.#summary = text;
    this.#summaryUntrusted = untrusted;
    this.#cursor = Math.max(this.#cursor, upTo);
    // Turn starts before the cut are never needed again.
    const firstKept = this.#turnStarts.findIndex((start) => start >= upTo);
    this.#turnStarts = firstKept < 0 ? [] : this.#turnStarts.slice(firstKept);
  }

  /** Applies a change recorded by a `compaction` event (replay, resume). */
  apply(change: CompactionChange): void {
    this.sync();
    const transcript = this.#transcript;
    for (const { callId, index } of change.elided) {
      const message = transcript[index];
      // A log that does not match its transcript is skipped rather than trusted.
      if (message?.role !== "tool" || message.toolCallId !== callId || index < this.#cut) continue;
      if (this.#hidden.has(callId)) continue;
      this.#elide(index, message);
      this.#cursor = Math.max(this.#cursor, index + 1);
    }
    if (change.summary) this.summarize(change.summary.messages, change.summary.text);
  }

  #elide(index: number, message: ToolMessage): void {
    const stub: ToolMessage = {
      role: "tool",
      toolCallId: message.toolCallId,
      name: message.name,
      content: elisionStub(message),
      isError: message.isError,
    };
    const size = messageChars(stub, this.imageRule);
    this.#messages[this.#head.length + index - this.#cut] = stub;
    this.#chars += size - this.#sizes[index]!;
    this.#sizes[index] = size;
    this.#hidden.set(message.toolCallId, index);
  }
}

/**
 * A turn begins with the user's message (the first of a run of user or system messages), or
 * with a model reply that no user message introduced; tool results never begin one.
 */
function startsTurn(message: Message, previous: Message | undefined): boolean {
  if (message.role === "tool") return false;
  if (!previous) return true;
  const asks = (m: Message) => m.role === "user" || m.role === "system";
  return !asks(previous);
}

const views = new WeakMap<readonly Message[], ContextView>();

/** The view kept over a run's transcript, if the run compacts its context. */
export function viewOf(transcript: readonly Message[]): ContextView | undefined {
  return views.get(transcript);
}

/** The view over `transcript`, made on first use. */
export function ensureView(transcript: readonly Message[]): ContextView {
  let view = views.get(transcript);
  if (!view) {
    view = new ContextView(transcript);
    views.set(transcript, view);
  }
  return view;
}
