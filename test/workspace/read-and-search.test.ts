import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { grepFiles, workspace } from "quiver-agents/workspace";
import { beforeAll, describe, expect, it } from "vitest";
import { call, play, tempDir } from "./helpers.js";

const root = tempDir("quiver-read-");
const tools = () => workspace({ root }).tools;

beforeAll(() => {
  const lines = Array.from({ length: 4_500 }, (_, i) => `line ${i + 1}`).join("\n");
  writeFileSync(join(root, "long.txt"), `${lines}\n`);
  writeFileSync(
    join(root, "wide.txt"),
    Array.from({ length: 100 }, (_, i) => `${i}:${"w".repeat(990)}`).join("\n"),
  );
  writeFileSync(join(root, "one-line.min.js"), "x".repeat(5_000));
  writeFileSync(join(root, "blob.bin"), Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2, 3]));
  writeFileSync(join(root, "pixel.png"), Buffer.from("89504e470d0a1a0a0000000d49484452", "hex"));
  writeFileSync(join(root, "huge.png"), Buffer.alloc(5_000_001));
  // Search tree: .gitignore rules (nested, negated), .git and node_modules.
  for (const dir of ["src/nested", ".git", "node_modules/pkg", "build", "logs"])
    mkdirSync(join(root, dir), { recursive: true });
  writeFileSync(join(root, ".gitignore"), "build/\n*.log\n!keep.log\nhuge.png\n");
  writeFileSync(join(root, "src/nested/.gitignore"), "secret-*.ts\n");
  writeFileSync(join(root, "src/a.ts"), "export const needle = 1;\nconst other = 2;\n");
  writeFileSync(join(root, "src/nested/b.ts"), "// NEEDLE in caps\nconst needle = 3;\n");
  writeFileSync(join(root, "src/nested/secret-c.ts"), "needle hidden by a nested .gitignore\n");
  writeFileSync(join(root, "src/notes.md"), "needle in markdown\n");
  writeFileSync(join(root, ".git/config"), "needle in git\n");
  writeFileSync(join(root, "node_modules/pkg/index.js"), "needle in a dependency\n");
  writeFileSync(join(root, "build/out.js"), "needle in build output\n");
  writeFileSync(join(root, "logs/debug.log"), "needle in a log\n");
  writeFileSync(join(root, "logs/keep.log"), "needle in a kept log\n");
  writeFileSync(join(root, "needle.bin"), Buffer.from("needle\0binary"));
});

describe("read_file", () => {
  it("numbers lines and stops at 2,000 lines with a notice naming the next offset", async () => {
    const first = await call(tools(), "read_file", { path: "long.txt" });
    const lines = first.output.split("\n");
    expect(lines[0]).toBe("1\tline 1");
    expect(lines[1_999]).toBe("2000\tline 2000");
    expect(lines[2_000]).toBe(
      "[showing lines 1-2000 of 4500 (the 2,000-line limit); continue with offset 2001]",
    );
    const next = await call(tools(), "read_file", { path: "long.txt", offset: 4_400, limit: 200 });
    expect(next.output.split("\n")[0]).toBe("4400\tline 4400");
    expect(next.output.split("\n").at(-1)).toBe("4500\tline 4500");
    const some = await call(tools(), "read_file", { path: "long.txt", offset: 10, limit: 3 });
    expect(some.output).toBe(
      "10\tline 10\n11\tline 11\n12\tline 12\n[showing lines 10-12 of 4500 (the 3-line limit); continue with offset 13]",
    );
  });

  it("stops at 50,000 characters, cuts very long lines, and refuses an offset past the end", async () => {
    const wide = await call(tools(), "read_file", { path: "wide.txt" });
    expect(wide.output.length).toBeLessThanOrEqual(50_200);
    expect(wide.output).toMatch(/\(the 50,000-character limit of one call\); continue with offset 51\]$/);
    const min = await call(tools(), "read_file", { path: "one-line.min.js" });
    expect(min.output).toContain("[... line cut: 5,000 bytes ...]");
    const past = await call(tools(), "read_file", { path: "long.txt", offset: 9_999 });
    expect(past.ok).toBe(false);
    expect(past.output).toContain("offset 9999 is past the end of long.txt (4500 lines)");
  });

  it("binary files give metadata, images come back as image blocks, too-large images are refused", async () => {
    const bin = await call(tools(), "read_file", { path: "blob.bin" });
    expect(bin.output).toMatch(
      /^blob\.bin: binary file, 8 bytes, modified .*, sha256 [0-9a-f]{64}\. Its content is not shown\.$/,
    );
    const { result } = await play(tools(), [{ name: "read_file", args: { path: "pixel.png" } }]);
    const message = result.messages.find((m) => m.role === "tool")!;
    expect(message.content).toEqual([
      { type: "text", text: "pixel.png: image/png image, 16 bytes" },
      {
        type: "image",
        mimeType: "image/png",
        data: Buffer.from("89504e470d0a1a0a0000000d49484452", "hex").toString("base64"),
      },
    ]);
    const huge = await call(tools(), "read_file", { path: "huge.png" });
    expect(huge.ok).toBe(false);
    expect(huge.output).toContain("over the 5,000,000-byte limit");
  });

  it("says what is wrong with a missing path or a directory", async () => {
    expect((await call(tools(), "read_file", { path: "nope.txt" })).output).toContain(
      "nope.txt does not exist",
    );
    expect((await call(tools(), "read_file", { path: "src" })).output).toContain("src is a directory");
  });
});

describe("list_files", () => {
  it("honours .gitignore (nested and negated) and skips .git and node_modules", async () => {
    const listed = await call(tools(), "list_files", {});
    const files = listed.output.split("\n");
    expect(files).toContain("src/a.ts");
    expect(files).toContain("src/nested/b.ts");
    expect(files).toContain("logs/keep.log");
    expect(files).toContain(".gitignore");
    for (const hidden of [
      "src/nested/secret-c.ts",
      "build/out.js",
      "logs/debug.log",
      ".git/config",
      "node_modules/pkg/index.js",
      "huge.png",
    ]) {
      expect(files).not.toContain(hidden);
    }
  });

  it("filters with globs, goes into node_modules when asked, and caps its output", async () => {
    expect((await call(tools(), "list_files", { glob: "*.ts" })).output).toBe("src/a.ts\nsrc/nested/b.ts");
    expect((await call(tools(), "list_files", { path: "src", glob: "src/*.md" })).output).toBe(
      "src/notes.md",
    );
    expect((await call(tools(), "list_files", { path: "node_modules" })).output).toBe(
      "node_modules/pkg/index.js",
    );
    const capped = await call(tools(), "list_files", { limit: 2 });
    expect(capped.output.split("\n")).toHaveLength(3);
    expect(capped.output).toMatch(/\[\d+ more files not shown: narrow with path or glob, or raise limit\]$/);
  });
});

describe("grep_files", () => {
  it("finds path:line:text without rg, skipping ignored, binary, .git and node_modules files", async () => {
    const found = await call(tools(), "grep_files", { pattern: "needle" });
    expect(found.output.split("\n").sort()).toEqual(
      [
        "logs/keep.log:1:needle in a kept log",
        "src/a.ts:1:export const needle = 1;",
        "src/nested/b.ts:2:const needle = 3;",
        "src/notes.md:1:needle in markdown",
      ].sort(),
    );
    const outcome = await grepFiles({ root, pattern: "needle", engine: "node" });
    expect(outcome.engine).toBe("node");
    expect(outcome.matches).toHaveLength(4);
  });

  it("ignore_case, glob and path narrow the search; limit caps it with a notice", async () => {
    const caps = await call(tools(), "grep_files", {
      pattern: "needle",
      ignore_case: true,
      path: "src/nested",
    });
    expect(caps.output).toBe("src/nested/b.ts:1:// NEEDLE in caps\nsrc/nested/b.ts:2:const needle = 3;");
    const md = await call(tools(), "grep_files", { pattern: "needle", glob: "*.md" });
    expect(md.output).toBe("src/notes.md:1:needle in markdown");
    const deps = await call(tools(), "grep_files", { pattern: "needle", path: "node_modules" });
    expect(deps.output).toBe("node_modules/pkg/index.js:1:needle in a dependency");
    const one = await call(tools(), "grep_files", { pattern: "needle", limit: 1 });
    expect(one.output.split("\n")).toHaveLength(2);
    expect(one.output).toContain("[stopped at 1 matching lines");
  });

  it("gives the same matches whichever engine runs it (rg when on PATH, else Node)", async () => {
    mkdirSync(join(root, "src/nested/deeper"), { recursive: true });
    writeFileSync(join(root, "src/nested/deeper/d.ts"), "needle three levels down\n");
    writeFileSync(join(root, "src/left.quiver-tmp"), "needle in a killed write's temporary file\n");
    writeFileSync(join(root, "src/build.log"), "needle in a log the root .gitignore hides\n");
    const cases: Array<Omit<Parameters<typeof grepFiles>[0], "root">> = [
      { pattern: "needle" },
      { pattern: "needle", path: "src" },
      { pattern: "needle", path: "src/nested" },
      { pattern: "needle", path: "src/nested/deeper" },
      { pattern: "needle", glob: "*.ts" },
      { pattern: "NEEDLE", ignoreCase: true, path: "src" },
      { pattern: "needle", path: "node_modules" },
    ];
    for (const options of cases) {
      const auto = await grepFiles({ root, ...options });
      const node = await grepFiles({ root, ...options, engine: "node" });
      expect(auto.matches, JSON.stringify(options)).toEqual(expect.arrayContaining(node.matches));
      expect(auto.matches.map((m) => m.path).sort(), JSON.stringify(options)).toEqual(
        node.matches.map((m) => m.path).sort(),
      );
    }
    const fromSrc = await grepFiles({ root, pattern: "needle", path: "src" });
    expect(fromSrc.matches.map((m) => m.path).sort()).toEqual([
      "src/a.ts",
      "src/nested/b.ts",
      "src/nested/deeper/d.ts",
      "src/notes.md",
    ]);
  });

  it("an invalid pattern is a clear error; no match says so", async () => {
    const bad = await call(tools(), "grep_files", { pattern: "needle(" });
    expect(bad.ok).toBe(false);
    expect(bad.output).toContain('invalid pattern "needle("');
    expect((await call(tools(), "grep_files", { pattern: "haystack" })).output).toBe(
      'No matches for "haystack".',
    );
  });
});

describe("a pathological pattern", () => {
  it("runs off the event loop and is stopped by the time limit or the call's timeout", async () => {
    writeFileSync(join(root, "src/evil.txt"), `${"a".repeat(40)}!\n`);
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 10);
    try {
      const started = Date.now();
      await expect(
        grepFiles({ root, pattern: "(a+)+$", path: "src/evil.txt", timeLimitMs: 400, engine: "node" }),
      ).rejects.toThrow(/took longer than 400 ms and was stopped/);
      expect(Date.now() - started).toBeLessThan(5_000);
      // The loop kept turning while the regex backtracked on its thread.
      expect(ticks).toBeGreaterThan(10);
    } finally {
      clearInterval(ticker);
    }
    // A backreference: rg (when on PATH) refuses it, so this search runs in Node wherever it runs.
    const { records } = await play(
      tools(),
      [{ name: "grep_files", args: { pattern: "(a+)+\\1$", path: "src" } }],
      {
        defaultToolTimeoutMs: 400,
      },
    );
    expect(records[0]!.ok).toBe(false);
    expect(records[0]!.error?.kind).toBe("timeout");
  });
});
