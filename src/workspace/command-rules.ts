import type { PermissionDecision } from "../contract/permissions.js";
import { loadedBashParser, withBashTree } from "./bash-parser.js";
import { commandEffect } from "./command-effects.js";
import { type DenyFinding, denyRule, findDenied } from "./deny-rules.js";
import { type PlainCommand, plainCommands } from "./plain-commands.js";

/** The shell's rule for one call's arguments, with what it needs known. */
export type ShellRule = ((args: unknown) => PermissionDecision | undefined) & {
  /** Whether the rule reads the command at all (it has allow or deny prefixes): then it needs the parser. */
  readonly parses: boolean;
  /** The deny rules alone (a "deny" decision, or `undefined`): checked again before a command runs. */
  readonly denies: (command: string) => PermissionDecision | undefined;
};

/**
 * The longest command the rules read. Parsing is linear but not cheap (about 0.3 s for 120 KB
 * on a slow machine, on the event loop), and a longer line is no command a person types: it
 * asks, or is refused when there are deny rules (which cannot vouch for what they did not read).
 */
export const MAX_RULED_COMMAND_CHARS = 65_536;

/**
 * The shell's own permission rule, decided from a parse of the command by a Bash grammar
 * (tree-sitter-bash), failing closed:
 *
 * - `deny`: a command anywhere in the line (nested in substitutions, subshells, `bash -c`,
 *   `eval`, behind `sudo`, `env`, `xargs`, `find -exec`, a path or a backslash…) that matches
 *   a prefix refuses the call in every mode. A convenience, not a boundary (see deny-rules.ts).
 * - `allow`: the call runs without asking only when the parse proves the line is plain simple
 *   commands (literal words, no expansions of any kind, no redirection to a file) joined by
 *   `&&`, `||`, `;`, `|` or line breaks, and each starts with an allow prefix, word by word,
 *   after quote removal: `git status` allows `git status -s` and `"git" status`, not
 *   `git statusx` nor `$GIT status`. Options through which a known program writes a file or
 *   runs another (`git diff --output=…`, `sed -n '1e …'`, `find -exec`; see command-effects.ts)
 *   still ask.
 * - otherwise it asks, saying why. Before the parser has loaded (the shell tool loads it
 *   before its first permission check) it asks too.
 *
 * @example
 * const rule = shellRule(["git status"], ["rm -rf"]);
 * rule({ command: "git status -s && git status" }); // { behavior: "allow" } once the parser is loaded
 */
export function shellRule(allow: readonly string[], deny: readonly string[]): ShellRule {
  const allowRules = allow.map((prefix) => prefix.trim().split(/\s+/)).filter((words) => words[0] !== "");
  const denyRules = deny.flatMap((prefix) => denyRule(prefix) ?? []);
  const parses = allowRules.length > 0 || denyRules.length > 0;
  const tooLong = (command: string): PermissionDecision | undefined => {
    if (command.length <= MAX_RULED_COMMAND_CHARS) return undefined;
    const why = `the command is ${command.length.toLocaleString("en-US")} characters long, more than the ${MAX_RULED_COMMAND_CHARS.toLocaleString("en-US")} the shell's rules read`;
    return denyRules.length > 0
      ? {
          behavior: "deny",
          reason: `${why}, so its deny rules cannot be checked (write long content with write_file)`,
        }
      : { behavior: "ask", reason: why };
  };
  const denies = (command: string): PermissionDecision | undefined => {
    if (denyRules.length === 0) return undefined;
    const long = tooLong(command);
    if (long) return long;
    const parser = loadedBashParser();
    if (!parser)
      return { behavior: "deny", reason: "the deny rules cannot be checked: the Bash parser has not loaded" };
    const found = withBashTree(parser, command, (root) => findDenied(parser, root, denyRules));
    return found ? denial(found) : undefined;
  };
  const rule = (args: unknown): PermissionDecision | undefined => {
    const command = (args as { command?: unknown } | null)?.command;
    if (typeof command !== "string") return undefined;
    if (!parses) return { behavior: "ask", reason: "shell is destructive" };
    const long = tooLong(command);
    if (long) return long;
    const parser = loadedBashParser();
    if (!parser) {
      return {
        behavior: "ask",
        reason: "the shell's allow and deny rules cannot be checked yet (the parser is loading)",
      };
    }
    const decision = withBashTree(parser, command, (root): PermissionDecision => {
      const denied = denyRules.length > 0 ? findDenied(parser, root, denyRules) : undefined;
      if (denied) return denial(denied);
      const plain = plainCommands(root, command);
      if ("problem" in plain) {
        return { behavior: "ask", reason: `no allow rule can vouch for this command: ${plain.problem}` };
      }
      return allowed(plain.commands, allowRules);
    });
    return decision ?? { behavior: "ask", reason: "the command could not be parsed" };
  };
  return Object.assign(rule, { parses, denies });
}

function denial(found: DenyFinding): PermissionDecision {
  const shown = found.command.length > 120 ? `${found.command.slice(0, 117)}...` : found.command;
  const command = shown.replace(/[ \t\n]+/g, " ");
  if ("unchecked" in found) {
    return {
      behavior: "deny",
      reason: `the deny rules cannot check the shell command "${command}": ${found.unchecked}`,
    };
  }
  return {
    behavior: "deny",
    reason: `the shell command "${command}" matches the deny rule "${found.rule.source}"`,
  };
}

function allowed(commands: PlainCommand[], allowRules: string[][]): PermissionDecision {
  if (commands.length === 0) return { behavior: "ask", reason: "shell is destructive" };
  const uncovered = commands.find((command) => !allowRules.some((prefix) => startsWith(command, prefix)));
  if (uncovered) {
    return {
      behavior: "ask",
      reason: `shell runs "${uncovered.text.replace(/[ \t\n]+/g, " ")}", which no allow rule covers`,
    };
  }
  // A prefix vouches for the program, not for the options that make it write a file or run
  // another program (`git diff --output=…`, `sed -n '1e …'`): those ask, as a redirection does.
  for (const command of commands) {
    const effect = commandEffect(command.words);
    if (effect) return { behavior: "ask", reason: `no allow rule can vouch for this command: ${effect}` };
  }
  return { behavior: "allow" };
}

/** Whole words, each literal and not subject to glob, brace or tilde expansion. */
function startsWith(command: PlainCommand, prefix: string[]): boolean {
  if (prefix.length > command.words.length) return false;
  return prefix.every((word, i) => !command.words[i]!.expands && command.words[i]!.text === word);
}
