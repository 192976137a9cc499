import type { LiteralWord } from "./bash-words.js";
import { sedEffect } from "./sed-effects.js";

/**
 * Why a plain command writes a file or runs a program through its own arguments, when it does;
 * `undefined` when nothing in its arguments does. Programs people allow as "read-only" have
 * such options (`git diff --output=.git/config`, `sed -n '1e cmd'`, `sort -o file`, `find
 * -exec`): an allow prefix vouches for the program, not for these, so a command that uses one
 * asks, as a redirection to a file does. Programs this table does not know are vouched for as
 * their prefix says (`npm test` runs what package.json says).
 *
 * @example
 * commandEffect(words("git diff --output=.git/config")); // '"--output=.git/config" makes git write a file'
 * commandEffect(words("git diff --stat")); // undefined
 */
export function commandEffect(words: readonly LiteralWord[]): string | undefined {
  const start = unwrap(words);
  const program = basename(words[start]?.text ?? "");
  const check = EFFECTS[program];
  if (!check) return undefined;
  const args = words.slice(start + 1);
  // A glob or brace can expand to any name in the root, an option among them (a file named
  // `--output=x` or `-i`): the rule cannot see what such an argument of these programs will be.
  const wild = args.find(
    (w) => w.expands && /^[-*?[{]/.test(w.text) && (/[*?[]/.test(w.text) || /\{[^}]*(?:,|\.\.)/.test(w.text)),
  );
  if (wild) return `${JSON.stringify(wild.text)} could expand to an option of ${program}`;
  return check(args.map((w) => w.text));
}

type Check = (args: string[]) => string | undefined;

const writes = (option: string, program: string) => `${JSON.stringify(option)} makes ${program} write a file`;
const runs = (option: string, program: string) => `${JSON.stringify(option)} makes ${program} run a program`;

const EFFECTS: Record<string, Check> = {
  git: gitEffect,
  sed: sedEffect,
  gsed: sedEffect,
  sort: sortEffect,
  uniq: uniqEffect,
  make: makeEffect,
  gmake: makeEffect,
  find: findEffect,
  rg: rgEffect,
  fd: fdEffect,
  fdfind: fdEffect,
  tree: treeEffect,
  awk: awkEffect,
  gawk: awkEffect,
  mawk: awkEffect,
  nawk: awkEffect,
  tee: teeEffect,
  xargs: () => "xargs runs a command with arguments read from its input, which the rule cannot see",
  env: envEffect,
};

/**
 * Programs that run the rest of their words as a command, with their options that take a value
 * (`timeout` also takes a duration first): the table checks the command they run.
 */
const WRAPPERS: Record<string, { values: string; operands?: number }> = {
  nohup: { values: "" },
  setsid: { values: "" },
  command: { values: "" },
  time: { values: "" },
  exec: { values: "a" },
  nice: { values: "n" },
  stdbuf: { values: "ioe" },
  timeout: { values: "sk", operands: 1 },
};

function unwrap(words: readonly LiteralWord[]): number {
  let i = 0;
  for (let wrapper = WRAPPERS[basename(words[0]?.text ?? "")]; wrapper; ) {
    i++;
    let operands = wrapper.operands ?? 0;
    while (i < words.length) {
      const word = words[i]!.text;
      if (word === "--") i++;
      else if (word.startsWith("-") && word.length > 1) {
        i++;
        if (!word.startsWith("--") && word.length === 2 && wrapper.values.includes(word[1]!)) i++;
        continue;
      } else if (operands > 0) {
        operands--;
        i++;
        continue;
      }
      break;
    }
    wrapper = WRAPPERS[basename(words[i]?.text ?? "")];
  }
  return i;
}

/**
 * A long option by its name as the program reads it: GNU getopt takes any unambiguous
 * abbreviation (`sort --out=x` is `--output=x`). `risky` when the name, or a name it may
 * abbreviate, is one of `risky` — unless it is exactly an option of its own (`git diff --text`).
 */
function longOption(word: string, risky: readonly string[], exact: readonly string[] = []): boolean {
  const name = word.slice(2).split("=", 1)[0]!;
  if (name === "" || exact.includes(name)) return false;
  return risky.some((option) => option.startsWith(name));
}

// git ---------------------------------------------------------------------------------------

/** git's long options (after the subcommand) that write a file or run a program. */
const GIT_RISKY = [
  "output",
  "output-directory",
  "open-files-in-pager",
  "ext-diff",
  "textconv",
  "upload-pack",
  "receive-pack",
  "exec",
  "extcmd",
];
/** Options that are whole names of their own, though a risky one starts with them. */
const GIT_EXACT = ["text", "exec-path"];
/** Short options whose value may follow in the same word (`-Sfoo`, `-n5`, `-uno`), per subcommand kind. */
const GIT_GREP_VALUES = "efABCm";
const GIT_VALUES = "SGUlnXMCBLmFu";
/** Subcommands whose `-o` names a file or folder they write. */
const GIT_DASH_O = new Set(["archive", "format-patch"]);

function gitEffect(args: string[]): string | undefined {
  let i = 0;
  // Options before the subcommand are git's own: exact names, no abbreviations.
  for (; i < args.length; i++) {
    const word = args[i]!;
    if (!word.startsWith("-") || word === "-") break;
    if (word.startsWith("-c") || word === "--config-env" || word.startsWith("--config-env=")) {
      return `${JSON.stringify(word)} sets git configuration, which can name a program git runs`;
    }
    if (word.startsWith("--exec-path=")) return runs(word, "git");
    if (
      word.startsWith("-C") ||
      ["--git-dir", "--work-tree"].some((o) => word === o || word.startsWith(`${o}=`))
    ) {
      return `${JSON.stringify(word)} points git at another repository or directory, whose configuration is not protected`;
    }
    if (word === "--namespace" || word === "--attr-source" || word === "--super-prefix") i++;
  }
  const subcommand = args[i] ?? "";
  const grep = subcommand === "grep";
  for (const word of args.slice(i + 1)) {
    if (word === "--") break; // pathspecs from here
    if (word.startsWith("--")) {
      if (!longOption(word, GIT_RISKY, GIT_EXACT)) continue;
      const name = word.slice(2).split("=", 1)[0]!;
      const writing = "output".startsWith(name) || "output-directory".startsWith(name);
      return writing ? writes(word, "git") : runs(word, "git");
    }
    if (!word.startsWith("-") || word === "-") continue;
    for (const letter of word.slice(1)) {
      if (grep && letter === "O") return runs(word, "git grep");
      if (letter === "o" && GIT_DASH_O.has(subcommand)) return writes(word, `git ${subcommand}`);
      if (letter === "u" && (subcommand === "clone" || subcommand === "ls-remote"))
        return runs(word, `git ${subcommand}`);
      if (letter === "x" && (subcommand === "rebase" || subcommand === "difftool"))
        return runs(word, `git ${subcommand}`);
      if ((grep ? GIT_GREP_VALUES : GIT_VALUES).includes(letter)) break;
    }
  }
  if (subcommand === "bisect" && args[i + 1] === "run") return "git bisect run runs a program";
  if (subcommand === "submodule" && args.slice(i + 1).includes("foreach"))
    return "git submodule foreach runs a program";
  return undefined;
}

// sort, uniq, tee ---------------------------------------------------------------------------

// make --------------------------------------------------------------------------------------

/**
 * make runs the project's makefiles, which are protected (an edit to one asks); what asks is
 * whatever makes it read another one or run text of the command line's own: `-f`, `-C`, `-I`,
 * `--eval`, `-e` (the environment over the makefile) and `VAR=value` operands (`SHELL=…`). Even
 * `make -n` runs `$(shell …)`, so a makefile of the model's choosing is never plain.
 */
function makeEffect(args: string[]): string | undefined {
  const why = (word: string) =>
    `${JSON.stringify(word)} makes make run commands from outside the project's makefiles`;
  for (const word of args) {
    if (word === "--") continue;
    if (word.startsWith("--")) {
      if (longOption(word, ["file", "makefile", "directory", "include-dir", "eval", "environment-overrides"]))
        return why(word);
    } else if (word.startsWith("-")) {
      for (const letter of word.slice(1)) {
        if ("fCIEe".includes(letter)) return why(word);
        // -j, -l and -o/-W take a value; what follows is that value, not more letters.
        if ("jloW".includes(letter)) break;
      }
    } else if (word.includes("=")) return why(word);
  }
  return undefined;
}

function sortEffect(args: string[]): string | undefined {
  for (const word of args) {
    if (word === "--") break;
    if (word.startsWith("--")) {
      if (longOption(word, ["output"])) return writes(word, "sort");
      if (longOption(word, ["compress-program"], ["check"])) return runs(word, "sort");
    } else if (word.startsWith("-")) {
      for (const letter of word.slice(1)) {
        if (letter === "o") return writes(word, "sort");
        if ("ktST".includes(letter)) break;
      }
    }
  }
  return undefined;
}

function uniqEffect(args: string[]): string | undefined {
  const operands: string[] = [];
  let options = true;
  for (let i = 0; i < args.length; i++) {
    const word = args[i]!;
    if (!options || word === "-" || !word.startsWith("-")) operands.push(word);
    else if (word === "--") options = false;
    else if (word.startsWith("--")) {
      if (
        !word.includes("=") &&
        ["skip-fields", "skip-chars", "check-chars"].some((o) => o.startsWith(word.slice(2)))
      )
        i++;
    } else if (/^-[^fsw]*[fsw]$/.test(word)) i++;
  }
  const output = operands[1];
  return output === undefined || output === "/dev/null"
    ? undefined
    : `uniq writes its second file operand (${JSON.stringify(output)})`;
}

function teeEffect(args: string[]): string | undefined {
  let options = true;
  for (const word of args) {
    if (options && word === "--") options = false;
    else if (options && word.startsWith("-") && word !== "-") continue;
    else if (word !== "/dev/null") return `tee writes its file operands (${JSON.stringify(word)})`;
  }
  return undefined;
}

// find, fd, rg, tree ------------------------------------------------------------------------

const FIND_RISKY: Record<string, "runs" | "writes" | "deletes"> = {
  "-exec": "runs",
  "-execdir": "runs",
  "-ok": "runs",
  "-okdir": "runs",
  "-delete": "deletes",
  "-fprint": "writes",
  "-fprint0": "writes",
  "-fprintf": "writes",
  "-fls": "writes",
};

function findEffect(args: string[]): string | undefined {
  const word = args.find((w) => FIND_RISKY[w]);
  if (!word) return undefined;
  const effect = FIND_RISKY[word]!;
  if (effect === "deletes") return `"-delete" makes find delete files`;
  return effect === "runs" ? runs(word, "find") : writes(word, "find");
}

function fdEffect(args: string[]): string | undefined {
  for (const word of args) {
    if (word === "--") break;
    if (word.startsWith("--") ? longOption(word, ["exec", "exec-batch"]) : /^-[^-]*[xX]/.test(word))
      return runs(word, "fd");
  }
  return undefined;
}

function rgEffect(args: string[]): string | undefined {
  for (const word of args) {
    if (word === "--") break;
    for (const option of ["--pre", "--hostname-bin"]) {
      if (word === option || word.startsWith(`${option}=`)) return runs(word, "rg");
    }
  }
  return undefined;
}

function treeEffect(args: string[]): string | undefined {
  const word = args.find((w) => /^-[^-]*o/.test(w) || w === "--output" || w.startsWith("--output="));
  return word === undefined ? undefined : writes(word, "tree");
}

// awk ---------------------------------------------------------------------------------------

/** awk options that neither read the program from a file, write a file, nor load code. */
const AWK_FLAGS = new Set(["-b", "-c", "-C", "-g", "-M", "-N", "-O", "-P", "-r", "-s", "-S", "-t", "-V"]);
const AWK_LONG = new Set([
  "--posix",
  "--traditional",
  "--compat",
  "--characters-as-bytes",
  "--sandbox",
  "--bignum",
  "--use-lc-numeric",
  "--optimize",
  "--no-optimize",
  "--re-interval",
  "--version",
  "--help",
]);

function awkEffect(args: string[]): string | undefined {
  const programs: string[] = [];
  let programOption = false;
  let i = 0;
  for (; i < args.length; i++) {
    const word = args[i]!;
    if (word === "--") {
      i++;
      break;
    }
    if (!word.startsWith("-") || word === "-") break;
    if (word === "-F" || word === "-v") i++;
    else if (/^-[Fv]./.test(word)) continue;
    else if (/^--(field-separator|assign)=/.test(word)) continue;
    else if (word === "-e" || word === "--source") {
      programs.push(args[++i] ?? "");
      programOption = true;
    } else if (word.startsWith("--source=")) {
      programs.push(word.slice("--source=".length));
      programOption = true;
    } else if (!AWK_FLAGS.has(word) && !AWK_LONG.has(word)) {
      return `the rule cannot vouch for awk's option ${JSON.stringify(word)} (-f and -E read the program from a file, -o, -p and -d write files, -l loads code)`;
    }
  }
  if (!programOption) programs.push(args[i] ?? "");
  return programs.map(awkProgramEffect).find((effect) => effect !== undefined);
}

/**
 * What in an awk program runs a command or writes a file, read crudely and on the asking side:
 * `system(`, a pipe (`print | "cmd"`, `"cmd" | getline`), `>` or `>>` after a `print`, and `@`
 * (gawk's `@load`, `@include` and indirect calls such as `@f()` with `f = "system"`).
 */
function awkProgramEffect(program: string): string | undefined {
  if (/\bsystem\s*\(/.test(program)) return "its awk program calls system()";
  if (/(?:^|[^|])\|(?!\|)/.test(program)) return "its awk program uses a pipe (|), which runs a command";
  if (program.includes("@")) return "its awk program uses @ (gawk's @load, @include or an indirect call)";
  const print = program.search(/\bprintf?\b/);
  if (print >= 0 && /(?:^|[^>])>(?!=)|>>/.test(program.slice(print)))
    return "its awk program may print to a file (> after print)";
  return undefined;
}

// env ---------------------------------------------------------------------------------------

function envEffect(args: string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const word = args[i]!;
    if (word === "-S" || word.startsWith("--split-string") || /^-[^-]*S/.test(word))
      return `${JSON.stringify(word)} makes env run a command line`;
    if (word === "-u" || word === "-C" || word === "--unset" || word === "--chdir") i++;
    else if (word === "--" || /^[A-Za-z_][A-Za-z0-9_]*=/.test(word) || word.startsWith("-")) continue;
    else return `env runs ${JSON.stringify(word)}: allow that command's own prefix instead`;
  }
  return undefined;
}

function basename(word: string): string {
  return word.slice(word.lastIndexOf("/") + 1);
}
