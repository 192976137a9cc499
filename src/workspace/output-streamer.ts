import type { RunContext } from "../contract/run-context.js";

/** `tool_call_update`s of streamed output: at most one per this many ms… */
const UPDATE_INTERVAL_MS = 250;
/** …each with at most this much of the output since the last one. */
const MAX_UPDATE_CHARS = 8_000;

/** Streams output to `tool_call_update`, at most one update per interval, each bounded in size. */
export class OutputStreamer {
  #pending = "";
  #timer: NodeJS.Timeout | undefined;
  #last = 0;

  constructor(readonly ctx: RunContext) {}

  push(text: string): void {
    this.#pending += text;
    if (this.#pending.length > MAX_UPDATE_CHARS * 2) this.#pending = this.#pending.slice(-MAX_UPDATE_CHARS);
    if (this.#timer) return;
    const wait = Math.max(0, this.#last + UPDATE_INTERVAL_MS - Date.now());
    this.#timer = setTimeout(() => this.#flush(), wait);
  }

  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#flush();
  }

  #flush(): void {
    this.#timer = undefined;
    if (!this.#pending) return;
    let output = this.#pending;
    if (output.length > MAX_UPDATE_CHARS) output = `[...]\n${output.slice(-MAX_UPDATE_CHARS)}`;
    this.#pending = "";
    this.#last = Date.now();
    this.ctx.update({ output });
  }
}
