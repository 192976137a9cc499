import { flag, parseCommand, text } from "./options.js";
import { openExistingStore } from "./store-option.js";
import { colorsFor } from "./terminal.js";
import { terminalJson, terminalText } from "./terminal-text.js";
import { EXIT, SESSIONS_HELP, UsageError } from "./usage.js";

/** `quiver sessions list | clear <id>` over a store. */
export async function sessionsCommand(args: string[]): Promise<number> {
  const parsed = parseCommand(
    args,
    { store: { type: "string" }, json: { type: "boolean" }, help: { type: "boolean", short: "h" } },
    SESSIONS_HELP,
  );
  const [sub, ...rest] = parsed.positionals;
  if (flag(parsed, "help") || sub === "help") {
    process.stdout.write(`${SESSIONS_HELP}\n`);
    return EXIT.completed;
  }
  if (sub !== "list" && sub !== "clear")
    throw new UsageError(
      sub ? `unknown sessions command "${sub}"` : "quiver sessions needs a command",
      SESSIONS_HELP,
    );
  if (sub === "list" && rest.length)
    throw new UsageError("quiver sessions list takes no arguments", SESSIONS_HELP);
  if (sub === "clear" && rest.length !== 1)
    throw new UsageError("quiver sessions clear takes <sessionId>", SESSIONS_HELP);
  const opened = await openExistingStore(text(parsed, "store"));
  try {
    if (sub === "clear") {
      const sessionId = rest[0]!;
      const runs = await opened.store.listRuns({ sessionId });
      await opened.store.clearSession(sessionId);
      process.stdout.write(
        runs.length
          ? `cleared session ${sessionId} (${runs.length} run${runs.length === 1 ? "" : "s"})\n`
          : `session ${sessionId} had no runs\n`,
      );
      return EXIT.completed;
    }
    const sessions = await opened.store.listSessions();
    if (flag(parsed, "json")) {
      process.stdout.write(`${terminalJson(JSON.stringify(sessions))}\n`);
      return EXIT.completed;
    }
    if (sessions.length === 0) {
      process.stdout.write("no sessions stored\n");
      return EXIT.completed;
    }
    const c = colorsFor(process.stdout);
    const when = (ms: number) => new Date(ms).toISOString().replace("T", " ").slice(0, 19);
    const rows = sessions.map((s) => [
      terminalText(s.sessionId),
      String(s.runs),
      when(s.startedAt),
      when(s.updatedAt),
    ]);
    const header = ["SESSION", "RUNS", "STARTED (UTC)", "UPDATED (UTC)"];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (cells: string[]) =>
      cells
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join("  ")
        .trimEnd();
    process.stdout.write(`${c.dim(line(header))}\n${rows.map(line).join("\n")}\n`);
    return EXIT.completed;
  } finally {
    await opened.store.close();
  }
}
