import type { Parser } from "web-tree-sitter";
import { type SyntaxNode, withBashTree } from "./bash-parser.js";
import { looseWord } from "./bash-words.js";

/** A `deny` prefix, split: the command's name and what must follow it. */
export type DenyRule = { source: string; name: string; tokens: string[] };

export function denyRule(prefix: string): DenyRule | undefined {
  const [first, ...tokens] = prefix.trim().split(/\s+/);
  if (!first) return undefined;
  return { source: prefix, name: basename(first), tokens };
}

/** How deep `bash -c '… eval "…"'` nesting is followed, and how many inner scripts at most. */
const MAX_DEPTH = 4;
const MAX_SCRIPTS = 32;
/** Source characters read as loose words over one command line (see `looseWord`). */
const LOOSE_CHARS = 1_000_000;

/**
 * The first deny rule some command of the line matches, looking everywhere the parse shows a
 * command (substitutions, subshells, groups, loops, functions, here-documents), and into the
 * strings Bash is asked to run (`bash -c`, `sh -c`, `eval`, `su -c`, `env -S`, `watch`…).
 *
 * A rule's name matches any word of a command by its last path segment, quotes and
 * backslashes removed — so `\rm`, `/bin/rm`, `"rm"` and `sudo`/`env`/`xargs`/`find -exec`/
 * `timeout`/… `rm` are all `rm`. Short flags match as a set (`-rf` = `-fr` = `-r -f` = `-R -f`
 * = `--recursive --force`); a word such as `push` must be the next argument, options and
 * their values aside (`git -C dir push`). This errs towards refusing; it is still a text rule
 * that a determined command evades (`$(printf rm)`), not a boundary.
 */
export function findDenied(
  parser: Parser,
  root: SyntaxNode,
  rules: readonly DenyRule[],
): { rule: DenyRule; command: string } | undefined {
  const budget = { scripts: MAX_SCRIPTS, chars: LOOSE_CHARS };
  return search(parser, root, rules, 0, budget);
}

function search(
  parser: Parser,
  root: SyntaxNode,
  rules: readonly DenyRule[],
  depth: number,
  budget: { scripts: number; chars: number },
): { rule: DenyRule; command: string } | undefined {
  const stack: SyntaxNode[] = [root];
  while (stack.length > 0) {
    const node = stack.pop()!;
    for (let i = node.childCount - 1; i >= 0; i--) stack.push(node.child(i)!);
    if (node.type !== "command") continue;
    const words = commandWords(node, budget);
    const rule = matchRules(words, rules);
    if (rule) return { rule, command: node.text };
    if (depth >= MAX_DEPTH) continue;
    for (const script of innerScripts(words)) {
      if (budget.scripts-- <= 0) break;
      const hit = withBashTree(parser, script, (inner) => search(parser, inner, rules, depth + 1, budget));
      if (hit) return { rule: hit.rule, command: node.text };
    }
  }
  // A line that does not parse may hide a command where the tree has an ERROR: read its bare words too.
  if (root.hasError) {
    const rule = matchRules(crudeWords(root.text), rules);
    if (rule) return { rule, command: root.text };
  }
  return undefined;
}

/** The command's name and arguments as best read (assignments and redirections left out). */
function commandWords(node: SyntaxNode, budget: { chars: number }): string[] {
  const words: string[] = [];
  for (const child of node.children) {
    if (child.type === "variable_assignment" || child.type.endsWith("redirect")) continue;
    const target = child.type === "command_name" && child.childCount === 1 ? child.children[0]! : child;
    if (target.isNamed) words.push(looseWord(target, budget));
  }
  return words;
}

function crudeWords(text: string): string[] {
  return text
    .replace(/\\(.)/gs, "$1")
    .replace(/["']/g, "")
    .split(/[\s;&|()<>{}`$]+/)
    .filter(Boolean);
}

function matchRules(words: string[], rules: readonly DenyRule[]): DenyRule | undefined {
  for (const rule of rules) {
    for (let i = 0; i < words.length; i++) {
      if (basename(words[i]!) === rule.name && tokensFollow(words.slice(i + 1), rule.tokens)) return rule;
    }
  }
  return undefined;
}

/** Long options that stand for a short flag, both ways (`rm --recursive` is `rm -r`). */
const LONG_FLAGS: Record<string, string> = { "--recursive": "r", "--force": "f" };
const SAME_FLAG: Record<string, string> = { r: "rR", R: "rR" };

function tokensFollow(rest: string[], tokens: string[]): boolean {
  let position = 0;
  for (const token of tokens) {
    if (token.startsWith("--")) {
      const short = LONG_FLAGS[token];
      if (
        !rest.some((w) => w === token || w.startsWith(`${token}=`)) &&
        !(short && hasShortFlag(rest, short))
      )
        return false;
    } else if (token.startsWith("-") && token.length > 1) {
      for (const letter of token.slice(1)) if (!hasShortFlag(rest, letter)) return false;
    } else {
      const found = nextArgument(rest, position, token);
      if (found < 0) return false;
      position = found + 1;
    }
  }
  return true;
}

function hasShortFlag(words: string[], letter: string): boolean {
  const letters = SAME_FLAG[letter] ?? letter;
  return words.some(
    (w) =>
      (/^-[^-]/.test(w) && [...letters].some((l) => w.includes(l))) ||
      Object.entries(LONG_FLAGS).some(([long, short]) => letters.includes(short) && w === long),
  );
}

/** Where `token` stands as the next argument from `from`, skipping options and the word after each. */
function nextArgument(words: string[], from: number, token: string): number {
  let afterOption = false;
  for (let i = from; i < words.length; i++) {
    const word = words[i]!;
    if (word === token) return i;
    if (word.startsWith("-")) afterOption = true;
    else if (afterOption) afterOption = false;
    else return -1;
  }
  return -1;
}

const SHELLS = new Set(["bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish"]);
/** Programs whose `-c` argument is a shell command line. */
const DASH_C = new Set([...SHELLS, "su", "runuser", "flock", "script"]);

/** Command lines a command hands to a shell: `bash -c '…'`, `eval …`, `env -S '…'`, `watch …`. */
function innerScripts(words: string[]): string[] {
  const scripts: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const name = basename(words[i]!);
    if (name === "eval") scripts.push(words.slice(i + 1).join(" "));
    else if (name === "watch") scripts.push(words.slice(i + 1).join(" "));
    else if (DASH_C.has(name)) {
      const flag = words.findIndex((w, j) => j > i && /^-[A-Za-z]*c[A-Za-z]*$/.test(w));
      const script = flag < 0 ? undefined : words.slice(flag + 1).find((w) => !w.startsWith("-"));
      if (script !== undefined) scripts.push(script);
    } else if (name === "env") {
      for (let j = i + 1; j < words.length; j++) {
        const word = words[j]!;
        if (word === "-S" || word === "--split-string") scripts.push(words[j + 1] ?? "");
        else if (word.startsWith("--split-string=")) scripts.push(word.slice("--split-string=".length));
        else if (/^-S./.test(word)) scripts.push(word.slice(2));
      }
    }
  }
  return scripts.filter((s) => s.trim() !== "");
}

function basename(word: string): string {
  return word.slice(word.lastIndexOf("/") + 1);
}
