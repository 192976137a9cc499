import { closeSync, constants, fstatSync, openSync, readlinkSync, realpathSync, statSync } from "node:fs";
import { type FileHandle, open, readlink, realpath, stat } from "node:fs/promises";
import { ToolError } from "../errors.js";
import { codeOf, isWithin } from "./paths.js";

/**
 * Opening to read: never through a symbolic link at the last step (O_NOFOLLOW: a link swapped in
 * after the check fails with ELOOP instead of being followed), and never blocking on a FIFO
 * swapped in for a file (O_NONBLOCK; `fstat` then says it is not a regular file).
 */
export const READ_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

/**
 * How an opened descriptor is verified. "proc": Linux's `/proc/self/fd/N` names the file the
 * descriptor really is, wherever the path led. "stat": elsewhere (or without /proc), the path must
 * still resolve to itself and name the same file (device and inode) as the descriptor — this
 * catches a swap still in place after the open, not one swapped back in between.
 */
export type DescriptorCheck = "proc" | "stat";

const PLATFORM_CHECK: DescriptorCheck = process.platform === "linux" ? "proc" : "stat";

/**
 * Opens `expected` — a real path already resolved inside `root` — for reading, and proves the
 * descriptor is that file before anything is read from it: a directory or file swapped for a link
 * (to a secret outside the root, say) between the check and the open is refused. Errors of the
 * open itself (ENOENT, EACCES…) are thrown as they are, for the caller to word; a swap is a
 * `ToolError` naming `given`.
 *
 * @example
 * const handle = await openInside(target.real, target.root, "notes.md");
 * try { await handle.read(buffer, 0, buffer.length, 0); } finally { await handle.close(); }
 */
export async function openInside(
  expected: string,
  root: string,
  given: string,
  check: DescriptorCheck = PLATFORM_CHECK,
): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(expected, READ_FLAGS);
  } catch (error) {
    if (codeOf(error) === "ELOOP") throw swapped(given, undefined, root);
    throw error;
  }
  try {
    await verifyDescriptor(handle, expected, root, given, check);
    return handle;
  } catch (error) {
    await handle.close().catch(() => {});
    throw error;
  }
}

/**
 * Proves that an open `handle` is the file at `expected` (inside `root`), with /proc on Linux,
 * else by device and inode; throws a `ToolError` naming `given` when it is not.
 */
export async function verifyDescriptor(
  handle: FileHandle,
  expected: string,
  root: string,
  given: string,
  check: DescriptorCheck = PLATFORM_CHECK,
): Promise<void> {
  const found = await whereIs(handle, expected, check);
  if (found !== true) throw swapped(given, found, root);
}

/**
 * `true` when an open `handle` is the file at `expected`; else where it really is, when that is
 * known. Works after a rename too: the descriptor follows its file.
 */
export async function whereIs(
  handle: FileHandle,
  expected: string,
  check: DescriptorCheck = PLATFORM_CHECK,
): Promise<true | string | undefined> {
  if (check === "proc") {
    try {
      const actual = await readlink(`/proc/self/fd/${handle.fd}`);
      return sameFile(actual, expected) ? true : actual;
    } catch {
      // No /proc mounted (a minimal container): fall back to comparing identities.
    }
  }
  const [opened, now, real] = await Promise.all([
    handle.stat({ bigint: true }),
    stat(expected, { bigint: true }).catch(() => undefined),
    realpath(expected).catch(() => undefined),
  ]);
  return real === expected && now && now.dev === opened.dev && now.ino === opened.ino ? true : undefined;
}

/**
 * The synchronous `openInside` for the search thread: the descriptor of `expected`, or
 * `undefined` when it cannot be opened or is not the file that was checked (the search then
 * skips it, as it skips an unreadable file).
 */
export function openInsideSync(
  expected: string,
  root: string,
  check: DescriptorCheck = PLATFORM_CHECK,
): number | undefined {
  const fd = openReadSync(expected);
  if (fd === undefined) return undefined;
  if (isAtSync(fd, expected, root, check)) return fd;
  closeSync(fd);
  return undefined;
}

/** Opens a file to read with `READ_FLAGS` (a link at the last step is not followed); `undefined` if it cannot. */
export function openReadSync(file: string): number | undefined {
  try {
    return openSync(file, READ_FLAGS);
  } catch {
    return undefined;
  }
}

/** The synchronous `whereIs`: whether descriptor `fd` is the file at `expected`, inside `root`. */
export function isAtSync(
  fd: number,
  expected: string,
  root: string,
  check: DescriptorCheck = PLATFORM_CHECK,
): boolean {
  if (check === "proc") {
    try {
      const actual = readlinkSync(`/proc/self/fd/${fd}`);
      return sameFile(actual, expected) && isWithin(root, actual);
    } catch {
      // No /proc: compare identities below.
    }
  }
  try {
    const opened = fstatSync(fd, { bigint: true });
    const now = statSync(expected, { bigint: true, throwIfNoEntry: false });
    return realpathSync(expected) === expected && now?.dev === opened.dev && now.ino === opened.ino;
  } catch {
    return false;
  }
}

/**
 * Whether /proc names the expected file. A file replaced since it was opened (its name now
 * belongs to another) reads as "<path> (deleted)": it was still the file at that path, inside the
 * root, when it was opened, so what it holds may be read.
 */
function sameFile(actual: string, expected: string): boolean {
  return actual === expected || actual === `${expected} (deleted)`;
}

function swapped(given: string, actual: string | undefined, root: string): ToolError {
  const where =
    actual === undefined
      ? "a symbolic link was swapped in"
      : isWithin(root, actual)
        ? "it was moved or replaced"
        : "a symbolic link leading outside the workspace was swapped in";
  return new ToolError(`${given} changed while it was being opened (${where}); nothing was read from it`, {
    hint: "Another process is changing the workspace. Try again once it has settled.",
  });
}
