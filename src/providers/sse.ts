/**
 * A small, incremental Server-Sent Events decoder (the WHATWG event-stream format that
 * OpenAI, Anthropic and every OpenAI-compatible server stream in).
 */

/** The longest line an event stream may send (a whole answer in one `data:` line is a few MB). */
export const MAX_LINE_CHARS = 64 * 1024 * 1024;

/** One dispatched server-sent event. `event` is absent when the server sent no `event:` line. */
export type SseEvent = { event?: string; data: string; id?: string };

/**
 * Feed text as it arrives with `push`; call `end` once the body is done.
 *
 * Lines may end in `\n`, `\r\n` or `\r`; `data:` lines of one event are joined with `\n`;
 * comment lines (`: ping`) are ignored; an `error:` line (llama.cpp) is an event named "error". At the end of the body a final event that lacks its
 * blank line is still dispatched (several OpenAI-compatible servers end that way), but only
 * when its last line is complete: a line cut in the middle (a dropped connection) is
 * discarded rather than parsed as if it were whole.
 *
 * @example
 * const decoder = new SseDecoder();
 * decoder.push('event: ping\ndata: {}\n\n'); // → [{ event: "ping", data: "{}" }]
 */
export class SseDecoder {
  /**
   * The line not ended yet, in the pieces it came in. Kept apart and joined once the line ends:
   * a long line (a large tool call's arguments in one `data:`) arriving in many chunks was
   * appended to and scanned again from its start at every chunk, quadratic in its length.
   */
  private partial: string[] = [];
  private partialChars = 0;
  private data: string[] = [];
  private event: string | undefined;
  private id: string | undefined;
  /** A `\r` ended the previous chunk: a `\n` starting the next one belongs to it. */
  private pendingCarriageReturn = false;

  push(text: string): SseEvent[] {
    const out: SseEvent[] = [];
    let chunk = text;
    if (this.pendingCarriageReturn && chunk.startsWith("\n")) chunk = chunk.slice(1);
    this.pendingCarriageReturn = false;
    let start = 0;
    for (let i = 0; i < chunk.length; i++) {
      const ch = chunk.charCodeAt(i);
      if (ch !== 10 && ch !== 13) continue;
      let line = chunk.slice(start, i);
      if (this.partial.length > 0) {
        this.partial.push(line);
        line = this.partial.join("");
        this.partial = [];
        this.partialChars = 0;
      }
      if (ch === 13) {
        if (i + 1 < chunk.length) {
          if (chunk.charCodeAt(i + 1) === 10) i++;
        } else {
          this.pendingCarriageReturn = true;
        }
      }
      start = i + 1;
      this.line(line, out);
    }
    if (start < chunk.length) {
      this.partialChars += chunk.length - start;
      // A server that never ends its line would otherwise grow it until the request's timeout.
      if (this.partialChars > MAX_LINE_CHARS) {
        throw new Error(
          `the server sent a line of over ${MAX_LINE_CHARS / 1024 / 1024} MiB without ending it: not an event stream a client can hold`,
        );
      }
      this.partial.push(start === 0 ? chunk : chunk.slice(start));
    }
    return out;
  }

  /** The body ended: returns the last event if it was complete but lacked its blank line. */
  end(): SseEvent[] {
    const out: SseEvent[] = [];
    // A partial last line means the connection dropped mid-line: never parse half a line.
    if (this.partial.length === 0 && this.data.length > 0) this.dispatch(out);
    this.partial = [];
    this.partialChars = 0;
    this.data = [];
    return out;
  }

  private line(line: string, out: SseEvent[]): void {
    if (line === "") {
      this.dispatch(out);
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.data.push(value);
    // Not a field of the format: llama.cpp's server reports a failure mid-stream as an
    // `error: {…}` line (then `data: [DONE]`). Dropped, it would pass for an empty answer.
    else if (field === "error") {
      this.event = "error";
      this.data.push(value);
    } else if (field === "event") this.event = value;
    else if (field === "id") this.id = value;
  }

  private dispatch(out: SseEvent[]): void {
    if (this.data.length > 0) {
      const ev: SseEvent = { data: this.data.join("\n") };
      if (this.event !== undefined && this.event !== "") ev.event = this.event;
      if (this.id !== undefined) ev.id = this.id;
      out.push(ev);
    }
    this.data = [];
    this.event = undefined;
  }
}
