import { closeSync, fstatSync, readSync, realpathSync } from "node:fs";
import { asksForSkipped, globMatcher } from "./globs.js";
import { isAtSync, openReadSync } from "./opened-file.js";
import { isWithin } from "./paths.js";
import { looksBinary } from "./text-file.js";
import { type WalkEntry, walkFiles } from "./walk.js";

const MAX_MATCH_LINE_CHARS = 300;

/** One matching line. */
export type GrepMatch = { path: string; line: number; text: string };

/** What the Node search needs: plain data, so it can cross to a worker thread. */
export type SearchRequest = {
  /** The real root. */
  root: string;
  /** The real file or directory to search, and its path relative to the root. */
  start: string;
  startRelative: string;
  startIsFile: boolean;
  pattern: string;
  ignoreCase: boolean;
  glob?: string;
  limit: number;
};

export type SearchResult = {
  matches: GrepMatch[];
  truncated: boolean;
  filesSearched: number;
  bytesSearched: number;
};

/**
 * The Node search: walk (honouring .gitignore), read, match line by line. Synchronous — it runs
 * on a worker thread (grep-worker.ts), where a slow pattern cannot hold the run's event loop
 * and a cancel or a time limit ends it by terminating the thread.
 */
export function searchTree(request: SearchRequest): SearchResult {
  const regex = new RegExp(request.pattern, `gm${request.ignoreCase ? "i" : ""}`);
  const matches: GrepMatch[] = [];
  const state = { truncated: false, files: 0, bytes: 0 };
  const take = (found: GrepMatch[]) => {
    for (const match of found) {
      if (matches.length >= request.limit) {
        state.truncated = true;
        return;
      }
      matches.push(match);
    }
  };
  if (request.startIsFile) {
    take(
      searchFile(
        { relative: request.startRelative, absolute: request.start, symlink: false },
        request.root,
        regex,
        state,
      ),
    );
  } else {
    const matchesGlob = globMatcher(request.glob);
    for (const entry of walkFiles({
      root: request.root,
      start: request.start,
      includeSkipped: asksForSkipped(request.startRelative, request.glob),
    })) {
      if (matchesGlob && !matchesGlob(entry.relative)) continue;
      take(searchFile(entry, request.root, regex, state));
      if (state.truncated) break;
    }
  }
  return { matches, truncated: state.truncated, filesSearched: state.files, bytesSearched: state.bytes };
}

/** Files larger than this are skipped by the Node search (they would be read whole into memory). */
const MAX_SEARCH_FILE_BYTES = 64 * 1024 * 1024;

/** A regular file's bytes from an open descriptor, or `undefined` for anything else or a huge one. */
function readSmallFile(fd: number): Buffer | undefined {
  try {
    const info = fstatSync(fd);
    if (!info.isFile() || info.size > MAX_SEARCH_FILE_BYTES) return undefined;
    const buffer = Buffer.allocUnsafe(info.size);
    let filled = 0;
    while (filled < info.size) {
      const read = readSync(fd, buffer, filled, info.size - filled, filled);
      if (read === 0) break;
      filled += read;
    }
    return filled === info.size ? buffer : buffer.subarray(0, filled);
  } catch {
    return undefined;
  }
}

/** The matching lines of one file; binary files, and links that lead out of the root, give none. */
function searchFile(
  entry: WalkEntry,
  root: string,
  regex: RegExp,
  state: { files: number; bytes: number },
): GrepMatch[] {
  let file = entry.absolute;
  if (entry.symlink) {
    try {
      file = realpathSync(entry.absolute);
    } catch {
      return [];
    }
    if (!isWithin(root, file)) return [];
  }
  // O_NOFOLLOW | O_NONBLOCK: a link swapped in for the file is not followed, a FIFO not waited on.
  const fd = openReadSync(file);
  if (fd === undefined) return [];
  try {
    const bytes = readSmallFile(fd);
    if (bytes === undefined) return [];
    const found = bytes.length === 0 || looksBinary(bytes) ? [] : matchLines(bytes, entry.relative, regex);
    // Only what is shown needs proof that the descriptor is the file the walk saw (not one
    // reached through a folder swapped for a link): checked for files with matches, which
    // keeps the extra system call off the common path, a file without any.
    if (found.length > 0 && !isAtSync(fd, file, root)) return [];
    state.files++;
    state.bytes += bytes.length;
    return found;
  } finally {
    closeSync(fd);
  }
}

/** The lines of a text file's bytes that match. */
function matchLines(bytes: Buffer, relative: string, regex: RegExp): GrepMatch[] {
  const text = bytes.toString("utf8");
  // One scan for the common case, a file without a match; lastIndex starts over per file.
  const re = regex;
  re.lastIndex = 0;
  const found: GrepMatch[] = [];
  let line = 1;
  let counted = 0;
  let lastLine = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    for (let i = text.indexOf("\n", counted); i !== -1 && i < m.index; i = text.indexOf("\n", i + 1)) {
      line++;
      counted = i + 1;
    }
    if (m[0].length === 0) re.lastIndex++;
    if (line === lastLine) continue;
    lastLine = line;
    const lineStart = text.lastIndexOf("\n", m.index - 1) + 1;
    let lineEnd = text.indexOf("\n", m.index);
    if (lineEnd === -1) lineEnd = text.length;
    let content = text.slice(lineStart, lineEnd);
    if (content.endsWith("\r")) content = content.slice(0, -1);
    if (content.length > MAX_MATCH_LINE_CHARS) content = `${content.slice(0, MAX_MATCH_LINE_CHARS)} [...]`;
    found.push({ path: relative, line, text: content });
  }
  return found;
}
