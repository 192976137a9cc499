import { createInterface, type Interface } from "node:readline";

/** What reading a line gave: the text, Ctrl+C on an empty line, or the end of input (Ctrl+D). */
export type LineResult = { line: string } | { interrupt: true } | { eof: true };

/**
 * Reads the user's messages. On a terminal each question gets its own readline (closed while
 * the agent works, so approval prompts own the keyboard and Ctrl+C reaches the process as a
 * signal); from a pipe one reader serves every line, so no buffered input is lost.
 */
export class LineReader {
  readonly #history: string[] = [];
  #piped: { rl: Interface; lines: AsyncIterator<string> } | undefined;

  async read(prompt: string): Promise<LineResult> {
    if (!process.stdin.isTTY) return this.#readPiped(prompt);
    for (;;) {
      const result = await this.#readTerminal(prompt);
      if (result !== "cleared") return result;
    }
  }

  close(): void {
    this.#piped?.rl.close();
  }

  async #readPiped(prompt: string): Promise<LineResult> {
    if (!this.#piped) {
      const rl = createInterface({ input: process.stdin, terminal: false });
      this.#piped = { rl, lines: rl[Symbol.asyncIterator]() };
    }
    process.stdout.write(prompt);
    const next = await this.#piped.lines.next();
    if (next.done) {
      process.stdout.write("\n");
      return { eof: true };
    }
    process.stdout.write(`${next.value}\n`);
    return { line: next.value };
  }

  #readTerminal(prompt: string): Promise<LineResult | "cleared"> {
    return new Promise((resolve) => {
      const rl = createInterface({
        input: process.stdin,
        output: process.stdout,
        terminal: true,
        history: [...this.#history],
        historySize: 200,
      });
      let done = false;
      const finish = (result: LineResult | "cleared") => {
        if (done) return;
        done = true;
        rl.close();
        resolve(result);
      };
      rl.on("SIGINT", () => {
        // Ctrl+C clears a half-typed line; on an empty line it leaves.
        const typed = rl.line;
        process.stdout.write("\n");
        finish(typed ? "cleared" : { interrupt: true });
      });
      rl.on("close", () => {
        if (!done) process.stdout.write("\n");
        finish({ eof: true });
      });
      rl.question(prompt, (answer) => {
        if (answer.trim()) this.#history.unshift(answer);
        finish({ line: answer });
      });
    });
  }
}
