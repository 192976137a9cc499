import { existsSync, readdirSync, realpathSync } from "node:fs";
import path from "node:path";
import picomatch from "picomatch";
import type { PermissionDecision } from "../contract/permissions.js";
import { UserError } from "../errors.js";
import { isWithin, toPosix } from "./paths.js";

/**
 * Why each group of default patterns is protected: files that decide what a command executes,
 * so that writing one turns the next allowed command (`git status`, `npm test`, `make`) into
 * whatever the file says.
 */
const DEFAULT_GROUPS: ReadonlyArray<
  readonly [why: string, patterns: readonly string[], writtenByCommands?: "written by installs and builds"]
> = [
  [
    "git runs what its config, hooks and attributes name (core.fsmonitor, core.hooksPath, filter and diff drivers), even for git status or git diff; a .gitconfig in a project is often included by the repository's config, and a HEAD at the root makes the root a repository",
    [".git", "/HEAD", ".gitattributes", ".gitmodules", ".gitconfig", ".lfsconfig"],
  ],
  [
    "hook managers decide what runs on git commit and git push",
    [
      ".githooks",
      ".husky",
      ".pre-commit-config.yaml",
      "lefthook.yml",
      "lefthook.yaml",
      ".lefthook.yml",
      ".lefthook.yaml",
      "lefthook-local.yml",
      ".lefthook",
      ".lintstagedrc*",
      "lint-staged.config.*",
    ],
  ],
  [
    "package manifests and package-manager settings name the scripts, build steps, plugins and registries that install, test and run commands execute",
    [
      "package.json",
      ".npmrc",
      ".yarnrc",
      ".yarnrc.yml",
      ".yarn/releases",
      ".yarn/plugins",
      ".pnp.cjs",
      ".pnp.loader.mjs",
      "pnpm-workspace.yaml",
      ".pnpmfile.cjs",
      "bunfig.toml",
      "deno.json",
      "deno.jsonc",
      "pyproject.toml",
      "setup.py",
      "setup.cfg",
      "requirements*.txt",
      "Pipfile",
      "tox.ini",
      "noxfile.py",
      "Cargo.toml",
      "build.rs",
      ".cargo",
      "rust-toolchain",
      "rust-toolchain.toml",
      "Gemfile",
      "*.gemspec",
      "Rakefile",
      ".bundle",
      "composer.json",
      "go.mod",
      "go.work",
      "pom.xml",
      ".mvn",
      "mvnw",
      "build.gradle",
      "build.gradle.kts",
      "settings.gradle",
      "settings.gradle.kts",
      "gradle.properties",
      "gradle-wrapper.properties",
      "gradlew",
      "*.sbt",
      "*.csproj",
      "*.fsproj",
      "*.vbproj",
      "Directory.Build.props",
      "Directory.Build.targets",
      "nuget.config",
      "mix.exs",
      "Package.swift",
    ],
    "written by installs and builds",
  ],
  [
    "build files and task runners are the commands make, just, task, cmake and their kind run",
    [
      "Makefile",
      "makefile",
      "GNUmakefile",
      "*.mk",
      "CMakeLists.txt",
      "*.cmake",
      "meson.build",
      "configure",
      "configure.ac",
      "justfile",
      ".justfile",
      "*.just",
      "Taskfile.yml",
      "Taskfile.yaml",
      "Taskfile.dist.yml",
      "Taskfile.dist.yaml",
      "Earthfile",
      "BUILD",
      "BUILD.bazel",
      "WORKSPACE",
      "WORKSPACE.bazel",
      "MODULE.bazel",
      "*.bzl",
      ".bazelrc",
      "compose.yml",
      "compose.yaml",
      "compose.override.yml",
      "compose.override.yaml",
      "docker-compose*.yml",
      "docker-compose*.yaml",
    ],
    "written by installs and builds",
  ],
  [
    "installed packages are the programs npx, npm test, pytest and their kind run (node_modules/.bin, a virtualenv's bin)",
    ["node_modules", ".venv", "venv"],
    "written by installs and builds",
  ],
  [
    "environment files and dev shells are loaded into commands' environment (NODE_OPTIONS, LD_PRELOAD, PATH decide what runs) or run on entering the directory",
    [
      ".envrc",
      ".env",
      ".env.*",
      "mise.toml",
      ".mise.toml",
      "mise.*.toml",
      ".mise.*.toml",
      ".mise",
      ".config/mise",
      ".tool-versions",
      "flake.nix",
      "shell.nix",
    ],
  ],
  [
    "linters and formatters load their configuration as code, or the plugins and parsers it names by path, so an allowed npm run lint, eslint or prettier --check (and the editor's own linting) runs what it says",
    [
      "eslint.config.*",
      ".eslintrc*",
      "prettier.config.*",
      ".prettierrc*",
      "stylelint.config.*",
      ".stylelintrc*",
      ".markdownlint-cli2.*",
      "commitlint.config.*",
      ".commitlintrc*",
      ".oxlintrc.json",
      "tslint.json",
      ".pylintrc",
      "pylintrc",
      "mypy.ini",
      ".mypy.ini",
      ".rubocop.yml",
      ".golangci.yml",
      ".golangci.yaml",
      ".golangci.toml",
    ],
  ],
  [
    "editor and dev-container settings hold tasks, run configurations and tool paths that run when the project is opened or built",
    [".vscode", ".idea", ".zed", ".devcontainer", "*.code-workspace", ".nvim.lua", ".nvimrc", ".exrc"],
  ],
];

/**
 * The files `acceptEdits` never writes without asking: those that decide what a command
 * executes (git's config and hooks, package manifests, Makefiles, task runners, environment
 * files, editor tasks). Globs relative to the workspace root, matched case-insensitively; a
 * pattern without `/` matches a name at any depth (`package.json` covers
 * `packages/a/package.json`), a leading `/` anchors one to the root, and a pattern that matches
 * a folder protects everything in it (`.git` covers `.git/hooks/pre-commit`).
 *
 * @example
 * import { PROTECTED_PATHS, workspace } from "quiver-agents/workspace";
 * const ws = workspace({ root: ".", protectedPaths: [...PROTECTED_PATHS, "scripts/**"] });
 */
export const PROTECTED_PATHS: readonly string[] = Object.freeze(
  DEFAULT_GROUPS.flatMap(([, patterns]) => patterns),
);

const DEFAULT_REASONS = new Map(DEFAULT_GROUPS.flatMap(([why, patterns]) => patterns.map((p) => [p, why])));

/** Protected patterns the sandbox leaves writable: installs and builds write manifests, lock steps and packages. */
const WRITABLE_IN_SANDBOX = new Set(
  DEFAULT_GROUPS.flatMap(([, patterns, written]) => (written ? patterns : [])),
);

type Rule = { pattern: string; matches: (relative: string) => boolean };

/** Which writes are to protected files, for the edit tools' permission rule and their own check. */
export class ProtectedPaths {
  readonly #rules: Rule[];
  readonly #root: string;
  #realRoot: string | undefined;

  /** `patterns` is the `protectedPaths` option as given (validated here); `root` the absolute root. */
  constructor(root: string, patterns: readonly string[] = PROTECTED_PATHS) {
    if (!Array.isArray(patterns) || patterns.some((p) => typeof p !== "string" || p.trim() === "")) {
      throw new UserError(
        'workspace({ protectedPaths }) takes an array of non-empty globs, e.g. [...PROTECTED_PATHS, "scripts/**"]',
      );
    }
    this.#root = root;
    this.#rules = patterns.map((pattern) => ({ pattern, matches: compile(pattern) }));
  }

  /** How many patterns are protected. */
  get size(): number {
    return this.#rules.length;
  }

  /**
   * The protected pattern a root-relative path (as `/`-separated segments) falls under, if any:
   * the path itself or one of the folders it lies in.
   */
  match(relative: string): string | undefined {
    if (this.#rules.length === 0) return undefined;
    const segments = relative
      .split("/")
      .map(normalSegment)
      .filter((s) => s !== "" && s !== ".");
    for (let i = 1; i <= segments.length; i++) {
      const prefix = segments.slice(0, i).join("/");
      for (const rule of this.#rules) if (rule.matches(prefix)) return rule.pattern;
    }
    return undefined;
  }

  /**
   * The path a model gave, relative to the root as spelled (`./`, `sub/..` and an absolute path
   * under the root resolved; links not followed), or `undefined` when it is not under the root.
   */
  spelled(given: string): string | undefined {
    const absolute = path.resolve(this.#root, given);
    if (isWithin(this.#root, absolute)) return toPosix(path.relative(this.#root, absolute));
    const real = this.#real();
    if (real && isWithin(real, absolute)) return toPosix(path.relative(real, absolute));
    return undefined;
  }

  /**
   * The edit tools' permission rule: "ask" for a protected path, with a reason that names it and
   * says why; `undefined` otherwise (the permission mode decides). Synchronous and without I/O
   * beyond the root's own real path: it looks at the path as spelled, and the tool itself refuses
   * a spelling that reaches a protected file through a link (see `refuseAlias`).
   */
  rule(tool: string, args: unknown): PermissionDecision | undefined {
    const given = (args as { path?: unknown } | null)?.path;
    if (typeof given !== "string" || given === "" || given.includes("\0")) return undefined;
    const relative = this.spelled(given);
    if (relative === undefined) return undefined;
    const pattern = this.match(relative);
    if (pattern === undefined) return undefined;
    return {
      behavior: "ask",
      reason:
        `${tool} to ${relative}: ${relative} is a protected file (${this.why(pattern)}). ` +
        "Approving it lets commands that run without asking do what it says.",
    };
  }

  /**
   * What the shell's sandbox mounts read-only, as absolute paths under `realRoot`: the entries at
   * the top of the root that a protected pattern matches, and protected paths a pattern names
   * literally (`.config/mise`) — those that exist now (bubblewrap can only mount what exists).
   * Package manifests, build files and installed packages stay writable: installs and builds
   * write them. What stays is `.git`, hook managers, environment files and editor settings: what
   * the user's own git, shell or editor runs later, outside any sandbox.
   */
  readOnlyInSandbox(realRoot: string): string[] {
    if (this.#rules.length === 0) return [];
    const paths: string[] = [];
    let names: string[] = [];
    try {
      names = readdirSync(realRoot);
    } catch {
      return []; // the root is gone: the command will say so
    }
    for (const name of names) {
      const pattern = this.match(name);
      if (pattern !== undefined && !WRITABLE_IN_SANDBOX.has(pattern)) paths.push(path.join(realRoot, name));
    }
    for (const { pattern } of this.#rules) {
      const literal = pattern.replace(/^\.?\/+/, "").replace(/\/+$/, "");
      if (!literal.includes("/") || /[*?[\]{}()!+@]/.test(literal) || WRITABLE_IN_SANDBOX.has(pattern))
        continue;
      const full = path.join(realRoot, literal);
      if (!paths.includes(full) && existsSync(full)) paths.push(full);
    }
    return paths;
  }

  /** Why a pattern is protected, for a person deciding. */
  why(pattern: string): string {
    return DEFAULT_REASONS.get(pattern) ?? `it matches ${JSON.stringify(pattern)} in protectedPaths`;
  }

  #real(): string | undefined {
    if (this.#realRoot === undefined) {
      try {
        this.#realRoot = realpathSync.native(this.#root);
      } catch {
        return undefined; // the root does not exist (yet): the tool will say so
      }
    }
    return this.#realRoot;
  }
}

function compile(pattern: string): (relative: string) => boolean {
  // A leading "/" (or "./") anchors the pattern to the root, as in .gitignore; otherwise a
  // pattern without "/" matches a name at any depth.
  const anchored = /^\.?\//.test(pattern);
  const glob = pattern.replace(/^\.?\/+/, "").replace(/\/+$/, "");
  try {
    const matcher = picomatch(glob, { dot: true, nocase: true, basename: !anchored && !glob.includes("/") });
    return (relative) => matcher(relative);
  } catch (error) {
    throw new UserError(
      `invalid glob ${JSON.stringify(pattern)} in protectedPaths: ${(error as Error).message}`,
    );
  }
}

/**
 * A segment as a case-insensitive or Windows file system would treat it: trailing dots and spaces
 * dropped and an NTFS stream name (`package.json::$DATA`) cut, so `Makefile.` or `.git ` cannot
 * slip past a pattern. Elsewhere this only makes a few more names ask.
 */
function normalSegment(segment: string): string {
  const colon = segment.indexOf(":");
  const base = colon === -1 ? segment : segment.slice(0, colon);
  return base === "." || base === ".." ? base : base.replace(/[. ]+$/, "");
}
