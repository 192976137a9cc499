import { type Dirent, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import ignore, { type Ignore } from "ignore";
import { toPosix } from "./paths.js";

/** Directories never descended into unless the caller asks for them by path or glob. */
export const SKIPPED_DIRECTORIES = new Set([".git", "node_modules"]);

/** A file the walk found. */
export type WalkEntry = { relative: string; absolute: string; symlink: boolean };

/** One `.gitignore`: its directory relative to the root ("" for the root) and its matcher. */
/** The suffix of atomic writes' temporary files (see atomic-write.ts). */
export const TEMP_SUFFIX = ".quiver-tmp";

type Rules = { base: string; matcher: Ignore };

export type WalkOptions = {
  /** The real workspace root; `.gitignore` files apply from here down. */
  root: string;
  /** The real directory to start from (the root or below it). */
  start: string;
  /** Also walk `.git/` and `node_modules/`. */
  includeSkipped?: boolean;
};

/**
 * The files under `start`, depth first in name order, honouring every `.gitignore` from the root
 * down (nested files and `!` negations included) and skipping `.git/` and `node_modules/`.
 * Symbolic links are reported (flagged) but never followed: a walk cannot leave the root through
 * one, nor loop.
 *
 * Synchronous on purpose: one promise per directory and per file costs more than the reading
 * itself (measured in bench/workspace-grep.ts). Callers iterate in time slices
 * (`TimeSlicer`) so the event loop is never held for long.
 */
export function* walkFiles(options: WalkOptions): Generator<WalkEntry> {
  const rules: Rules[] = [];
  // The .gitignore files of the directories between the root and the start apply too.
  const between = toPosix(path.relative(options.root, options.start));
  let relative = "";
  for (const part of between ? between.split("/") : []) {
    const own = loadRules(options.root, relative);
    if (own) rules.push(own);
    relative = relative ? `${relative}/${part}` : part;
  }
  yield* walkDirectory(options.start, between, rules, options);
}

function* walkDirectory(
  dir: string,
  relativeDir: string,
  inherited: Rules[],
  options: WalkOptions,
): Generator<WalkEntry> {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return; // unreadable or vanished meanwhile: nothing to list
  }
  const own = entries.some((e) => e.name === ".gitignore") ? loadRules(options.root, relativeDir) : undefined;
  const rules = own ? [...inherited, own] : inherited;
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  // Paths are built by concatenation: path.join/relative per entry cost more than the walk.
  const prefix = relativeDir ? `${relativeDir}/` : "";
  for (const entry of entries) {
    const absolute = `${dir}${path.sep}${entry.name}`;
    const relative = prefix + entry.name;
    const isDir = entry.isDirectory();
    if (isDir && !options.includeSkipped && SKIPPED_DIRECTORIES.has(entry.name)) continue;
    // The temporary file of a write that was killed halfway: not the project's.
    if (entry.name.endsWith(TEMP_SUFFIX)) continue;
    if (rules.length > 0 && isIgnored(rules, relative, isDir)) continue;
    if (isDir) yield* walkDirectory(absolute, relative, rules, options);
    else if (entry.isFile() || entry.isSymbolicLink()) {
      yield { relative, absolute, symlink: entry.isSymbolicLink() };
    }
  }
}

function loadRules(root: string, relativeDir: string): Rules | undefined {
  let text: string;
  try {
    text = readFileSync(path.join(root, relativeDir, ".gitignore"), "utf8");
  } catch {
    return undefined;
  }
  return { base: relativeDir, matcher: ignore().add(text) };
}

/** Deepest rule with an opinion wins, as in git (a nested `!pattern` re-includes). */
function isIgnored(rules: Rules[], relative: string, isDir: boolean): boolean {
  let ignored = false;
  for (const { base, matcher } of rules) {
    const rel = base ? relative.slice(base.length + 1) : relative;
    const result = matcher.test(isDir ? `${rel}/` : rel);
    if (result.ignored) ignored = true;
    else if (result.unignored) ignored = false;
  }
  return ignored;
}

/** How long synchronous work may hold the event loop before giving it back. */
const SLICE_MS = 10;

/**
 * Gives the event loop back every `SLICE_MS` of synchronous work, and stops when the signal
 * aborts: streaming, timers and other tool calls keep running while a big tree is searched.
 */
export class TimeSlicer {
  #since = performance.now();
  constructor(readonly signal?: AbortSignal) {}

  /** Call between units of work; awaits only when the slice is used up. */
  async tick(): Promise<void> {
    if (performance.now() - this.#since < SLICE_MS) return;
    await new Promise<void>((resume) => setImmediate(resume));
    this.signal?.throwIfAborted();
    this.#since = performance.now();
  }
}
