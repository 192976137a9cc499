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
/** Characters of inner scripts parsed over one command line, at most. */
const MAX_SCRIPT_CHARS = 131_072;
/** Source characters read as loose words over one command line (see `looseWord`). */
const LOOSE_CHARS = 1_000_000;

/** What the deny rules found: a rule a command matches, or why they could not look everywhere. */
export type DenyFinding = { rule: DenyRule; command: string } | { unchecked: string; command: string };

type Budget = { scripts: number; scriptChars: number; chars: number };

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
 * that a determined command evades (`$(printf rm)`), not a boundary. A line that hands more
 * than 32 command lines, or more than 128 KiB of them, to shells is `unchecked`: the caller
 * refuses it rather than let the rest through unread.
 */
export function findDenied(
  parser: Parser,
  root: SyntaxNode,
  rules: readonly DenyRule[],
): DenyFinding | undefined {
  const budget = { scripts: MAX_SCRIPTS, scriptChars: MAX_SCRIPT_CHARS, chars: LOOSE_CHARS };
  return search(parser, root, rules, 0, budget);
}

function search(
  parser: Parser,
  root: SyntaxNode,
  rules: readonly DenyRule[],
  depth: number,
  budget: Budget,
): DenyFinding | undefined {
  // A cursor visits every node without making an object of each: only commands become nodes.
  const cursor = root.walk();
  try {
    for (let more = true; more; ) {
      if (cursor.nodeType === "command") {
        const found = searchCommand(parser, cursor.currentNode, rules, depth, budget);
        if (found) return found;
      }
      if (cursor.gotoFirstChild()) continue;
      while (!cursor.gotoNextSibling()) {
        if (!cursor.gotoParent()) {
          more = false;
          break;
        }
      }
    }
  } finally {
    cursor.delete();
  }
  // A line that does not parse may hide a command where the tree has an ERROR: read its bare words too.
  if (root.hasError) {
    const rule = matchRules(crudeWords(root.text), rules);
    if (rule) return { rule, command: root.text };
  }
  return undefined;
}

function searchCommand(
  parser: Parser,
  node: SyntaxNode,
  rules: readonly DenyRule[],
  depth: number,
  budget: Budget,
): DenyFinding | undefined {
  const words = commandWords(node, budget);
  const rule = matchRules(words, rules);
  if (rule) return { rule, command: node.text };
  if (depth >= MAX_DEPTH) return undefined;
  for (const script of innerScripts(words)) {
    if (script.trim() === "") continue;
    budget.scriptChars -= script.length;
    if (--budget.scripts < 0 || budget.scriptChars < 0) {
      return {
        unchecked: `it hands more than ${MAX_SCRIPTS} command lines or ${MAX_SCRIPT_CHARS.toLocaleString("en-US")} characters to shells (bash -c, eval…)`,
        command: node.text,
      };
    }
    const hit = withBashTree(parser, script, (inner) => search(parser, inner, rules, depth + 1, budget));
    if (hit) return { ...hit, command: node.text };
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

/**
 * The first rule some occurrence of its program in `words` matches. Linear in the words per
 * rule: each flag a rule needs is found once (the last word that has it: it follows an
 * occurrence when it stands after it), and where each word a rule needs next stands is worked
 * out once for every start, from the end (`nextArguments`). It was quadratic: a 30 KB
 * `echo rm rm …` held the event loop for 26 s.
 */
function matchRules(words: string[], rules: readonly DenyRule[]): DenyRule | undefined {
  const names = words.map(basename);
  for (const rule of rules) {
    const occurrences: number[] = [];
    for (let i = 0; i < names.length; i++) if (names[i] === rule.name) occurrences.push(i);
    if (occurrences.length === 0) continue;
    // Every flag the rule needs must stand somewhere after the occurrence.
    let before = words.length;
    for (const has of flagTests(rule.tokens)) {
      let last = -1;
      for (let j = words.length - 1; j >= 0; j--) {
        if (has(words[j]!)) {
          last = j;
          break;
        }
      }
      before = Math.min(before, last);
    }
    const positional = rule.tokens.filter((t) => !t.startsWith("-") || t.length === 1);
    const next = positional.map((token) => nextArguments(words, token));
    for (const i of occurrences) {
      if (i >= before) break;
      let position = i + 1;
      let found = true;
      for (const table of next) {
        const at = position <= words.length ? table[position]! : -1;
        if (at < 0) {
          found = false;
          break;
        }
        position = at + 1;
      }
      if (found) return rule;
    }
  }
  return undefined;
}

/** Long options that stand for a short flag, both ways (`rm --recursive` is `rm -r`). */
const LONG_FLAGS: Record<string, string> = { "--recursive": "r", "--force": "f" };
const SAME_FLAG: Record<string, string> = { r: "rR", R: "rR" };

/** One test per flag a rule needs: does this word give it? */
function flagTests(tokens: string[]): Array<(word: string) => boolean> {
  const tests: Array<(word: string) => boolean> = [];
  for (const token of tokens) {
    if (token.startsWith("--")) {
      const short = LONG_FLAGS[token];
      tests.push(
        (w) => w === token || w.startsWith(`${token}=`) || (short !== undefined && givesShortFlag(w, short)),
      );
    } else if (token.startsWith("-") && token.length > 1) {
      for (const letter of token.slice(1)) tests.push((w) => givesShortFlag(w, letter));
    }
  }
  return tests;
}

function givesShortFlag(word: string, letter: string): boolean {
  const letters = SAME_FLAG[letter] ?? letter;
  return (
    (/^-[^-]/.test(word) && [...letters].some((l) => word.includes(l))) ||
    Object.entries(LONG_FLAGS).some(([long, short]) => letters.includes(short) && word === long)
  );
}

/**
 * For every start `s`, where `token` stands as the next argument from `s` on, skipping options
 * and the word after each (`git -C dir push`), or -1: filled from the end in one pass.
 */
function nextArguments(words: string[], token: string): Int32Array {
  const n = words.length;
  const fresh = new Int32Array(n + 1).fill(-1); // scanning from j, the previous word was no option
  let afterOption = -1; // the same, right after an option (this word may be its value)
  for (let j = n - 1; j >= 0; j--) {
    const word = words[j]!;
    const wasAfterOption = afterOption;
    if (word === token) {
      fresh[j] = j;
      afterOption = j;
    } else if (word.startsWith("-")) {
      fresh[j] = wasAfterOption;
      afterOption = wasAfterOption;
    } else {
      afterOption = fresh[j + 1]!;
      fresh[j] = -1;
    }
  }
  return fresh;
}

const SHELLS = new Set(["bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish"]);
/** Programs whose `-c` argument is a shell command line. */
const DASH_C = new Set([...SHELLS, "su", "runuser", "flock", "script"]);

/**
 * Command lines a command hands to a shell: `bash -c '…'`, `eval …`, `env -S '…'`, `watch …`.
 * Generated one at a time (the caller stops at its budget), each in linear time: only the first
 * `eval` or `watch` counts (a later one's line is part of the first's, searched when that is
 * parsed), and the `-c` that follows each shell is found from a table built from the end.
 */
function* innerScripts(words: string[]): Generator<string> {
  const names = words.map(basename);
  for (const runner of ["eval", "watch"]) {
    const at = names.indexOf(runner);
    if (at >= 0) yield words.slice(at + 1).join(" ");
  }
  const flagAfter = new Int32Array(words.length + 1).fill(-1);
  for (let j = words.length - 1; j >= 0; j--)
    flagAfter[j] = /^-[A-Za-z]*c[A-Za-z]*$/.test(words[j]!) ? j : flagAfter[j + 1]!;
  const operandAfter = new Int32Array(words.length + 1).fill(-1);
  for (let j = words.length - 1; j >= 0; j--)
    operandAfter[j] = words[j]!.startsWith("-") ? operandAfter[j + 1]! : j;
  const seen = new Set<number>();
  for (let i = 0; i < words.length; i++) {
    if (!DASH_C.has(names[i]!)) continue;
    const flag = flagAfter[i + 1]!;
    const script = flag < 0 ? -1 : operandAfter[flag + 1]!;
    if (script < 0 || seen.has(script)) continue;
    seen.add(script);
    yield words[script]!;
  }
  const env = names.indexOf("env");
  if (env < 0) return;
  for (let j = env + 1; j < words.length; j++) {
    const word = words[j]!;
    if (word === "-S" || word === "--split-string") yield words[j + 1] ?? "";
    else if (word.startsWith("--split-string=")) yield word.slice("--split-string=".length);
    else if (/^-S./.test(word)) yield word.slice(2);
  }
}

function basename(word: string): string {
  return word.slice(word.lastIndexOf("/") + 1);
}
