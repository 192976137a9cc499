/**
 * Notices when the file a SqliteStore has open is no longer the store's file: deleted, replaced
 * or moved away (the path no longer leads to the open file), or overwritten over its header.
 * SQLite does not: a connection keeps writing to a deleted file's inode, whose rows vanish when
 * the store closes, and it keeps serving pages from its cache over a header turned to garbage
 * until the file is reopened and found malformed. The same holds for the two files beside it in
 * WAL mode: `-wal`, where every commit since the last checkpoint lives (deleted, a run's whole
 * log may be in no file at all), and `-shm`, whose locks keep two processes from writing at
 * once (deleted, another process starts a new one and no longer sees this one's locks).
 *
 * A check is four system calls, about 4 µs: an `fstat` of the connection's own descriptor (a
 * deleted file has no links left) and a read of the header's first 16 bytes through it, and an
 * `fstat` of a descriptor of the `-wal` and of the `-shm`; the paths are looked up every 100 ms. The descriptor is found once among the process's open files
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

/**
 * A file SQLite keeps beside the database in WAL mode, as the guard follows it: its identity
 * and a descriptor of it (any of this process's: every one of them is that inode, and its link
 * count says whether the file is still linked).
 */
type SideFile = {
  path: string;
  /** What the file is, in the store's words ("write-ahead log", "shared-memory index"). */
  what: string;
  /** What losing it costs. */
  cost: string;
  file: Identity;
  fd: number | undefined;
  /** When (epoch ms) the path is next looked up. */
  pathDueAt: number;
};

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

/** The files SQLite keeps beside the database in WAL mode: what the store calls each, and what losing it costs. */
const SIDE_FILES = [
  [
    "-wal",
    "write-ahead log",
    "what it committed since the last checkpoint is in no file another process can open",
  ],
  [
    "-shm",
    "shared-memory index",
    "another process would no longer see its locks, and two processes could write the file at once",
  ],
] as const;

/** What to do about a lost side file. */
const SIDE_REMEDY =
  "Close this store now: when no other process has the database open, SQLite copies the log it still " +
  "holds into the database file as it closes; then open a new store at the path";

/**
 * How often the path is looked up again while the connection's descriptor says the file is
 * still linked: a file moved away (still linked under another name) is noticed within this.
 * A deleted file, or one another file was moved over, is noticed at the next check, through
 * the descriptor.
 */
const PATH_CHECK_MS = 100;

/**
 * Checks that a store's path still leads to the file its connection opened, that the file
 * still starts with an SQLite header, and that its `-wal` and `-shm` are still the files the
 * connection has open.
 *
 * @example
 * const before = descriptorsOf(path);
 * const db = new Database(path);
 * const guard = new SqliteFileGuard(path, before);
 * guard.check(); // a StoreError if the file (or its -wal, -shm) was deleted, replaced or overwritten; else undefined
 */
export class SqliteFileGuard {
  readonly #path: string;
  readonly #file: Identity;
  /** The connection's descriptor of the file, when it could be told apart (see `descriptorsOf`). */
  #fd: number | undefined;
  readonly #header = Buffer.alloc(MAGIC.length);
  /** When (epoch ms) the path is next looked up; until then the descriptor answers alone. */
  #pathDueAt = 0;
  /** The `-wal` and `-shm` files, those that existed once the connection had opened the database. */
  readonly #sideFiles: SideFile[] = [];

  /**
   * Call right after the connection opened the file (and, in WAL mode, read it once, which
   * opens its `-wal` and `-shm`); `before` is `descriptorsOf(path)` from just before, so that
   * the connection's own descriptor is the new one (another connection's could be closed, and
   * its number reused for another file, while this store is open).
   */
  constructor(path: string, before: ReadonlySet<number>) {
    this.#path = path;
    const file = statSync(path);
    this.#file = { dev: file.dev, ino: file.ino };
    const opened = [...descriptorsOfFile(this.#file)].filter((fd) => !before.has(fd));
    // SQLite may reuse a descriptor another of this process's connections left open on the
    // file; then there is no telling which is this connection's, and only the path is checked.
    this.#fd = opened.length === 1 ? opened[0] : undefined;
    for (const [suffix, what, cost] of SIDE_FILES) {
      const sidePath = path + suffix;
      const side = statSync(sidePath, { throwIfNoEntry: false });
      if (side === undefined) continue;
      const identity = { dev: side.dev, ino: side.ino };
      const [fd] = descriptorsOfFile(identity);
      this.#sideFiles.push({ path: sidePath, what, cost, file: identity, fd, pathDueAt: 0 });
    }
  }

  /**
   * Undefined while all is well; otherwise the error the store must fail with from now on.
   * Usually four system calls, about 4 µs: an `fstat` of the descriptor (is the file still
   * linked?), a read of the header, and an `fstat` each of the `-wal` and the `-shm`; the
   * paths' `stat` every 100 ms, or whenever a descriptor cannot answer.
   */
  check(): StoreError | undefined {
    return this.#checkDatabase() ?? this.#checkSideFiles();
  }

  #checkDatabase(): StoreError | undefined {
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

  /**
   * The `-wal` and `-shm` files: still linked (their descriptor's link count), and every 100 ms
   * (or each time, without a descriptor) still at their paths. SQLite never deletes or replaces
   * either while a connection has the database open (the last one to close deletes them), so
   * any change is someone else's doing.
   */
  #checkSideFiles(): StoreError | undefined {
    for (const side of this.#sideFiles) {
      let linked: boolean | undefined;
      if (side.fd !== undefined) {
        try {
          const open = fstatSync(side.fd);
          if (sameFile(open, side.file)) linked = open.nlink > 0;
          else side.fd = undefined;
        } catch {
          side.fd = undefined;
        }
      }
      const now = Date.now();
      if (linked === true && now < side.pathDueAt) continue;
      side.pathDueAt = now + PATH_CHECK_MS;
      let atPath: Stats | undefined;
      try {
        atPath = statSync(side.path, { throwIfNoEntry: false });
      } catch {
        // Not knowing is not a finding; an unlinked descriptor is.
        if (linked === false) return this.#sideLost(side, "deleted");
        continue;
      }
      if (atPath !== undefined && sameFile(atPath, side.file)) continue;
      const how = atPath !== undefined ? "replaced by another file" : linked ? "moved away" : "deleted";
      return this.#sideLost(side, how);
    }
    return undefined;
  }

  #sideLost(side: SideFile, how: string): StoreError {
    return this.#lost(
      `its ${side.what} ${side.path} was ${how} while the store had it open: ${side.cost}`,
      SIDE_REMEDY,
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

  #lost(
    what: string,
    remedy = "Close this store, then put the file back or open a new store at the path (it starts an empty file)",
  ): StoreError {
    return new StoreError(
      `the SQLite store at ${this.#path} can no longer be written: ${what}; nothing more is stored. ${remedy}`,
      { retryable: false },
    );
  }
}
