import type { Dirent } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import ignore, { type Ignore } from "ignore";
import { toPosix } from "./paths.js";

/** Directories never descended into unless the caller asks for them by path or glob. */
export const SKIPPED_DIRECTORIES = new Set([".git", "node_modules"]);

/** A file the walk found. */
export type WalkEntry = { relative: string; absolute: string; symlink: boolean };

type Rules = { base: string; matcher: Ignore };

export type WalkOptions = {
  /** The real workspace root; `.gitignore` files apply from here down. */
  root: string;
  /** The real directory to start from (the root or below it). */
  start: string;
  /** Also walk `.git/` and `node_modules/`. */
  includeSkipped?: boolean;
  signal?: AbortSignal;
};

/**
 * The files under `start`, depth first in name order, honouring every `.gitignore` from the root
 * down (nested files and `!` negations included) and skipping `.git/` and `node_modules/`.
 * Symbolic links are reported (flagged) but never followed: a walk cannot leave the root through
 * one, nor loop.
 */
export async function* walkFiles(options: WalkOptions): AsyncGenerator<WalkEntry> {
  const rules: Rules[] = [];
  // The .gitignore files of the directories between the root and the start apply too.
  const between = path.relative(options.root, options.start);
  let dir = options.root;
  for (const part of between ? between.split(path.sep) : []) {
    const own = await loadRules(dir);
    if (own) rules.push(own);
    dir = path.join(dir, part);
  }
  yield* walkDirectory(options.start, rules, options);
}

async function* walkDirectory(
  dir: string,
  inherited: Rules[],
  options: WalkOptions,
): AsyncGenerator<WalkEntry> {
  options.signal?.throwIfAborted();
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return; // unreadable or vanished meanwhile: nothing to list
  }
  const own = await loadRules(dir);
  const rules = own ? [...inherited, own] : inherited;
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const absolute = path.join(dir, entry.name);
    const isDir = entry.isDirectory();
    if (isDir && !options.includeSkipped && SKIPPED_DIRECTORIES.has(entry.name)) continue;
    if (isIgnored(rules, absolute, isDir)) continue;
    if (isDir) yield* walkDirectory(absolute, rules, options);
    else if (entry.isFile() || entry.isSymbolicLink()) {
      yield {
        relative: toPosix(path.relative(options.root, absolute)),
        absolute,
        symlink: entry.isSymbolicLink(),
      };
    }
  }
}

async function loadRules(dir: string): Promise<Rules | undefined> {
  let text: string;
  try {
    text = await readFile(path.join(dir, ".gitignore"), "utf8");
  } catch {
    return undefined;
  }
  return { base: dir, matcher: ignore().add(text) };
}

/** Deepest rule with an opinion wins, as in git (a nested `!pattern` re-includes). */
function isIgnored(rules: Rules[], absolute: string, isDir: boolean): boolean {
  let ignored = false;
  for (const { base, matcher } of rules) {
    const rel = toPosix(path.relative(base, absolute));
    const result = matcher.test(isDir ? `${rel}/` : rel);
    if (result.ignored) ignored = true;
    else if (result.unignored) ignored = false;
  }
  return ignored;
}
