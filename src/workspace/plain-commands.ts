import type { SyntaxNode } from "./bash-parser.js";
import { type LiteralWord, literalWord } from "./bash-words.js";

/** A simple command whose every word the parse proved literal. */
export type PlainCommand = { words: LiteralWord[]; text: string };

/** The simple commands of a command line, or why it is not a list of plain ones. */
export type PlainParse = { commands: PlainCommand[] } | { problem: string };

/**
 * Proves a parsed command line is nothing but plain simple commands — literal words, no
 * variable assignments, redirections only to `/dev/null` or to another descriptor (`2>&1`) —
 * joined by `&&`, `||`, `;` and `|`, on one line. Anything else (a substitution, an expansion,
 * a subshell, a loop, a background `&`, a here-document, a parse error, a character the
 * grammar skipped) is a `problem`: an allow rule cannot vouch for what it cannot see.
 */
export function plainCommands(root: SyntaxNode, source: string): PlainParse {
  if (root.hasError) return { problem: "it does not parse as Bash" };
  const skipped = skippedText(root, source);
  if (skipped !== undefined) return { problem: `the parser skipped ${JSON.stringify(skipped)}` };
  const commands: PlainCommand[] = [];
  const problem = collect(root, commands);
  if (problem !== undefined) return { problem };
  // The grammar and Bash disagree around line breaks: it reads "ls⏎\touch x" as one command
  // (ls with two arguments) where Bash runs two, and "ls\⏎of" as ls where Bash runs lsof. A
  // line break (other than trailing ones) is therefore never vouched for.
  if (/[\n\r]/.test(source.replace(/(?<!\\)\n+$/, ""))) {
    return { problem: "it spans several lines (an allow rule vouches for one line only)" };
  }
  return { commands };
}

const SEPARATORS: Record<string, ReadonlySet<string>> = {
  program: new Set([";"]),
  list: new Set(["&&", "||"]),
  pipeline: new Set(["|", "|&"]),
};

/** Walks the list iteratively: `a && b && …` nests one level per operator, deeper than a stack allows. */
function collect(root: SyntaxNode, out: PlainCommand[]): string | undefined {
  const pending: SyntaxNode[] = [root];
  while (pending.length > 0) {
    const node = pending.pop()!;
    switch (node.type) {
      case "program":
      case "list":
      case "pipeline": {
        const children = node.children;
        for (let i = children.length - 1; i >= 0; i--) {
          const child = children[i]!;
          if (child.type === "comment") continue;
          if (child.isNamed) pending.push(child);
          else if (!SEPARATORS[node.type]!.has(child.type)) return `it uses ${describe(child)}`;
        }
        break;
      }
      case "redirected_statement": {
        const [body, ...redirects] = node.children;
        for (const redirect of redirects) {
          const problem = redirect.isNamed ? checkRedirect(redirect) : `it uses ${describe(redirect)}`;
          if (problem) return problem;
        }
        if (body) pending.push(body);
        break;
      }
      case "command": {
        const problem = collectCommand(node, out);
        if (problem) return problem;
        break;
      }
      default:
        return `it uses ${describe(node)}`;
    }
  }
  return undefined;
}

function collectCommand(node: SyntaxNode, out: PlainCommand[]): string | undefined {
  const words: LiteralWord[] = [];
  for (const child of node.children) {
    if (child.type === "file_redirect" || child.type === "herestring_redirect") {
      const problem = checkRedirect(child);
      if (problem) return problem;
      continue;
    }
    const target = child.type === "command_name" && child.childCount === 1 ? child.children[0]! : child;
    const word = literalWord(target);
    if (!word) return `it uses ${describe(target)}`;
    words.push(word);
  }
  out.push({ words, text: node.text });
  return undefined;
}

/** Redirections that write no file: to or from `/dev/null`, or duplicating a descriptor (`2>&1`, `>&2`). */
function checkRedirect(node: SyntaxNode): string | undefined {
  if (node.type !== "file_redirect") return `it uses ${describe(node)}`;
  const operator = node.children.find((c) => !c.isNamed)?.type;
  const targets = node.children.filter((c) => c.isNamed && c.type !== "file_descriptor");
  const target = targets.length === 1 ? targets[0]! : undefined;
  if (target && (operator === ">&" || operator === "<&") && /^\d+$/.test(target.text)) return undefined;
  const literal = target ? literalWord(target) : undefined;
  if (literal && !literal.expands && literal.text === "/dev/null") return undefined;
  return `it redirects to or from a file (${JSON.stringify(clip(node.text))})`;
}

const DESCRIPTIONS: Record<string, string> = {
  command_substitution: "a command substitution ($(…) or backquotes)",
  process_substitution: "a process substitution (<(…) or >(…))",
  simple_expansion: "a parameter expansion ($…)",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: Bash syntax, not a template
  expansion: "a parameter expansion (${…})",
  arithmetic_expansion: "an arithmetic expansion ($((…)))",
  ansi_c_string: "an ANSI-C string ($'…')",
  translated_string: 'a locale string ($"…")',
  variable_assignment: "a variable assignment",
  variable_assignments: "variable assignments",
  declaration_command: "a declaration (export, declare, local…)",
  unset_command: "unset",
  subshell: "a subshell (( … ))",
  compound_statement: "a command group ({ …; })",
  function_definition: "a function definition",
  negated_command: "a negation (!)",
  heredoc_redirect: "a here-document (<<)",
  herestring_redirect: "a here-string (<<<)",
  test_command: "a test ([[ … ]])",
  extglob_pattern: "an extended glob",
  "&": "a background job (&)",
  $: 'a bare $ (as in $"…" or an expansion)',
};

function describe(node: SyntaxNode): string {
  // A quoted string or a concatenation is named for the part that computes (`"$(id)"`).
  if (node.type === "string" || node.type === "concatenation") {
    const inner = node.children.find((c) => c.isNamed && c.type !== "string_content" && !literalWord(c));
    if (inner) return describe(inner);
  }
  const known = DESCRIPTIONS[node.type];
  if (known) return `${known}: ${JSON.stringify(clip(node.text))}`;
  if (node.type.endsWith("_statement"))
    return `a ${node.type.replace("_statement", "").replace("_", "-")} statement`;
  return `${node.isNamed ? node.type.replaceAll("_", " ") : JSON.stringify(node.type)}: ${JSON.stringify(clip(node.text))}`;
}

function clip(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/**
 * Text between tokens that is neither blank nor a line continuation: the grammar skipped
 * something Bash would read (a carriage return is a word character to Bash, blank to the
 * grammar). `undefined` when every character belongs to a token or to a gap Bash skips too.
 */
function skippedText(root: SyntaxNode, text: string): string | undefined {
  let at = 0;
  // A cursor walks the leaves without making an object of each node (a long line has many).
  const cursor = root.walk();
  try {
    for (let more = true; more; ) {
      if (cursor.nodeType === "comment" || !cursor.gotoFirstChild()) {
        const gap = text.slice(at, cursor.startIndex);
        if (!/^(?:[ \t\n]|\\\n)*$/.test(gap)) return gap;
        at = Math.max(at, cursor.endIndex);
        while (!cursor.gotoNextSibling()) {
          if (!cursor.gotoParent()) {
            more = false;
            break;
          }
        }
      }
    }
  } finally {
    cursor.delete();
  }
  const tail = text.slice(at);
  return /^(?:[ \t\n]|\\\n)*$/.test(tail) ? undefined : tail;
}
