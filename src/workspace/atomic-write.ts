import { randomBytes } from "node:crypto";
import { mkdir, open, rename, stat, unlink } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "../errors.js";
import { whereIs } from "./opened-file.js";
import { codeOf, isWithin } from "./paths.js";
import { TEMP_SUFFIX } from "./walk.js";

/**
 * Writes `data` to `realPath` so that a reader (or a crash) sees either the old file or the
 * new one, never half of one: a temporary file in the same real directory (a rename across
 * file systems is not atomic), written, fsynced, given the old file's mode, then renamed over
 * the target. The directory is fsynced too, so the rename survives a power cut.
 *
 * `realPath` must already be resolved inside `root` (links followed): renaming over a link
 * would replace the link rather than write where it points. What was opened is checked, not
 * only what was resolved: the temporary file must be in the directory that was checked before
 * a byte goes into it (a folder swapped for a link meanwhile is refused), and the renamed file
 * must be at `realPath` after the rename (if a folder was swapped in that instant, the error
 * says where the file went: Node has no `renameat`, so that last step is by path).
 */
export async function atomicWrite(
  realPath: string,
  data: Uint8Array,
  root: string,
  name: string,
): Promise<void> {
  const dir = path.dirname(realPath);
  await mkdir(dir, { recursive: true });
  let mode: number | undefined;
  try {
    mode = (await stat(realPath)).mode & 0o7777;
  } catch (error) {
    if (codeOf(error) !== "ENOENT") throw error;
  }
  const temp = path.join(dir, `.${path.basename(realPath)}.${randomBytes(6).toString("hex")}${TEMP_SUFFIX}`);
  // "wx" is O_CREAT | O_EXCL: a link already at the temporary name is never followed.
  const handle = await open(temp, "wx", mode ?? 0o666);
  let renamed = false;
  try {
    const opened = await whereIs(handle, temp);
    if (opened !== true) {
      throw new ToolError(
        `the folder of ${name} changed while it was being written (${elsewhere(opened, root)}); nothing was written`,
        { hint: "Another process is changing the workspace. Try again once it has settled." },
      );
    }
    await handle.writeFile(data);
    // `open` applies the umask; an existing file keeps exactly the mode it had.
    if (mode !== undefined) await handle.chmod(mode);
    await handle.sync();
    await rename(temp, realPath);
    renamed = true;
    const landed = await whereIs(handle, realPath);
    if (landed !== true) {
      throw new ToolError(
        `${name} was written, but its folder changed during the rename (${elsewhere(landed, root)})` +
          (landed ? `: the content is at ${landed}` : ""),
        { hint: "Another process is changing the workspace: check where the file is before going on." },
      );
    }
    await syncDirectory(dir);
  } finally {
    await handle.close().catch(() => {});
    if (!renamed) await unlink(temp).catch(() => {});
  }
}

function elsewhere(actual: string | undefined, root: string): string {
  if (actual === undefined) return "a symbolic link was swapped in";
  return isWithin(root, actual)
    ? "it was moved"
    : "a symbolic link leading outside the workspace was swapped in";
}

async function syncDirectory(dir: string): Promise<void> {
  try {
    const handle = await open(dir, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Some file systems cannot fsync a directory; the rename itself has happened.
  }
}
