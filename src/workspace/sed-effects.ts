/** GNU sed's long options, for reading abbreviations as sed does (`--in=x` is `--in-place=x`). */
const SED_LONG = [
  "expression",
  "file",
  "in-place",
  "line-length",
  "null-data",
  "zero-terminated",
  "quiet",
  "silent",
  "regexp-extended",
  "separate",
  "sandbox",
  "unbuffered",
  "posix",
  "debug",
  "follow-symlinks",
  "binary",
  "help",
  "version",
];

/**
 * What a sed command line writes or runs: `-i` / `--in-place`, a script read from a file
 * (`-f`), or a script with an `e`, `w` or `W` command or an `s///e` or `s///w` flag.
 *
 * @example
 * sedEffect(["-n", "1e id", "README.md"]); // "its sed script's e command runs a shell command"
 */
export function sedEffect(args: string[]): string | undefined {
  const scripts: string[] = [];
  const operands: string[] = [];
  let scriptOption = false;
  let options = true;
  for (let i = 0; i < args.length; i++) {
    const word = args[i]!;
    if (!options || word === "-" || !word.startsWith("-")) {
      operands.push(word);
      continue;
    }
    if (word === "--") {
      options = false;
      continue;
    }
    if (word.startsWith("--")) {
      const [name, value] = splitLong(word);
      const matches = SED_LONG.filter((o) => o.startsWith(name));
      const option = matches.includes(name) ? name : matches.length === 1 ? matches[0] : undefined;
      if (option === "in-place") return writes(word);
      if (option === "file") return `${JSON.stringify(word)} makes sed read its script from a file`;
      if (option === "expression") {
        scripts.push(value ?? args[++i] ?? "");
        scriptOption = true;
      } else if (option === "line-length" && value === undefined) i++;
      else if (option === undefined && ["in-place", "file"].some((o) => o.startsWith(name)))
        return `sed may read ${JSON.stringify(word)} as --in-place or --file`;
      continue;
    }
    for (let j = 1; j < word.length; j++) {
      const letter = word[j]!;
      if (letter === "i") return `${JSON.stringify(word)} makes sed edit files in place`;
      if (letter === "f") return `${JSON.stringify(word)} makes sed read its script from a file`;
      if (letter === "e") {
        scripts.push(j + 1 < word.length ? word.slice(j + 1) : (args[++i] ?? ""));
        scriptOption = true;
        break;
      }
      if (letter === "l") {
        if (j + 1 === word.length) i++;
        break;
      }
    }
  }
  if (!scriptOption) scripts.push(operands[0] ?? "");
  // sed joins its -e scripts with line breaks and reads them as one.
  return sedScriptEffect(scripts.join("\n"));
}

function splitLong(word: string): [name: string, value: string | undefined] {
  const equals = word.indexOf("=");
  return equals < 0 ? [word.slice(2), undefined] : [word.slice(2, equals), word.slice(equals + 1)];
}

/**
 * Reads a sed script as GNU sed does, far enough to find the commands and flags that write a
 * file or run a program: `e`, `w`, `W`, and `s///e`, `s///w file`. What it cannot read asks.
 */
function sedScriptEffect(script: string): string | undefined {
  const s = script;
  let i = 0;
  const unreadable = `the rule cannot read the sed script ${JSON.stringify(clip(s))}`;
  const blanks = () => {
    while (s[i] === " " || s[i] === "\t") i++;
  };
  const toLineEnd = () => {
    while (i < s.length && s[i] !== "\n") i += s[i] === "\\" ? 2 : 1;
  };
  const toLabelEnd = () => {
    while (i < s.length && s[i] !== "\n" && s[i] !== ";") i++;
  };
  /** Past the closing delimiter of a regex or replacement; false when there is none. */
  const delimited = (delimiter: string): boolean => {
    while (i < s.length) {
      const c = s[i]!;
      if (c === "\\") i += 2;
      else if (c === delimiter) {
        i++;
        return true;
      } else i++;
    }
    return false;
  };
  const address = (second: boolean): boolean => {
    const c = s[i];
    if (c === undefined) return true;
    if (/\d/.test(c) || (second && (c === "+" || c === "~"))) {
      i++;
      while (/[\d~]/.test(s[i] ?? "")) i++;
      return true;
    }
    if (c === "$") {
      i++;
      return true;
    }
    if (c === "/" || c === "\\") {
      const delimiter = c === "/" ? "/" : s[i + 1];
      i += c === "/" ? 1 : 2;
      if (delimiter === undefined || delimiter === "\n" || !delimited(delimiter)) return false;
      while (s[i] === "I" || s[i] === "M") i++;
    }
    return true;
  };
  for (;;) {
    while (i < s.length && /[\s;]/.test(s[i]!)) i++;
    if (i >= s.length) return undefined;
    if (!address(false)) return unreadable;
    blanks();
    if (s[i] === ",") {
      i++;
      blanks();
      if (!address(true)) return unreadable;
      blanks();
    }
    while (s[i] === "!") {
      i++;
      blanks();
    }
    const command = s[i++];
    switch (command) {
      case "{":
      case "}":
        continue;
      case "#":
        toLineEnd();
        continue;
      case "a":
      case "i":
      case "c":
      case "r":
      case "R":
        toLineEnd();
        continue;
      case "w":
      case "W":
        return `its sed script's ${command} command writes a file`;
      case "e":
        return "its sed script's e command runs a shell command";
      case ":":
      case "b":
      case "t":
      case "T":
      case "v":
        toLabelEnd();
        continue;
      case "s":
      case "y": {
        const delimiter = s[i++];
        if (delimiter === undefined || delimiter === "\n" || delimiter === "\\") return unreadable;
        if (!delimited(delimiter) || !delimited(delimiter)) return unreadable;
        if (command === "s") {
          while (i < s.length && /[gpiImM\d]/.test(s[i]!)) i++;
          if (s[i] === "e") return "its sed script's s///e flag runs the result as a shell command";
          if (s[i] === "w") return "its sed script's s///w flag writes a file";
        }
        break;
      }
      case "l":
      case "L":
      case "q":
      case "Q":
        blanks();
        while (/\d/.test(s[i] ?? "")) i++;
        break;
      default:
        if (command === undefined || !"=dDgGhHnNpPxzF".includes(command)) return unreadable;
    }
    blanks();
    if (i < s.length && !";\n}#".includes(s[i]!)) return unreadable;
  }
}

const writes = (option: string) => `${JSON.stringify(option)} makes sed write a file`;

function clip(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
