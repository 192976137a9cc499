import { Writable } from "node:stream";

/**
 * The terminal a prompt draws on, and how many rows down from where it started the cursor is.
 *
 * A clack prompt stopped by its `signal` closes without drawing a last frame, so the live one
 * (options and cursor) would stay on screen as if it still asked. Counting the rows it moved
 * through — line feeds down, cursor moves up and down (the only moves clack makes) — lets
 * `clear()` take the whole prompt away.
 *
 * @example
 * const output = new PromptOutput(process.stderr);
 * await clack.select({ message, options, signal, output });
 * if (signal.aborted) output.clear();
 */
export class PromptOutput extends Writable {
  readonly #target: NodeJS.WriteStream;
  #row = 0;
  readonly #onResize = () => this.emit("resize");

  constructor(target: NodeJS.WriteStream) {
    super({ decodeStrings: false });
    this.#target = target;
    target.on("resize", this.#onResize);
  }

  /** clack wraps its frames at the terminal's width and reads its height. */
  get columns(): number {
    return this.#target.columns;
  }

  get rows(): number {
    return this.#target.rows;
  }

  get isTTY(): boolean {
    return this.#target.isTTY;
  }

  override _write(
    chunk: string | Buffer,
    _encoding: BufferEncoding,
    done: (error?: Error | null) => void,
  ): void {
    const text = String(chunk);
    this.#row += count(text, "\n");
    for (const [, n, direction] of text.matchAll(CURSOR_MOVE)) {
      const rows = n === "" ? 1 : Number(n);
      this.#row += direction === "B" ? rows : -rows;
    }
    // Passed on at once and acknowledged at once, so nothing waits in this stream's buffer:
    // `clear()` writes straight to the terminal and must come after everything drawn so far.
    this.#target.write(chunk);
    done();
  }

  /** Erases everything the prompt drew, leaving the cursor where it started. */
  clear(): void {
    if (this.#row > 0) this.#target.write(`\u001b[${this.#row}A`);
    this.#target.write("\r\u001b[J");
    this.#row = 0;
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    this.#target.off("resize", this.#onResize);
    done(error);
  }
}

/** CSI n A (up) and CSI n B (down), as sisteransi writes them for clack. */
const CURSOR_MOVE = /\u001b\[(\d*)([AB])/g;

function count(text: string, char: string): number {
  let n = 0;
  for (let i = text.indexOf(char); i !== -1; i = text.indexOf(char, i + 1)) n++;
  return n;
}
