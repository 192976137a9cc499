import type { SyntaxNode } from "./bash-parser.js";

/**
 * One word of a command as Bash will see it, when the parse proves it is a literal: quotes and
 * backslashes removed. `expands` when Bash may still turn it into other words (an unquoted
 * glob `*?[`, a brace `{a,b}`, a leading `~`): fine as an argument, never as a word an allow
 * prefix matches.
 */
export type LiteralWord = { text: string; expands: boolean };

/**
 * The literal value of an argument node, or `undefined` when Bash would compute it: any
 * parameter, command, arithmetic or process substitution, ANSI-C (`$'…'`) or locale (`$"…"`)
 * string, extended glob — anything but plain, single-quoted and double-quoted text.
 */
export function literalWord(node: SyntaxNode): LiteralWord | undefined {
  switch (node.type) {
    case "word":
    case "number":
      return unquoted(node.text);
    case "raw_string": {
      const text = node.text;
      if (text.length < 2 || !text.startsWith("'") || !text.endsWith("'")) return undefined;
      return { text: text.slice(1, -1), expands: false };
    }
    case "string":
      return doubleQuoted(node);
    case "concatenation": {
      let text = "";
      let expands = false;
      for (const part of node.children) {
        const word = literalWord(part);
        if (!word) return undefined;
        text += word.text;
        expands ||= word.expands;
      }
      return { text, expands };
    }
    default:
      return undefined;
  }
}

/** An unquoted word: backslash escapes removed; `$`, a backquote or a parenthesis means it computes. */
function unquoted(raw: string): LiteralWord | undefined {
  let text = "";
  let expands = raw.startsWith("~");
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c === "\\") {
      const next = raw[i + 1];
      if (next === undefined) return undefined;
      if (next !== "\n") text += next;
      i++;
      continue;
    }
    if (c === "$" || c === "`" || c === "(" || c === ")") return undefined;
    if ("*?[]{}".includes(c)) expands = true;
    text += c;
  }
  return { text, expands };
}

/** `"…"`: only `string_content` between the quotes; `\\ \" \$ \` \newline` are the escapes Bash removes there. */
function doubleQuoted(node: SyntaxNode): LiteralWord | undefined {
  const children = node.children;
  if (children.length < 2 || children[0]!.type !== '"' || children.at(-1)!.type !== '"') return undefined;
  let text = "";
  for (const part of children.slice(1, -1)) {
    if (part.type !== "string_content") return undefined;
    const raw = part.text;
    for (let i = 0; i < raw.length; i++) {
      const c = raw[i]!;
      if (c === "$" || c === "`") return undefined;
      if (c === "\\" && i + 1 < raw.length && '\\"$`\n'.includes(raw[i + 1]!)) {
        if (raw[i + 1] !== "\n") text += raw[i + 1];
        i++;
        continue;
      }
      text += c;
    }
  }
  return { text, expands: false };
}

/**
 * Best-effort text of any argument, for deny rules (which must say something even about words
 * they cannot prove): the literal when there is one, ANSI-C strings decoded, otherwise the
 * source with quotes and backslashes dropped. `budget.chars` bounds the source read this way
 * over one command line: nested substitutions (`$(… $(… $(…)))`) would read the same text
 * once per level. The commands inside are searched through the tree anyway.
 */
export function looseWord(node: SyntaxNode, budget: { chars: number }): string {
  const literal = literalWord(node);
  if (literal) return literal.text;
  const size = node.endIndex - node.startIndex;
  if (size > budget.chars) return "";
  budget.chars -= size;
  if (node.type === "ansi_c_string") return decodeAnsiC(node.text.slice(2, -1));
  if (node.type === "concatenation") return node.children.map((part) => looseWord(part, budget)).join("");
  return node.text.replace(/\\(.)/gs, "$1").replace(/["']/g, "");
}

const ANSI_C_ESCAPES: Record<string, string> = {
  n: "\n",
  t: "\t",
  r: "\r",
  a: "\x07",
  b: "\b",
  e: "\x1b",
  E: "\x1b",
  f: "\f",
  v: "\v",
  "\\": "\\",
  "'": "'",
  '"': '"',
  "?": "?",
};

/** The common escapes of `$'…'` (`\n`, `\xHH`, octal, `\uHHHH`): enough for a deny rule to read `$'\x72m'` as `rm`. */
function decodeAnsiC(body: string): string {
  return body.replace(
    /\\(?:x([0-9a-fA-F]{1,2})|u([0-9a-fA-F]{1,4})|U([0-9a-fA-F]{1,8})|([0-7]{1,3})|(.))/gs,
    (whole, hex, u4, u8, octal, other) => {
      const code = hex ?? u4 ?? u8;
      if (code) {
        const point = Number.parseInt(code, 16);
        return point <= 0x10ffff ? String.fromCodePoint(point) : whole;
      }
      if (octal) return String.fromCharCode(Number.parseInt(octal, 8));
      return ANSI_C_ESCAPES[other] ?? whole;
    },
  );
}
