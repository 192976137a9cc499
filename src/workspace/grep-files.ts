import { spawn } from "node:child_process";
import { access, constants, stat } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "../errors.js";
import { jsonSchema } from "../tool/json-schema.js";
import { type Tool, tool } from "../tool/tool.js";
import { asksForSkipped, globMatcher } from "./globs.js";
import type { GrepMatch } from "./grep-search.js";
import { codeOf, resolveInside, toPosix } from "./paths.js";
import { searchOnThread } from "./search-threads.js";
import { TEMP_SUFFIX } from "./walk.js";

export type { GrepMatch } from "./grep-search.js";

const DEFAULT_MATCH_LIMIT = 100;
const MAX_MATCH_LIMIT = 2_000;
const MAX_MATCH_LINE_CHARS = 300;
/** A search running longer than this is stopped (a pathological pattern, a huge tree). */
const DEFAULT_SEARCH_TIME_LIMIT_MS = 60_000;

type GrepArgs = { pattern: string; path?: string; glob?: string; ignore_case?: boolean; limit?: number };

export type GrepOptions = {
  root: string;
  pattern: string;
  path?: string;
  glob?: string;
  ignoreCase?: boolean;
  limit?: number;
  signal?: AbortSignal;
  /** "auto" (default) uses `rg` when it is on PATH; "node" never does. */
  engine?: "auto" | "node" | "rg";
  /** Stop the Node search after this long, in ms (default 60,000). */
  timeLimitMs?: number;
};

export type GrepOutcome = {
  matches: GrepMatch[];
  truncated: boolean;
  filesSearched?: number;
  bytesSearched?: number;
  engine: "node" | "rg";
};

export function grepFilesTool(root: string): Tool<GrepArgs> {
  return tool({
    name: "grep_files",
    label: "Search files",
    description:
      "Search the workspace's text files for a regular expression (JavaScript syntax), line by line. Returns " +
      "`path:line:text` for each matching line. Files ignored by .gitignore, binary files, and the .git and " +
      "node_modules directories are skipped unless the path or glob names them.",
    parameters: jsonSchema<GrepArgs>({
      type: "object",
      properties: {
        pattern: { type: "string", description: "Regular expression to search for." },
        path: {
          type: "string",
          description: "File or directory to search, relative to the root. Default: the root.",
        },
        glob: { type: "string", description: 'Only files matching this glob ("*.ts", "src/**/*.md").' },
        ignore_case: { type: "boolean", default: false, description: "Match case-insensitively." },
        limit: {
          type: "integer",
          minimum: 1,
          maximum: MAX_MATCH_LIMIT,
          description: `At most this many matching lines. Default ${DEFAULT_MATCH_LIMIT}.`,
        },
      },
      required: ["pattern"],
      additionalProperties: false,
    }),
    readOnly: true,
    idempotent: true,
    execute: async ({ pattern, path: given, glob, ignore_case, limit }, ctx) => {
      const options: GrepOptions = { root, pattern, signal: ctx.signal };
      if (given !== undefined) options.path = given;
      if (glob !== undefined) options.glob = glob;
      if (ignore_case !== undefined) options.ignoreCase = ignore_case;
      if (limit !== undefined) options.limit = limit;
      const outcome = await grepFiles(options);
      if (outcome.matches.length === 0)
        return `No matches for ${JSON.stringify(pattern)}${glob ? ` in files matching ${glob}` : ""}.`;
      const lines = outcome.matches.map((m) => `${m.path}:${m.line}:${m.text}`);
      if (outcome.truncated) {
        lines.push(
          `[stopped at ${outcome.matches.length} matching lines: narrow the pattern, path or glob, or raise limit]`,
        );
      }
      return lines.join("\n");
    },
  });
}

/**
 * The search behind `grep_files`, usable on its own (the benchmark calls it). Uses `rg` when it
 * is already installed and the search fits it, else a Node walk that honours `.gitignore`.
 */
export async function grepFiles(options: GrepOptions): Promise<GrepOutcome> {
  // Checked here, so a bad pattern or glob is a clear error before any thread starts.
  compile(options.pattern, options.ignoreCase ?? false);
  globMatcher(options.glob);
  const start = await resolveInside(options.root, options.path ?? ".");
  const info = await stat(start.real).catch((error) => {
    throw new ToolError(
      codeOf(error) === "ENOENT"
        ? `${options.path} does not exist`
        : `cannot search ${options.path} (${codeOf(error)})`,
    );
  });
  const limit = Math.min(options.limit ?? DEFAULT_MATCH_LIMIT, MAX_MATCH_LIMIT);
  const engine = options.engine ?? "auto";
  if (engine !== "node" && (await ripgrepPath())) {
    const viaRg = await grepWithRipgrep(start.root, start.real, options, limit).catch((error) => {
      if (engine === "rg") throw error;
      return undefined; // a pattern rg's syntax refuses (lookbehind…) falls back to Node
    });
    if (viaRg) return viaRg;
  } else if (engine === "rg") {
    throw new ToolError("rg is not on PATH");
  }
  const result = await searchOnThread(
    {
      root: start.root,
      start: start.real,
      startRelative: start.relative,
      startIsFile: info.isFile(),
      pattern: options.pattern,
      ignoreCase: options.ignoreCase ?? false,
      ...(options.glob !== undefined && { glob: options.glob }),
      limit,
    },
    options.signal,
    options.timeLimitMs ?? DEFAULT_SEARCH_TIME_LIMIT_MS,
  );
  return { ...result, engine: "node" };
}

function compile(pattern: string, ignoreCase: boolean): RegExp {
  try {
    return new RegExp(pattern, `gm${ignoreCase ? "i" : ""}`);
  } catch (error) {
    throw new ToolError(`invalid pattern ${JSON.stringify(pattern)}: ${(error as Error).message}`, {
      hint: "The pattern is a JavaScript regular expression; escape special characters such as ( [ . * with a backslash.",
    });
  }
}

let ripgrep: Promise<string | undefined> | undefined;

async function isFile(file: string): Promise<boolean> {
  return (await stat(file).catch(() => undefined))?.isFile() ?? false;
}

/** `rg` if it is already on PATH. Never downloaded. */
export function ripgrepPath(): Promise<string | undefined> {
  ripgrep ??= (async () => {
    for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
      if (!dir) continue;
      const candidate = path.join(dir, "rg");
      try {
        await access(candidate, constants.X_OK);
        return candidate;
      } catch {}
    }
    return undefined;
  })();
  return ripgrep;
}

async function grepWithRipgrep(
  root: string,
  start: string,
  options: GrepOptions,
  limit: number,
): Promise<GrepOutcome | undefined> {
  const rg = (await ripgrepPath())!;
  const relativeStart = toPosix(path.relative(root, start)) || ".";
  const args = ["--json", "--hidden", "--no-require-git", "--no-config", "--no-ignore-parent"];
  // rg reads the .gitignore files of the searched folder and below; those of the folders between
  // the root and a searched subfolder must apply too (as in the Node walk), but .gitignore files
  // above the root must not. The root's own file is handed over with --ignore-file (its rules are
  // matched relative to the working directory, the root: exact); a nested one between the root
  // and the start has rules relative to its own folder, which rg cannot take, so that search
  // stays in Node.
  if (relativeStart !== ".") {
    if (await isFile(path.join(root, ".gitignore")))
      args.push("--ignore-file", path.join(root, ".gitignore"));
    let folder = root;
    for (const part of path.posix.dirname(relativeStart).split("/")) {
      if (part === ".") break;
      folder = path.join(folder, part);
      if (await isFile(path.join(folder, ".gitignore"))) return undefined;
    }
  }
  if (options.ignoreCase) args.push("--ignore-case");
  // The caller's glob is not passed to rg: its globs override .gitignore (a "*.ts" would bring
  // back ignored .ts files). Matches are filtered by the same matcher the Node walk uses.
  const wanted = globMatcher(options.glob);
  if (!asksForSkipped(relativeStart, options.glob)) args.push("--glob", "!.git", "--glob", "!node_modules");
  // Temporary files of writes killed halfway are not the project's (the Node walk skips them too).
  args.push("--glob", `!*${TEMP_SUFFIX}`);
  args.push("--regexp", options.pattern, "--", relativeStart);
  const child = spawn(rg, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  const matches: GrepMatch[] = [];
  let truncated = false;
  let buffer = "";
  let stderr = "";
  const onAbort = () => child.kill("SIGKILL");
  options.signal?.addEventListener("abort", onAbort, { once: true });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    if (stderr.length < 4_000) stderr += chunk;
  });
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    buffer += chunk;
    let newline = buffer.indexOf("\n");
    while (newline !== -1) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      newline = buffer.indexOf("\n");
      if (truncated) continue;
      const event = JSON.parse(line) as {
        type: string;
        data: { path?: { text?: string }; line_number?: number; lines?: { text?: string } };
      };
      if (event.type !== "match") continue;
      const file = toPosix(path.relative(root, path.resolve(root, event.data.path?.text ?? "")));
      if (wanted && !wanted(file)) continue;
      if (matches.length >= limit) {
        truncated = true;
        child.kill("SIGKILL");
        continue;
      }
      let text = (event.data.lines?.text ?? "").replace(/\r?\n$/, "");
      if (text.length > MAX_MATCH_LINE_CHARS) text = `${text.slice(0, MAX_MATCH_LINE_CHARS)} [...]`;
      matches.push({
        path: file,
        line: event.data.line_number ?? 0,
        text,
      });
    }
  });
  const code = await new Promise<number | null>((done, fail) => {
    child.on("error", fail);
    child.on("close", done);
  }).finally(() => options.signal?.removeEventListener("abort", onAbort));
  options.signal?.throwIfAborted();
  // rg: 0 = matches, 1 = none, 2 = an error (a pattern it cannot parse…); killed at the limit is fine.
  if (code === 2 && !truncated) throw new ToolError(`rg failed: ${stderr.trim()}`);
  return { matches, truncated, engine: "rg" };
}
