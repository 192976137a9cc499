import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";

/**
 * A real pseudo-terminal driven through tmux: `start` a command in a detached session, `send`
 * keys as a person would type them, and `waitFor` text on the screen. Each instance has its own
 * tmux server (socket), so tests never touch another tmux.
 */
export class Terminal {
  readonly #socket = `quiver-test-${process.pid}-${randomBytes(4).toString("hex")}`;
  #started = false;

  /**
   * Runs `command` (no shell in between: a shell in the terminal's process group would get the
   * Ctrl+C too). The pane stays after the command exits, so its screen and exit code can be read.
   */
  start(command: string[], options: { cwd: string; env: Record<string, string> }): void {
    const env = Object.entries(options.env).flatMap(([k, v]) => ["-e", `${k}=${v}`]);
    this.#tmux([
      ...["new-session", "-d", "-s", "t", "-x", "120", "-y", "50", "-c", options.cwd, ...env, ...command],
      ...[";", "set-option", "-t", "t", "remain-on-exit", "on"],
    ]);
    this.#started = true;
  }

  /** Waits (bounded) for the command to exit; returns its exit code. */
  async exitCode(timeoutMs = 10_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const [dead, status] = this.#tmux([
        "display-message",
        "-p",
        "-t",
        "t",
        "#{pane_dead} #{pane_dead_status}",
      ])
        .trim()
        .split(" ");
      if (dead === "1") return Number(status);
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

  /** Everything printed so far, scrollback included. */
  screen(): string {
    return this.#tmux(["capture-pane", "-p", "-J", "-S", "-2000", "-t", "t"]);
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

  /** How many times `text` appears on the screen so far. */
  count(text: string): number {
    return this.screen().split(text).length - 1;
  }

  close(): void {
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
