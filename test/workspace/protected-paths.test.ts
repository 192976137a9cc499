import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type EventOf, StandardPermissions, UserError } from "quiver-agents";
import { PROTECTED_PATHS, type WorkspaceOptions, workspace } from "quiver-agents/workspace";
import { describe, expect, it } from "vitest";
import { type Call, play, tempDir } from "./helpers.js";

type Asked = EventOf<"approval_required">;
type Mode = "default" | "acceptEdits" | "bypass";

/** A fresh git repository with an identity, so that `git commit` works in it. */
function repo(prefix: string): string {
  const dir = tempDir(prefix);
  execFileSync("git", ["init", "-q"], { cwd: dir });
  execFileSync("git", ["config", "user.email", "agent@example.com"], { cwd: dir });
  execFileSync("git", ["config", "user.name", "Agent"], { cwd: dir });
  return dir;
}

/**
 * Plays the turns in a permission mode; every approval prompt is answered by `answer` (deny by
 * default) and kept.
 */
async function run(
  root: string,
  mode: Mode,
  turns: Array<Call | Call[]>,
  options: Partial<WorkspaceOptions> = {},
  answer: (ev: Asked) => boolean = () => false,
) {
  const ws = workspace({ root, ...options });
  const asked: Asked[] = [];
  const played = await play(ws.tools, turns, { permissions: new StandardPermissions({ mode }) }, (ev) => {
    if (ev.type !== "approval_required") return;
    asked.push(ev);
    if (answer(ev)) ev.approve();
    else ev.reject("not this one");
  });
  return {
    ...played,
    asked,
    askedFor: asked.map(
      (a) => `${a.call.name} ${(a.call.args as Call["args"]).path ?? (a.call.args as Call["args"]).command}`,
    ),
  };
}

const read = (path: string): Call => ({ name: "read_file", args: { path } });
const write = (path: string, content: string): Call => ({ name: "write_file", args: { path, content } });
const shell = (command: string): Call => ({ name: "shell", args: { command } });

describe("acceptEdits never writes a file that decides what a command runs without asking", () => {
  it(".git/config with core.fsmonitor: the write asks; denied, an allowed git status runs nothing of it; approved, it would", async () => {
    const evil = (root: string) =>
      `${readFileSync(join(root, ".git/config"), "utf8")}[core]\n\tfsmonitor = "touch pwned-fsmonitor; false"\n`;
    const turns = (root: string) => [
      read(".git/config"),
      write(".git/config", evil(root)),
      shell("git status"),
    ];

    const denied = repo("quiver-prot-git-");
    const { asked, askedFor, records } = await run(denied, "acceptEdits", turns(denied), {
      shell: { allow: ["git status"] },
    });
    expect(askedFor).toEqual(["write_file .git/config"]);
    expect(asked[0]!.reason).toContain(".git/config");
    expect(asked[0]!.reason).toMatch(/protected/);
    expect(asked[0]!.reason).toContain("fsmonitor");
    expect(records.map((r) => r.ok)).toEqual([true, false, true]);
    expect(readFileSync(join(denied, ".git/config"), "utf8")).not.toContain("fsmonitor");
    expect(existsSync(join(denied, "pwned-fsmonitor"))).toBe(false);

    // The premise holds: once a person approves the write, the allowed command runs it.
    const approved = repo("quiver-prot-git-ok-");
    const ok = await run(
      approved,
      "acceptEdits",
      turns(approved),
      { shell: { allow: ["git status"] } },
      () => true,
    );
    expect(ok.askedFor).toEqual(["write_file .git/config"]);
    expect(existsSync(join(approved, "pwned-fsmonitor"))).toBe(true);
  });

  it("package.json scripts with an allowed npm test", async () => {
    const root = tempDir("quiver-prot-npm-");
    const manifest = { name: "p", version: "1.0.0", scripts: { test: 'node -e ""' } };
    writeFileSync(join(root, "package.json"), JSON.stringify(manifest));
    const evil = JSON.stringify({ ...manifest, scripts: { test: "touch pwned-npm" } });
    const { asked, askedFor } = await run(
      root,
      "acceptEdits",
      [read("package.json"), write("package.json", evil), shell("npm test")],
      { shell: { allow: ["npm test"] } },
    );
    expect(askedFor).toEqual(["write_file package.json"]);
    expect(asked[0]!.reason).toContain("package.json");
    expect(asked[0]!.reason).toContain("scripts");
    expect(existsSync(join(root, "pwned-npm"))).toBe(false);
  });

  it("a Makefile and a nested *.mk it includes: their edits ask, and an allowed make runs the kept Makefile", async () => {
    const root = tempDir("quiver-prot-make-");
    writeFileSync(join(root, "Makefile"), "all:\n\t@echo built\n");
    const { askedFor, records } = await run(
      root,
      "acceptEdits",
      [
        read("Makefile"),
        {
          name: "edit_file",
          args: { path: "Makefile", old_string: "@echo built", new_string: "@touch pwned-make" },
        },
        write("build/rules.mk", "x:\n\ttouch pwned-mk\n"),
        shell("make"),
      ],
      { shell: { allow: ["make"] } },
      (ev) => ev.call.name === "shell",
    );
    expect(askedFor).toEqual(["edit_file Makefile", "write_file build/rules.mk"]);
    expect(records.at(-1)!.output).toContain("built");
    expect(existsSync(join(root, "pwned-make"))).toBe(false);
    expect(existsSync(join(root, "build/rules.mk"))).toBe(false);
  });

  it("linter and formatter configs, which an allowed lint command loads as code", async () => {
    const root = tempDir("quiver-prot-lint-");
    const configs = [
      "eslint.config.js",
      ".eslintrc.json",
      "packages/web/prettier.config.mjs",
      ".prettierrc.json",
      "pylintrc",
      ".rubocop.yml",
    ];
    const { asked, askedFor, records } = await run(
      root,
      "acceptEdits",
      configs.map((path) => write(path, "export default [];\n")),
      { shell: { allow: ["npm run lint"] } },
    );
    expect(askedFor).toEqual(configs.map((path) => `write_file ${path}`));
    expect(asked[0]!.reason).toContain("linters and formatters load their configuration as code");
    expect(records.every((r) => !r.ok)).toBe(true);
    for (const path of configs) expect(existsSync(join(root, path))).toBe(false);
  });

  it("an existing executable .git/hooks/pre-commit with an allowed git commit", async () => {
    const root = repo("quiver-prot-hook-");
    writeFileSync(join(root, ".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n");
    chmodSync(join(root, ".git/hooks/pre-commit"), 0o755);
    const { askedFor, records } = await run(
      root,
      "acceptEdits",
      [
        read(".git/hooks/pre-commit"),
        write(".git/hooks/pre-commit", "#!/bin/sh\ntouch pwned-hook\n"),
        shell("git commit --allow-empty -q -m test"),
      ],
      { shell: { allow: ["git commit"] } },
    );
    expect(askedFor).toEqual(["write_file .git/hooks/pre-commit"]);
    expect(records.at(-1)!.ok).toBe(true);
    expect(existsSync(join(root, "pwned-hook"))).toBe(false);
  });

  it("however the path is spelled: nested manifests, ./, sub/.., absolute, other case, the .git file itself", async () => {
    const root = repo("quiver-prot-spell-");
    mkdirSync(join(root, "sub"));
    const paths = [
      "packages/a/package.json",
      "./.git/config",
      "sub/../.git/config",
      join(root, ".git/hooks/post-checkout"),
      ".GIT/config",
      "sub/.git",
      "crates/x/Cargo.toml",
      "crates/x/build.rs",
      ".husky/pre-commit",
      ".vscode/tasks.json",
      ".envrc",
      "pyproject.toml",
      "tools/GNUmakefile",
      "HEAD",
      ".gitconfig",
      "compose.override.yml",
      "mise.local.toml",
      "node_modules/.bin/tsc",
      ".venv/bin/pytest",
      // As a case-insensitive or Windows file system reads them: Makefile, .git/config, package.json.
      "Makefile.",
      ".git. /config",
      "package.json::$DATA",
    ];
    const { askedFor, records } = await run(
      root,
      "acceptEdits",
      paths.map((p) => write(p, "x\n")),
    );
    expect(askedFor).toEqual(paths.map((p) => `write_file ${p}`));
    expect(records.every((r) => !r.ok)).toBe(true);
    expect(existsSync(join(root, "packages"))).toBe(false);
  });

  it("ordinary source files still pass without asking, names that merely look alike included", async () => {
    const root = tempDir("quiver-prot-src-");
    const paths = [
      "src/index.ts",
      "src/git/config.ts",
      "docs/Makefile.md",
      "package.json.md",
      "notes/env.txt",
    ];
    const { asked, records } = await run(root, "acceptEdits", [
      ...paths.map((p) => write(p, "a\n")),
      { name: "edit_file", args: { path: "src/index.ts", old_string: "a", new_string: "b" } },
    ]);
    expect(asked).toEqual([]);
    expect(records.every((r) => r.ok)).toBe(true);
    expect(readFileSync(join(root, "src/index.ts"), "utf8")).toBe("b\n");
  });

  it("a write that reaches a protected file by another name is refused in every mode", async () => {
    const root = repo("quiver-prot-link-");
    symlinkSync(".git/config", join(root, "innocent.txt"));
    symlinkSync(".git", join(root, "gitdir"));
    mkdirSync(join(root, ".vscode"));
    symlinkSync("../.git/config", join(root, ".vscode/settings.json"));
    for (const mode of ["acceptEdits", "bypass"] as const) {
      const { asked, records } = await run(
        root,
        mode,
        [
          read("innocent.txt"),
          write("innocent.txt", "[core]\n\tfsmonitor = touch pwned\n"),
          write("gitdir/hooks/pre-push", "#!/bin/sh\n"),
          // Protected itself, so it asks (and is approved in this test): still not another file.
          write(".vscode/settings.json", "{}"),
        ],
        {},
        () => true,
      );
      expect(asked.map((a) => a.call.name)).toEqual(mode === "bypass" ? [] : ["write_file"]);
      expect(records.map((r) => r.ok)).toEqual([true, false, false, false]);
      expect(records[1]!.output).toContain("innocent.txt leads to .git/config, a protected file");
      expect(records[2]!.output).toContain("gitdir/hooks/pre-push leads to .git/hooks/pre-push");
      expect(records[3]!.output).toContain(".vscode/settings.json leads to .git/config, a protected file");
    }
    expect(readFileSync(join(root, ".git/config"), "utf8")).not.toContain("fsmonitor");
  });

  it("default mode asks with the same reason; bypass writes without asking", async () => {
    const root = tempDir("quiver-prot-modes-");
    const asking = await run(root, "default", [write("Makefile", "all:\n")]);
    expect(asking.asked[0]!.reason).toContain("Makefile is a protected file (build files");
    const bypass = await run(root, "bypass", [write("Makefile", "all:\n")]);
    expect(bypass.asked).toEqual([]);
    expect(readFileSync(join(root, "Makefile"), "utf8")).toBe("all:\n");
  });

  it("protectedPaths extends or replaces the list", async () => {
    expect(PROTECTED_PATHS).toEqual(expect.arrayContaining([".git", "package.json", "Makefile", ".envrc"]));
    const root = repo("quiver-prot-option-");
    const extended = await run(
      root,
      "acceptEdits",
      [write("scripts/release.sh", "x\n"), write("src/a.ts", "x\n"), write(".git/info/attributes", "x\n")],
      { protectedPaths: [...PROTECTED_PATHS, "scripts/**"] },
    );
    expect(extended.askedFor).toEqual(["write_file scripts/release.sh", "write_file .git/info/attributes"]);
    expect(extended.asked[0]!.reason).toContain('"scripts/**" in protectedPaths');

    const none = await run(root, "acceptEdits", [write(".git/info/exclude2", "x\n")], { protectedPaths: [] });
    expect(none.asked).toEqual([]);
    expect(existsSync(join(root, ".git/info/exclude2"))).toBe(true);

    expect(() => workspace({ root, protectedPaths: "scripts/**" as unknown as string[] })).toThrow(UserError);
    expect(() => workspace({ root, protectedPaths: [""] })).toThrow(/protectedPaths/);
  });
});
