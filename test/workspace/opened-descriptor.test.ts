import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { grepFiles, workspace } from "quiver-agents/workspace";
import { afterEach, describe, expect, it } from "vitest";
import { atomicWrite } from "../../src/workspace/atomic-write.js";
import { type DescriptorCheck, openInside, openInsideSync } from "../../src/workspace/opened-file.js";
import { type Call, play, tempDir } from "./helpers.js";

const SECRET = "TOP-SECRET-7f3a";

let swapper: ChildProcess | undefined;
afterEach(() => {
  swapper?.kill("SIGKILL");
  swapper = undefined;
});

/**
 * A workspace with `dir/file.txt`, and a secret outside it. A child process swaps the file for a
 * symbolic link to the secret and back, as fast as it can, until killed; resolves once it has
 * swapped a few thousand times.
 */
async function racingWorkspace(prefix: string): Promise<string> {
  const base = tempDir(prefix);
  const root = join(base, "root");
  mkdirSync(join(root, "dir"), { recursive: true });
  writeFileSync(join(base, "secret.txt"), `${SECRET}\n`);
  writeFileSync(join(root, "dir/file.txt"), "public\n");
  // Each state is held for 0.1 ms, so the checks see the file and the link about half the time
  // each (creating a symbolic link costs more than a hard link: unheld, the file would win). A
  // sleep, not a busy loop: woken, the swapper preempts the tools even on a shared core.
  writeFileSync(join(base, "plain.txt"), "public\n");
  const script = `
    const fs = require("node:fs");
    const [secret, original, file] = process.argv.slice(1);
    const link = file + ".link", plain = file + ".plain";
    const cell = new Int32Array(new SharedArrayBuffer(4));
    const hold = () => Atomics.wait(cell, 0, 0, 0.1);
    for (let i = 0; ; i++) {
      fs.linkSync(original, plain);
      fs.renameSync(plain, file);
      hold();
      fs.symlinkSync(secret, link);
      fs.renameSync(link, file);
      hold();
      if (i === 500) process.stdout.write("racing\\n");
    }`;
  swapper = spawn(
    process.execPath,
    ["-e", script, join(base, "secret.txt"), join(base, "plain.txt"), join(root, "dir/file.txt")],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  await new Promise<void>((resolve) => swapper!.stdout!.once("data", () => resolve()));
  return root;
}

/** `calls` calls in turns of `parallel` calls, through a real run. */
async function many(root: string, calls: number, call: Call, parallel = 30) {
  const turns: Call[][] = [];
  for (let i = 0; i < calls; i += parallel) {
    turns.push(Array.from({ length: Math.min(parallel, calls - i) }, () => call));
  }
  const { records } = await play(workspace({ root }).tools, turns);
  return records;
}

describe("a file tool checks what it opened, not only what it resolved", () => {
  it("read_file never returns a secret outside the root while the file is swapped for a link to it", async () => {
    const root = await racingWorkspace("quiver-race-read-");
    const records = await many(root, 300, { name: "read_file", args: { path: "dir/file.txt" } });
    expect(records).toHaveLength(300);
    const leaked = records.filter((r) => r.output.includes(SECRET));
    expect(leaked).toEqual([]);
    // The race was real: some reads saw the file, some the link (refused one way or another).
    expect(records.filter((r) => r.ok && r.output.includes("public")).length).toBeGreaterThan(0);
  });

  it("the Node search of grep_files never searches the secret either", async () => {
    const root = await racingWorkspace("quiver-race-grep-");
    const outputs: string[] = [];
    for (let i = 0; i < 300; i++) {
      const { matches } = await grepFiles({ root, pattern: "SECRET|public", engine: "node" });
      outputs.push(matches.map((m) => `${m.path}:${m.line}:${m.text}`).join("\n"));
    }
    expect(outputs.filter((o) => o.includes(SECRET))).toEqual([]);
    expect(outputs.filter((o) => o === "dir/file.txt:1:public").length).toBeGreaterThan(0);
  });
});

/**
 * The same check, made deterministic: the tools are handed a path as if it had been checked,
 * while a folder on it (or the file itself) already is a link out of the root — the state a swap
 * right after the check leaves.
 */
describe("the opened-descriptor check itself", () => {
  const base = tempDir("quiver-opened-");
  const root = join(base, "root");
  const outside = join(base, "outside");
  mkdirSync(join(root, "real"), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, "file.txt"), SECRET);
  writeFileSync(join(root, "real/file.txt"), "public");
  symlinkSync(outside, join(root, "dir"));
  symlinkSync(join(outside, "file.txt"), join(root, "real/link.txt"));

  for (const check of ["proc", "stat"] as DescriptorCheck[]) {
    it(`refuses a folder or a file swapped for a link out of the root (${check})`, async () => {
      await expect(openInside(join(root, "dir/file.txt"), root, "dir/file.txt", check)).rejects.toThrow(
        /dir\/file\.txt changed while it was being opened \(a symbolic link (leading outside the workspace )?was swapped in\); nothing was read/,
      );
      await expect(openInside(join(root, "real/link.txt"), root, "real/link.txt", check)).rejects.toThrow(
        "real/link.txt changed while it was being opened (a symbolic link was swapped in)",
      );
      expect(openInsideSync(join(root, "dir/file.txt"), root, check)).toBeUndefined();
      expect(openInsideSync(join(root, "real/link.txt"), root, check)).toBeUndefined();

      const handle = await openInside(join(root, "real/file.txt"), root, "real/file.txt", check);
      expect(await handle.readFile("utf8")).toBe("public");
      await handle.close();
      expect(openInsideSync(join(root, "real/file.txt"), root, check)).toEqual(expect.any(Number));
    });
  }

  it("a write whose folder was swapped for a link out of the root writes nothing there", async () => {
    await expect(
      atomicWrite(join(root, "dir/new.txt"), Buffer.from("x"), root, "dir/new.txt"),
    ).rejects.toThrow(
      "the folder of dir/new.txt changed while it was being written (a symbolic link leading outside the workspace was swapped in); nothing was written",
    );
    expect(existsSync(join(outside, "new.txt"))).toBe(false);
    expect(readdirSync(outside)).toEqual(["file.txt"]);
  });
});
