/**
 * Notices when the file a SqliteStore has open is no longer the store's file: deleted, replaced
 * or moved away (the path no longer leads to the open file), or overwritten over its header.
 * SQLite does not: a connection keeps writing to a deleted file's inode, whose rows vanish when
 * the store closes, and it keeps serving pages from its cache over a header turned to garbage
 * until the file is reopened and found malformed.
 *
 * A check is two system calls, about 4 µs: a `stat` of the path, and a read of the header's
 * first 16 bytes through the connection's own descriptor. The descriptor is found once among
 * the process's open files (`/proc/self/fd`, `/dev/fd`). The guard never opens or closes the
 * file itself: closing any descriptor of a file drops every POSIX lock this process holds on
 * it, SQLite's included, and another process could then take the file for unused and reset
 * its WAL under a live connection. Where open files cannot be listed (Windows, which also
 * refuses to delete an open file), the header is not read; the path is still checked.
 */
import { fstatSync, readdirSync, readSync, type Stats, statSync } from "node:fs";
import { StoreError } from "./types.js";

/** The first 16 bytes of every SQLite database file. */
const MAGIC = Buffer.from("SQLite format 3\0", "latin1");

/** Where a process's open descriptors are listed: Linux, then macOS and the BSDs. */
const FD_DIRS = ["/proc/self/fd", "/dev/fd"];

/** A file's identity, as the kernel knows it: device and inode. */
type Identity = { dev: number; ino: number };

/** The descriptors this process has open on the file at `path` (none if it does not exist). */
export function descriptorsOf(path: string): Set<number> {
  const file = statSync(path, { throwIfNoEntry: false });
  return file === undefined ? new Set() : descriptorsOfFile(file);
}

function descriptorsOfFile(file: Identity): Set<number> {
  const found = new Set<number>();
  for (const dir of FD_DIRS) {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      const fd = Number(name);
      if (!Number.isInteger(fd)) continue;
      try {
        if (sameFile(fstatSync(fd), file)) found.add(fd);
      } catch {
        // Closed since it was listed (the directory's own descriptor is), or not ours to stat.
      }
    }
    return found;
  }
  return found;
}

function sameFile(a: Identity, b: Identity): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/**
 * Checks that a store's path still leads to the file its connection opened, and that the
 * file still starts with an SQLite header.
 *
 * @example
 * const before = descriptorsOf(path);
 * const db = new Database(path);
 * const guard = new SqliteFileGuard(path, before);
 * guard.check(); // a StoreError if the file was deleted, replaced or overwritten; else undefined
 */
export class SqliteFileGuard {
  readonly #path: string;
  readonly #file: Identity;
  /** The connection's descriptor of the file, when it could be told apart (see `descriptorsOf`). */
  #fd: number | undefined;
  readonly #header = Buffer.alloc(MAGIC.length);

  /**
   * Call right after the connection opened the file; `before` is `descriptorsOf(path)` from
   * just before, so that the connection's own descriptor is the new one (another connection's
   * could be closed, and its number reused for another file, while this store is open).
   */
  constructor(path: string, before: ReadonlySet<number>) {
    this.#path = path;
    const file = statSync(path);
    this.#file = { dev: file.dev, ino: file.ino };
    const opened = [...descriptorsOfFile(this.#file)].filter((fd) => !before.has(fd));
    // SQLite may reuse a descriptor another of this process's connections left open on the
    // file; then there is no telling which is this connection's, and the header goes unread.
    this.#fd = opened.length === 1 ? opened[0] : undefined;
  }

  /** Undefined while all is well; otherwise the error the store must fail with from now on. */
  check(): StoreError | undefined {
    let now: Stats | undefined;
    try {
      now = statSync(this.#path, { throwIfNoEntry: false });
    } catch {
      // Not knowing is not a finding (a directory made unreadable, say).
      return undefined;
    }
    if (now === undefined)
      return this.#lost("its file was deleted (or moved away) while the store had it open");
    if (!sameFile(now, this.#file))
      return this.#lost("its file was replaced by another file while the store had it open");
    if (this.#fd !== undefined && !this.#headerIntact()) {
      return new StoreError(
        `the SQLite store at ${this.#path} is damaged: its file no longer starts with an SQLite header ` +
          "(something other than SQLite wrote over it); nothing more is stored in it. Stop every process " +
          "using the file and restore it from a backup",
        { retryable: false },
      );
    }
    return undefined;
  }

  #headerIntact(): boolean {
    let read: number;
    try {
      read = readSync(this.#fd!, this.#header, 0, this.#header.length, 0);
    } catch {
      this.#fd = undefined;
      return true;
    }
    if (read === MAGIC.length && this.#header.equals(MAGIC)) return true;
    // Before calling the file damaged, make sure the descriptor is still the store's file.
    try {
      if (sameFile(fstatSync(this.#fd!), this.#file)) return false;
    } catch {
      // Closed: nothing to read any more.
    }
    this.#fd = undefined;
    return true;
  }

  #lost(what: string): StoreError {
    return new StoreError(
      `the SQLite store at ${this.#path} can no longer be written: ${what}, so what it wrote from then on ` +
        "would be in no file once it closed; nothing more is stored. Close this store, then put the file back " +
        "or open a new store there (it starts an empty file)",
      { retryable: false },
    );
  }
}
