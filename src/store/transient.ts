/**
 * Which store failures come from the store's surroundings (a full disk, a lost connection, a
 * database that did not answer) rather than from the data. Such a failure says nothing about
 * the run: once the store works again, the run can go on from its log.
 */

/** errno codes Node reports for a full disk, an I/O fault or a network that went away. */
const TRANSIENT_ERRNO = new Set([
  "ENOSPC",
  "EDQUOT",
  "EIO",
  "EAGAIN",
  "EBUSY",
  "EMFILE",
  "ENFILE",
  "ENOMEM",
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENETDOWN",
  "EAI_AGAIN",
  "ENOTCONN",
]);

/** SQLite result codes (better-sqlite3's `code`) for a full disk, a lock held too long or an I/O fault. */
const TRANSIENT_SQLITE = /^SQLITE_(FULL|BUSY|LOCKED|IOERR|NOMEM|PROTOCOL|CANTOPEN)/;

/**
 * PostgreSQL SQLSTATEs: class 08 (connection exception), 53 (insufficient resources: disk
 * full, out of memory, too many connections), 57P01–57P05 (the server is shutting down,
 * restarting or idle-killed the session), 57014 (statement timeout), 40001 / 40P01
 * (serialization failure, deadlock), 55P03 (lock not available), 58030 (I/O error).
 */
const TRANSIENT_SQLSTATE = /^(08|53)|^57P0[1-5]$|^57014$|^40001$|^40P01$|^55P03$|^58030$/;

/** Messages of drivers that report a lost connection without a code (node-postgres does). */
const TRANSIENT_MESSAGE =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|socket hang up|not queryable|Query read timeout/i;

/**
 * True when `error` (or an error in its `cause` chain) is a failure that may pass: a full
 * disk, a lost or refused connection, a timeout, a busy lock.
 *
 * @example
 * isTransientFailure(Object.assign(new Error("no space left on device"), { code: "ENOSPC" })) // true
 */
export function isTransientFailure(error: unknown): boolean {
  for (let depth = 0, current = error; depth < 8 && current != null; depth++) {
    if (typeof current !== "object") return false;
    const { code, retryable, message } = readFields(current);
    if (retryable === true) return true;
    if (typeof code === "string") {
      if (TRANSIENT_ERRNO.has(code) || TRANSIENT_SQLITE.test(code)) return true;
      if (/^[0-9A-Z]{5}$/.test(code) && TRANSIENT_SQLSTATE.test(code)) return true;
    }
    if (typeof message === "string" && TRANSIENT_MESSAGE.test(message)) return true;
    current = readFields(current).cause;
  }
  return false;
}

/** Reads the fields that matter without trusting the object: a throwing getter reads as absent. */
function readFields(value: object): {
  code?: unknown;
  retryable?: unknown;
  message?: unknown;
  cause?: unknown;
} {
  const read = (key: string) => {
    try {
      return (value as Record<string, unknown>)[key];
    } catch {
      return undefined;
    }
  };
  return { code: read("code"), retryable: read("retryable"), message: read("message"), cause: read("cause") };
}
