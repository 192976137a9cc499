/**
 * Notices when the file a SqliteStore has open is no longer the store's file: deleted, replaced
 * or moved away (the path no longer leads to the open file), or overwritten over its header.
 * SQLite does not: a connection keeps writing to a deleted file's inode, whose rows vanish when
 * the store closes, and it keeps serving pages from its cache over a header turned to garbage
 * until the file is reopened and found malformed.
 *
 * A check is two system calls, about 3 µs: an `fstat` of the connection's own descriptor (a
 * deleted file has no links left) and a read of the header's first 16 bytes through it; the
 * path is looked up every 100 ms. The descriptor is found once among the process's open files
 * (`/proc/self/fd`, `/dev/fd`). The guard never opens or closes the
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
 * How often the path is looked up again while the connection's descriptor says the file is
 * still linked: a file moved away (still linked under another name) is noticed within this.
 * A deleted file, or one another file was moved over, is noticed at the next check, through
 * the descriptor.
 */
const PATH_CHECK_MS = 100;

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
  /** When (epoch ms) the path is next looked up; until then the descriptor answers alone. */
  #pathDueAt = 0;

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
    // file; then there is no telling which is this connection's, and only the path is checked.
    this.#fd = opened.length === 1 ? opened[0] : undefined;
  }

  /**
   * Undefined while all is well; otherwise the error the store must fail with from now on.
   * Usually two system calls, about 3 µs: an `fstat` of the descriptor (is the file still
   * linked?) and a read of the header; the path's `stat` every 100 ms, or whenever the
   * descriptor cannot answer.
   */
  check(): StoreError | undefined {
    const open = this.#openFile();
    if (open !== undefined && open.nlink > 0) {
      if (!this.#headerIntact()) return this.#damagedHeader();
      const now = Date.now();
      if (now < this.#pathDueAt) return undefined;
      this.#pathDueAt = now + PATH_CHECK_MS;
    }
    let atPath: Stats | undefined;
    try {
      atPath = statSync(this.#path, { throwIfNoEntry: false });
    } catch {
      // Not knowing is not a finding (a directory made unreadable, say).
      return undefined;
    }
    if (atPath !== undefined && sameFile(atPath, this.#file)) return undefined;
    if (atPath !== undefined) {
      return this.#lost(
        "its file was replaced by another file while the store had it open: what it wrote from then on would not be in the file at the path",
      );
    }
    if (open !== undefined && open.nlink > 0) {
      return this.#lost(
        "its file was moved away while the store had it open: a store opened at the path would not find what it wrote",
      );
    }
    return this.#lost(
      "its file was deleted while the store had it open: what it wrote from then on would vanish when it closed",
    );
  }

  /** The descriptor's file, while the descriptor is still the store's file. */
  #openFile(): Stats | undefined {
    if (this.#fd === undefined) return undefined;
    try {
      const open = fstatSync(this.#fd);
      if (sameFile(open, this.#file)) return open;
    } catch {
      // Closed: the connection is gone.
    }
    this.#fd = undefined;
    return undefined;
  }

  #headerIntact(): boolean {
    try {
      const read = readSync(this.#fd!, this.#header, 0, this.#header.length, 0);
      return read === MAGIC.length && this.#header.equals(MAGIC);
    } catch {
      // A read that fails is SQLite's to report, on its own next read.
      return true;
    }
  }

  #damagedHeader(): StoreError {
    return new StoreError(
      `the SQLite store at ${this.#path} is damaged: its file no longer starts with an SQLite header ` +
        "(something other than SQLite wrote over it); nothing more is stored in it. Stop every process " +
        "using the file and restore it from a backup",
      { retryable: false },
    );
  }

  #lost(what: string): StoreError {
    return new StoreError(
      `the SQLite store at ${this.#path} can no longer be written: ${what}; nothing more is stored. ` +
        "Close this store, then put the file back or open a new store at the path (it starts an empty file)",
      { retryable: false },
    );
  }
}
