import { spawn } from "node:child_process";
import { chmodSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { workspace } from "quiver-agents/workspace";
import { describe, expect, it } from "vitest";
import { play, tempDir } from "./helpers.js";

const root = tempDir("quiver-edits-");

describe("exact edits", () => {
  it("0 matches and several matches are errors that say how many and where; replace_all replaces every one", async () => {
    writeFileSync(join(root, "many.ts"), "let a = 1;\nlet b = 2;\nlet a2 = 1;\n  foo( x );\nlet c = 1;\n");
    const ws = workspace({ root });
    const { records, result } = await play(ws.tools, [
      { name: "read_file", args: { path: "many.ts" } },
      { name: "edit_file", args: { path: "many.ts", old_string: "= 1;", new_string: "= 9;" } },
      { name: "edit_file", args: { path: "many.ts", old_string: "let z", new_string: "let y" } },
      { name: "edit_file", args: { path: "many.ts", old_string: "    foo( x );", new_string: "x" } },
      { name: "edit_file", args: { path: "many.ts", old_string: "let  b =  2;", new_string: "x" } },
      {
        name: "edit_file",
        args: { path: "many.ts", old_string: "= 1;", new_string: "= 9;", replace_all: true },
      },
    ]);
    expect(records[1]!.ok).toBe(false);
    expect(records[1]!.output).toContain("found 3 times in many.ts, at lines 1, 3, 5");
    expect(records[1]!.output).toContain("replace_all");
    expect(records[2]!.ok).toBe(false);
    expect(records[2]!.output).toContain("found 0 times in many.ts");
    // A near miss (whitespace) is pointed at.
    expect(records[3]!.output).toContain("found 0 times");
    expect(records[3]!.output).toContain("matches at line 4 if whitespace is ignored");
    // Whitespace inside a line counts too.
    expect(records[4]!.output).toContain("matches at line 2 if whitespace is ignored");
    expect(records[5]!.ok).toBe(true);
    expect(records[5]!.output).toContain("replaced 3 occurrences (lines 1, 3, 5)");
    // The applied edit's details carry its diff, for a UI to show (the model reads the summary).
    const applied = result.messages.filter((m) => m.role === "tool").at(-1)!.details as { diff: string };
    expect(applied.diff).toContain("--- a/many.ts\n+++ b/many.ts\n");
    expect(applied.diff).toMatch(/^-let a = 1;$/m);
    expect(applied.diff).toMatch(/^\+let a = 9;$/m);
    expect(readFileSync(join(root, "many.ts"), "utf8")).toBe(
      "let a = 9;\nlet b = 2;\nlet a2 = 9;\n  foo( x );\nlet c = 9;\n",
    );
  });

  it("keeps CRLF line endings and a byte-order mark through edits and whole-file writes", async () => {
    const bom = "\uFEFF";
    writeFileSync(join(root, "win.txt"), `${bom}first\r\nsecond\r\nthird\r\n`);
    writeFileSync(join(root, "win2.txt"), `${bom}keep\r\nme\r\n`);
    const ws = workspace({ root });
    const { records } = await play(ws.tools, [
      { name: "read_file", args: { path: "win.txt" } },
      // The model quotes with \n, as read_file showed it.
      {
        name: "edit_file",
        args: { path: "win.txt", old_string: "first\nsecond", new_string: "1st\n2nd\nextra" },
      },
      { name: "read_file", args: { path: "win2.txt" } },
      { name: "write_file", args: { path: "win2.txt", content: "new\ncontent\n" } },
    ]);
    expect(records.map((r) => r.ok)).toEqual([true, true, true, true]);
    expect(records[0]!.output).toBe("1\tfirst\n2\tsecond\n3\tthird");
    expect(readFileSync(join(root, "win.txt"), "utf8")).toBe(`${bom}1st\r\n2nd\r\nextra\r\nthird\r\n`);
    expect(readFileSync(join(root, "win2.txt"), "utf8")).toBe(`${bom}new\r\ncontent\r\n`);
  });

  it("leaves a file with mixed line endings as it is around the edit", async () => {
    writeFileSync(join(root, "mixed.txt"), "a\r\nb\nc\r\n");
    const ws = workspace({ root });
    const { records } = await play(ws.tools, [
      { name: "read_file", args: { path: "mixed.txt" } },
      { name: "edit_file", args: { path: "mixed.txt", old_string: "b", new_string: "B" } },
    ]);
    expect(records[1]!.ok).toBe(true);
    expect(readFileSync(join(root, "mixed.txt"), "utf8")).toBe("a\r\nB\nc\r\n");
  });

  it("refuses to edit a file that is not UTF-8 text instead of damaging it", async () => {
    const latin1 = Buffer.from("caf\xe9 = 1\n", "latin1");
    writeFileSync(join(root, "latin1.txt"), latin1);
    const ws = workspace({ root });
    const { records } = await play(ws.tools, [
      { name: "read_file", args: { path: "latin1.txt" } },
      { name: "edit_file", args: { path: "latin1.txt", old_string: "= 1", new_string: "= 2" } },
    ]);
    expect(records[1]!.ok).toBe(false);
    expect(records[1]!.output).toContain("latin1.txt is not UTF-8 text");
    expect(readFileSync(join(root, "latin1.txt")).equals(latin1)).toBe(true);
  });

  it("an atomic write keeps the file's mode and leaves no temporary file behind", async () => {
    writeFileSync(join(root, "script.sh"), "#!/bin/sh\necho old\n");
    chmodSync(join(root, "script.sh"), 0o750);
    const ws = workspace({ root });
    const { records } = await play(ws.tools, [
      { name: "read_file", args: { path: "script.sh" } },
      { name: "edit_file", args: { path: "script.sh", old_string: "old", new_string: "new" } },
    ]);
    expect(records[1]!.ok).toBe(true);
    expect(statSync(join(root, "script.sh")).mode & 0o777).toBe(0o750);
    expect(readFileSync(join(root, "script.sh"), "utf8")).toBe("#!/bin/sh\necho new\n");
    expect(readdirSync(root).filter((name) => name.includes("quiver-tmp"))).toEqual([]);
  });
});

describe("a write killed halfway leaves the old file whole", () => {
  it("SIGKILL while a large write is in flight: the target holds the old content, never a part of the new", async () => {
    const dir = join(root, "killed");
    const target = join(dir, "big.txt");
    const child = spawn(
      process.execPath,
      ["--import", "tsx", resolve(import.meta.dirname, "fixtures/big-write.ts"), dir],
      { cwd: resolve(import.meta.dirname, "../.."), stdio: ["ignore", "pipe", "inherit"] },
    );
    // The child says when the old file is in place and the big write is about to start.
    await new Promise<void>((ready, fail) => {
      const timer = setTimeout(() => fail(new Error("the child never started writing")), 20_000);
      child.stdout.on("data", (chunk: Buffer) => {
        if (chunk.toString().includes("writing")) {
          clearTimeout(timer);
          ready();
        }
      });
    });
    // Kill it as soon as the temporary file exists (the write is under way).
    const deadline = Date.now() + 10_000;
    let midWrite = false;
    while (Date.now() < deadline && !midWrite) {
      midWrite = readdirSync(dir).some((n) => n.includes("quiver-tmp"));
      if (!midWrite) await new Promise((r) => setTimeout(r, 1));
    }
    child.kill("SIGKILL");
    expect(midWrite).toBe(true);
    await new Promise((r) => child.once("exit", r));
    expect(readFileSync(target, "utf8")).toBe("old content\n");
  });
});
