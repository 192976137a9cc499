import type { PermissionDecision } from "../run/config/permissions.js";

/** One simple command of a compound command line, and whether it hides other commands. */
export type CommandPart = {
  text: string;
  /** Contains `$(…)`, backticks, `<(…)`/`>(…)` or an output redirection to a file. */
  opaque: boolean;
};

/**
 * Splits a shell command line into its simple commands at `&&`, `||`, `;`, `|`, `&` and line
 * breaks outside quotes. Commands inside `$(…)`, backticks and process substitutions are
 * returned as parts of their own (so a deny rule sees them), and the part holding them is
 * marked opaque (so an allow rule never approves what it cannot see).
 */
export function splitCommand(command: string): CommandPart[] {
  const parts: CommandPart[] = [];
  const inner: string[] = [];
  let current = "";
  let opaque = false;
  let quote: "'" | '"' | undefined;
  const push = () => {
    const text = current.trim();
    if (text) parts.push({ text, opaque });
    current = "";
    opaque = false;
  };
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!;
    if (quote === "'") {
      current += c;
      if (c === "'") quote = undefined;
      continue;
    }
    if (c === "\\" && i + 1 < command.length) {
      current += c + command[i + 1];
      i++;
      continue;
    }
    if (quote === '"' && c === '"') {
      current += c;
      quote = undefined;
      continue;
    }
    // Substitutions run commands even inside double quotes.
    const substitution =
      (c === "$" || c === "<" || c === ">") && command[i + 1] === "(" ? 2 : c === "`" ? 1 : 0;
    if (substitution) {
      const end = c === "`" ? command.indexOf("`", i + 1) : closingParen(command, i + 2);
      const stop = end === -1 ? command.length : end;
      inner.push(command.slice(i + substitution, stop));
      current += command.slice(i, stop + 1);
      opaque = true;
      i = stop;
      continue;
    }
    if (quote === '"') {
      current += c;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      current += c;
      continue;
    }
    if (c === "#" && (current === "" || /\s$/.test(current))) {
      // A comment runs to the end of the line.
      const end = command.indexOf("\n", i);
      i = end === -1 ? command.length : end - 1;
      continue;
    }
    if (
      c === ";" ||
      c === "\n" ||
      c === "|" ||
      (c === "&" && command[i + 1] !== ">" && command[i - 1] !== ">")
    ) {
      if ((c === "|" || c === "&") && command[i + 1] === c) i++;
      push();
      continue;
    }
    if (c === ">" && !isHarmlessRedirect(command, i)) opaque = true;
    current += c;
  }
  push();
  for (const text of inner) parts.push(...splitCommand(text));
  return parts;
}

function closingParen(text: string, from: number): number {
  let depth = 1;
  let quote: string | undefined;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === "\\" && quote === '"') i++;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === "\\") i++;
    else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return i;
  }
  return -1;
}

/** `2>&1`, `>&2`, `>/dev/null`: redirections that write no file. */
function isHarmlessRedirect(text: string, at: number): boolean {
  const rest = text
    .slice(at + 1)
    .replace(/^>/, "")
    .trimStart();
  return rest.startsWith("&") || rest.startsWith("/dev/null");
}

/** Wrappers that run the command after them: a deny rule looks through them. */
const WRAPPERS =
  /^(?:(?:sudo|command|exec|nohup|time|nice|env(?:\s+-\S+)*)\s+|[A-Za-z_][A-Za-z0-9_]*=\S*\s+)+/;

function normalise(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

function startsWithWord(text: string, prefix: string): boolean {
  const p = normalise(prefix);
  return p !== "" && (text === p || text.startsWith(`${p} `) || (p.endsWith(" ") && text.startsWith(p)));
}

/**
 * The shell's own permission rule: a part matching a `deny` prefix refuses the call in every
 * mode; when every part matches an `allow` prefix (and none hides a command or writes a file
 * through a redirection) the call runs without asking; otherwise it asks, naming the first part
 * not covered. Prefixes match whole words: `git status` allows `git status -s`, not `git statusx`.
 */
export function shellRule(allow: readonly string[], deny: readonly string[]) {
  return (args: unknown): PermissionDecision | undefined => {
    const command = (args as { command?: unknown } | null)?.command;
    if (typeof command !== "string") return undefined;
    const parts = splitCommand(command);
    for (const part of parts) {
      const text = normalise(part.text);
      const bare = text.replace(WRAPPERS, "");
      const hit = deny.find((prefix) => startsWithWord(text, prefix) || startsWithWord(bare, prefix));
      if (hit !== undefined) {
        return {
          behavior: "deny",
          reason: `the shell command part "${text}" matches the deny rule "${hit}"`,
        };
      }
    }
    const uncovered = parts.find(
      (part) => part.opaque || !allow.some((prefix) => startsWithWord(normalise(part.text), prefix)),
    );
    if (parts.length > 0 && uncovered === undefined) return { behavior: "allow" };
    return {
      behavior: "ask",
      reason: uncovered
        ? `shell runs "${normalise(uncovered.text)}", which no allow rule covers${uncovered.opaque ? " (it runs a nested command or redirects output to a file)" : ""}`
        : "shell is destructive",
    };
  };
}
