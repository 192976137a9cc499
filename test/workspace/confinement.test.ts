import { existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { workspace } from "quiver-agents/workspace";
import { beforeAll, describe, expect, it } from "vitest";
import { play, tempDir } from "./helpers.js";

// Layout: <base>/root is the workspace; <base>/root-evil and <base>/outside sit beside it.
const base = tempDir("quiver-confine-");
const root = join(base, "root");
const evil = join(base, "root-evil");
const outside = join(base, "outside");
const SECRET = "TOP-SECRET-BYTES";

beforeAll(() => {
  for (const dir of [root, evil, outside, join(root, "sub")]) mkdirSync(dir, { recursive: true });
  writeFileSync(join(outside, "secret.txt"), SECRET);
  writeFileSync(join(evil, "secret.txt"), SECRET);
  writeFileSync(join(root, "inside.txt"), "inside\n");
  symlinkSync(join(outside, "secret.txt"), join(root, "file-link"));
  symlinkSync(outside, join(root, "dir-link"));
  symlinkSync(join(outside, "created-by-dangling.txt"), join(root, "dangling"));
  symlinkSync(join(root, "dangling"), join(root, "dangling-chain"));
  symlinkSync("inside.txt", join(root, "inner-link"));
});

function outsideUntouched() {
  expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe(SECRET);
  expect(readFileSync(join(evil, "secret.txt"), "utf8")).toBe(SECRET);
  for (const name of ["created-by-dangling.txt", "new.txt", "escaped.txt"]) {
    expect(existsSync(join(outside, name))).toBe(false);
  }
  expect(existsSync(join(base, "escaped.txt"))).toBe(false);
}

describe("confinement: every way out of the root is refused, naming the path", () => {
  const attempts: Array<[string, string, Record<string, unknown>, string]> = [
    ["dot-dot", "read_file", { path: "../outside/secret.txt" }, "../outside/secret.txt"],
    [
      "dot-dot through a subdirectory",
      "write_file",
      { path: "sub/../../escaped.txt", content: "x" },
      "sub/../../escaped.txt",
    ],
    [
      "an absolute path elsewhere",
      "read_file",
      { path: join(outside, "secret.txt") },
      join(outside, "secret.txt"),
    ],
    [
      "a prefix look-alike, relative",
      "read_file",
      { path: "../root-evil/secret.txt" },
      "../root-evil/secret.txt",
    ],
    [
      "a prefix look-alike, absolute",
      "read_file",
      { path: `${root}-evil/secret.txt` },
      `${root}-evil/secret.txt`,
    ],
    ["a link to a file outside", "read_file", { path: "file-link" }, "file-link"],
    ["a link to a directory outside", "read_file", { path: "dir-link/secret.txt" }, "dir-link/secret.txt"],
    [
      "a write through a link to a directory outside",
      "write_file",
      { path: "dir-link/new.txt", content: "x" },
      "dir-link/new.txt",
    ],
    ["a write through a dangling link", "write_file", { path: "dangling", content: "x" }, "dangling"],
    [
      "a write through a chain of links ending dangling",
      "write_file",
      { path: "dangling-chain", content: "x" },
      "dangling-chain",
    ],
    [
      "an edit through a link to a file outside",
      "edit_file",
      { path: "file-link", old_string: "TOP", new_string: "x" },
      "file-link",
    ],
    ["listing a directory outside", "list_files", { path: "../outside" }, "../outside"],
    [
      "searching through a link to a directory outside",
      "grep_files",
      { pattern: "SECRET", path: "dir-link" },
      "dir-link",
    ],
  ];

  it.each(attempts)("%s", async (_label, name, args, named) => {
    const ws = workspace({ root });
    const { records } = await play(ws.tools, [{ name, args }]);
    const record = records[0]!;
    expect(record.ok).toBe(false);
    expect(record.output).toContain(named);
    expect(record.output).toContain("outside the workspace");
    expect(record.output).not.toContain(SECRET);
    outsideUntouched();
  });

  it("a link the agent's own shell created is refused like any other", async () => {
    const ws = workspace({ root, shell: true });
    const { records } = await play(ws.tools, [
      {
        name: "shell",
        args: { command: `ln -s ${outside} made-by-shell && ln -s ${outside}/secret.txt file-by-shell` },
      },
      { name: "read_file", args: { path: "made-by-shell/secret.txt" } },
      { name: "read_file", args: { path: "file-by-shell" } },
      { name: "write_file", args: { path: "made-by-shell/new.txt", content: "x" } },
    ]);
    expect(records[0]!.ok).toBe(true);
    for (const record of records.slice(1)) {
      expect(record.ok).toBe(false);
      expect(record.output).toContain("outside the workspace");
      expect(record.output).not.toContain(SECRET);
    }
    outsideUntouched();
  });

  it("grep over the whole root neither follows nor reports links that lead out", async () => {
    const ws = workspace({ root });
    const { records } = await play(ws.tools, [{ name: "grep_files", args: { pattern: "SECRET|inside" } }]);
    expect(records[0]!.ok).toBe(true);
    expect(records[0]!.output).toContain("inside.txt:1:inside");
    expect(records[0]!.output).not.toContain(SECRET);
  });

  it("paths that stay inside work, links inside the root included, and absolute paths under the root", async () => {
    const ws = workspace({ root });
    const { records } = await play(ws.tools, [
      { name: "read_file", args: { path: "inner-link" } },
      { name: "read_file", args: { path: join(root, "sub/../inside.txt") } },
      { name: "write_file", args: { path: "sub/deeper/new.txt", content: "hello\n" } },
    ]);
    expect(records.map((r) => r.ok)).toEqual([true, true, true]);
    expect(records[0]!.output).toBe("1\tinside");
    expect(readFileSync(join(root, "sub/deeper/new.txt"), "utf8")).toBe("hello\n");
    expect(statSync(join(root, "inner-link")).isFile()).toBe(true);
  });
});
