import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** argv: status file, command, args. Writes "<code> <signal>\n" once the command has exited. */
const WRAPPER = `
const { spawn } = require("node:child_process");
const { writeFileSync } = require("node:fs");
const { constants } = require("node:os");
process.on("SIGINT", () => {});
const [file, command, ...args] = process.argv.slice(1);
const child = spawn(command, args, { stdio: "inherit" });
child.on("exit", (code, signal) => {
  const status = code ?? 128 + (constants.signals[signal] ?? 0);
  writeFileSync(file, status + " " + (signal ?? "") + "\\n");
  process.exit(status);
});
`;

/**
 * A real pseudo-terminal driven through tmux: `start` a command in a detached session, `send`
 * keys as a person would type them, and `waitFor` text on the screen. Each instance has its own
 * tmux server (socket), so tests never touch another tmux.
 */
export class Terminal {
  readonly #socket = `quiver-test-${process.pid}-${randomBytes(4).toString("hex")}`;
  readonly #statusFile = join(tmpdir(), `${this.#socket}.status`);
  #started = false;

  /**
   * Runs `command` under a small Node wrapper that records its exit code in a file: tmux 3.3
   * loses `pane_dead_status` when the pty closes before the process is reaped. The wrapper
   * ignores SIGINT and shares the terminal's process group, so Ctrl+C reaches the command
   * exactly as it would from a shell prompt, and nothing else acts on it.
   */
  start(command: string[], options: { cwd: string; env: Record<string, string> }): void {
    const env = Object.entries(options.env).flatMap(([k, v]) => ["-e", `${k}=${v}`]);
    const wrapped = [process.execPath, "-e", WRAPPER, this.#statusFile, ...command];
    this.#tmux([
      ...["new-session", "-d", "-s", "t", "-x", "120", "-y", "50", "-c", options.cwd, ...env, ...wrapped],
      ...[";", "set-option", "-t", "t", "remain-on-exit", "on"],
      // Lets a program's OSC 52 land in tmux's paste buffers, where `clipboard()` sees it.
      ...[";", "set-option", "-s", "set-clipboard", "on"],
    ]);
    this.#started = true;
  }

  /** Waits (bounded) for the command to exit; returns its exit code (128 + n for signal n). */
  async exitCode(timeoutMs = 10_000): Promise<number> {
    return (await this.exit(timeoutMs)).code;
  }

  /** Waits (bounded) for the command to exit: its code as a shell reports it, and the signal that ended it, if any. */
  async exit(timeoutMs = 10_000): Promise<{ code: number; signal: string | undefined }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (existsSync(this.#statusFile)) {
        const written = readFileSync(this.#statusFile, "utf8");
        if (written.endsWith("\n")) {
          const [code = "", signal] = written.trim().split(" ");
          return { code: Number(code), signal: signal || undefined };
        }
      }
      if (Date.now() > deadline)
        throw new Error(`the command did not exit; the terminal shows:\n${this.screen()}`);
      await new Promise((ok) => setTimeout(ok, 100));
    }
  }

  /** Keys as tmux names them: literal text, "Enter", "Down", "C-c", "C-d". */
  send(...keys: string[]): void {
    this.#tmux(["send-keys", "-t", "t", ...keys]);
  }

  /** Types text literally (no key-name interpretation), without pressing Enter. */
  type(text: string): void {
    this.#tmux(["send-keys", "-t", "t", "-l", text]);
  }

  /**
   * Everything printed so far, scrollback included. With `escapes`, the text keeps its styles
   * as SGR sequences (`\x1b[31m` for red…), to tell colored output from plain.
   */
  screen(options: { escapes?: boolean } = {}): string {
    return this.#tmux([
      "capture-pane",
      "-p",
      "-J",
      ...(options.escapes ? ["-e"] : []),
      "-S",
      "-2000",
      "-t",
      "t",
    ]);
  }

  /** Waits until the screen matches (bounded); returns the screen. */
  async waitFor(pattern: string | RegExp, timeoutMs = 10_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const screen = this.screen();
      if (typeof pattern === "string" ? screen.includes(pattern) : pattern.test(screen)) return screen;
      if (Date.now() > deadline)
        throw new Error(`the terminal never showed ${pattern}; it shows:\n${screen}`);
      await new Promise((ok) => setTimeout(ok, 100));
    }
  }

  /** The pane's title, which a program sets with OSC 0 or OSC 2. */
  title(): string {
    return this.#tmux(["display-message", "-p", "-t", "t", "#{pane_title}"]).trim();
  }

  /** What programs put on the clipboard (OSC 52), as tmux's paste buffers; "" when nothing. */
  clipboard(): string {
    return this.#tmux(["list-buffers", "-F", "#{buffer_sample}"]).trim();
  }

  /** How many times `text` appears on the screen so far. */
  count(text: string): number {
    return this.screen().split(text).length - 1;
  }

  close(): void {
    rmSync(this.#statusFile, { force: true });
    if (!this.#started) return;
    try {
      this.#tmux(["kill-server"]);
    } catch {
      // already gone
    }
  }

  #tmux(args: string[]): string {
    return execFileSync("tmux", ["-L", this.#socket, ...args], { encoding: "utf8", timeout: 5_000 });
  }
}
