import { createInterface, type Interface } from "node:readline";

/**
 * What reading a line gave: the text, Ctrl+C on an empty line, the end of input (Ctrl+D), or
 * `stop` aborted (SIGTERM) while waiting.
 */
export type LineResult = { line: string } | { interrupt: true } | { eof: true } | { stopped: true };

/**
 * Reads the user's messages. On a terminal each question gets its own readline (closed while
 * the agent works, so approval prompts own the keyboard and Ctrl+C reaches the process as a
 * signal); from a pipe one reader serves every line, so no buffered input is lost.
 */
export class LineReader {
  readonly #history: string[] = [];
  #piped: { rl: Interface; lines: AsyncIterator<string> } | undefined;

  async read(prompt: string, stop?: AbortSignal): Promise<LineResult> {
    if (stop?.aborted) return { stopped: true };
    if (!process.stdin.isTTY) return this.#readPiped(prompt, stop);
    for (;;) {
      const result = await this.#readTerminal(prompt, stop);
      if (result !== "cleared") return result;
    }
  }

  close(): void {
    this.#piped?.rl.close();
  }

  async #readPiped(prompt: string, stop?: AbortSignal): Promise<LineResult> {
    if (!this.#piped) {
      const rl = createInterface({ input: process.stdin, terminal: false });
      this.#piped = { rl, lines: rl[Symbol.asyncIterator]() };
    }
    process.stdout.write(prompt);
    const next = await untilStopped(this.#piped.lines.next(), stop);
    if (next === "stopped") {
      process.stdout.write("\n");
      return { stopped: true };
    }
    if (next.done) {
      process.stdout.write("\n");
      return { eof: true };
    }
    process.stdout.write(`${next.value}\n`);
    return { line: next.value };
  }

  #readTerminal(prompt: string, stop?: AbortSignal): Promise<LineResult | "cleared"> {
    return new Promise((resolve) => {
      const rl = createInterface({
        input: process.stdin,
        output: process.stdout,
        terminal: true,
        history: [...this.#history],
        historySize: 200,
      });
      let done = false;
      const onStop = () => {
        process.stdout.write("\n");
        finish({ stopped: true });
      };
      const finish = (result: LineResult | "cleared") => {
        if (done) return;
        done = true;
        stop?.removeEventListener("abort", onStop);
        rl.close();
        resolve(result);
      };
      stop?.addEventListener("abort", onStop, { once: true });
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

/** `pending`, or "stopped" as soon as `stop` aborts (without leaving a listener behind). */
function untilStopped<T>(pending: Promise<T>, stop: AbortSignal | undefined): Promise<T | "stopped"> {
  if (!stop) return pending;
  return new Promise((resolve, reject) => {
    const onStop = () => resolve("stopped");
    stop.addEventListener("abort", onStop, { once: true });
    pending.then(
      (value) => {
        stop.removeEventListener("abort", onStop);
        resolve(value);
      },
      (error: unknown) => {
        stop.removeEventListener("abort", onStop);
        reject(error);
      },
    );
  });
}
