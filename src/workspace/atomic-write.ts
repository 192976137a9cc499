import { randomBytes } from "node:crypto";
import { mkdir, open, rename, stat, unlink } from "node:fs/promises";
import path from "node:path";
import { codeOf } from "./paths.js";
import { TEMP_SUFFIX } from "./walk.js";

/**
 * Writes `data` to `realPath` so that a reader (or a crash) sees either the old file or the
 * new one, never half of one: a temporary file in the same real directory (a rename across
 * file systems is not atomic), written, fsynced, given the old file's mode, then renamed over
 * the target. The directory is fsynced too, so the rename survives a power cut.
 *
 * `realPath` must already be resolved (links followed): renaming over a link would replace the
 * link rather than write where it points.
 */
export async function atomicWrite(realPath: string, data: Uint8Array): Promise<void> {
  const dir = path.dirname(realPath);
  await mkdir(dir, { recursive: true });
  let mode: number | undefined;
  try {
    mode = (await stat(realPath)).mode & 0o7777;
  } catch (error) {
    if (codeOf(error) !== "ENOENT") throw error;
  }
  const temp = path.join(dir, `.${path.basename(realPath)}.${randomBytes(6).toString("hex")}${TEMP_SUFFIX}`);
  const handle = await open(temp, "wx", mode ?? 0o666);
  let renamed = false;
  try {
    await handle.writeFile(data);
    // `open` applies the umask; an existing file keeps exactly the mode it had.
    if (mode !== undefined) await handle.chmod(mode);
    await handle.sync();
    await handle.close();
    await rename(temp, realPath);
    renamed = true;
    await syncDirectory(dir);
  } finally {
    if (!renamed) {
      await handle.close().catch(() => {});
      await unlink(temp).catch(() => {});
    }
  }
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
