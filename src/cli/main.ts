#!/usr/bin/env node
/**
 * The `quiver` command. Only this file loads at start; each command's module (and the
 * packages it needs: prompts, stores, the server) loads when that command runs.
 */
import { readFileSync } from "node:fs";
import { exitProcess } from "./interrupt.js";
import { EXIT, MAIN_HELP, UsageError } from "./usage.js";

type Command = (args: string[]) => Promise<number>;

const commands: Record<string, () => Promise<Command>> = {
  run: async () => (await import("./run-command.js")).runCommand,
  chat: async () => (await import("./chat-command.js")).chatCommand,
  serve: async () => (await import("./serve-command.js")).serveCommand,
  mcp: async () => (await import("./mcp-command.js")).mcpCommand,
  runs: async () => (await import("./runs-command.js")).runsCommand,
  sessions: async () => (await import("./sessions-command.js")).sessionsCommand,
  demo: async () => (await import("./demo-command.js")).demoCommand,
  init: async () => (await import("./init-command.js")).initCommand,
};

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === "-h" || name === "--help" || name === "help") {
    process.stdout.write(`${MAIN_HELP}\n`);
    return EXIT.completed;
  }
  if (name === "-v" || name === "--version") {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
    process.stdout.write(`${pkg.version}\n`);
    return EXIT.completed;
  }
  if (name === undefined) throw new UsageError("no command given", MAIN_HELP);
  const load = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!load) throw new UsageError(`unknown command "${name}"`, MAIN_HELP);
  return (await load())(rest);
}

/**
 * Prints a failure the way a person can act on it: usage errors with help, others with a hint.
 * "error:" is red on a terminal (never with NO_COLOR), like the failures a run renders.
 */
async function report(error: unknown): Promise<number> {
  const { colorsFor } = await import("./terminal.js");
  // A failure's message may quote a model, a tool, a peer or a store.
  const { terminalText } = await import("./terminal-text.js");
  const label = colorsFor(process.stderr).red("error:");
  if (error instanceof UsageError) {
    process.stderr.write(`${label} ${terminalText(error.message)}\n\n${error.help}\n`);
    return EXIT.usage;
  }
  const failure = error instanceof Error ? error : new Error(String(error));
  const hint = (failure as { hint?: unknown }).hint;
  process.stderr.write(
    `${label} ${terminalText(failure.message)}\n${typeof hint === "string" ? `hint: ${terminalText(hint)}\n` : ""}`,
  );
  if (process.env.QUIVER_DEBUG) process.stderr.write(`${terminalText(failure.stack ?? "")}\n`);
  return EXIT.failed;
}

const code = await main(process.argv.slice(2)).catch(report);
// Exit explicitly: an agent file may hold servers or timers open. Flush stdout first (a pipe
// or a file is written synchronously on POSIX; a terminal may not be).
process.stdout.write("", () => exitProcess(code));
