/**
 * The `quiver` binary as users get it: the package compiled with tsc into a private folder
 * (dist/ beside a copy of package.json and the shipped examples/agents, node_modules linked), so the binary and the agent files
 * of a test resolve "quiver-agents" through the package's own `exports`, exactly as in an
 * installed package. Built once per source tree (test files share it through a lock), so a
 * clean clone needs no prebuilt dist/ and the checkout's own dist/ is never touched.
 */
import { execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll } from "vitest";

export const repo = resolve(fileURLToPath(new URL("../..", import.meta.url)));
const BUILD_TIMEOUT_MS = 120_000;

function sourceKey(): string {
  const hash = createHash("sha256");
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const info = statSync(path);
      if (info.isDirectory()) walk(path);
      else hash.update(`${path}:${info.size}:${info.mtimeMs}\n`);
    }
  };
  walk(join(repo, "src"));
  walk(join(repo, "examples/agents"));
  hash.update(readFileSync(join(repo, "package.json")));
  return hash.digest("hex").slice(0, 16);
}

/** The built package's folder and its binary; builds it unless a build of these sources exists. */
export async function builtPackage(): Promise<{ root: string; bin: string }> {
  const root = join(tmpdir(), `quiver-cli-build-${sourceKey()}`);
  const bin = join(root, "dist/cli/main.js");
  const ready = join(root, ".ready");
  const lock = `${root}.lock`;
  const deadline = Date.now() + BUILD_TIMEOUT_MS;
  for (;;) {
    if (existsSync(ready)) return { root, bin };
    try {
      mkdirSync(lock);
      break;
    } catch {
      // Another test file is building: wait for it (a lock left by a crashed build goes stale).
      if (Date.now() - statSync(lock, { throwIfNoEntry: false })!.mtimeMs > BUILD_TIMEOUT_MS)
        rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`timed out waiting for the build in ${root}`);
      await new Promise((ok) => setTimeout(ok, 200));
    }
  }
  try {
    removeOldBuilds(root);
    rmSync(root, { recursive: true, force: true });
    mkdirSync(root, { recursive: true });
    await compile(join(root, "dist"));
    if (!existsSync(bin)) throw new Error(`tsc did not emit ${bin}`);
    const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8"));
    writeFileSync(
      join(root, "package.json"),
      JSON.stringify(
        { name: pkg.name, version: pkg.version, type: pkg.type, bin: pkg.bin, exports: pkg.exports },
        null,
        2,
      ),
    );
    // The example agents ship with the package ("files"): `quiver init` copies one.
    cpSync(join(repo, "examples/agents"), join(root, "examples/agents"), { recursive: true });
    symlinkSync(join(repo, "node_modules"), join(root, "node_modules"), "dir");
    writeFileSync(ready, "");
    return { root, bin };
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * Compiles src/ to `outDir`. The sources are written for file-by-file compilation
 * (`isolatedModules`, `verbatimModuleSyntax`), so esbuild's transform (the one tsx runs on)
 * gives the same modules as tsc, in well under a second instead of tens of seconds; tsc, which
 * `npm run build` uses, is the fallback. Type errors are the typecheck step's business.
 */
async function compile(outDir: string): Promise<void> {
  let esbuild: typeof import("esbuild") | undefined;
  try {
    esbuild = await import("esbuild");
  } catch {
    esbuild = undefined;
  }
  if (esbuild) {
    const entryPoints: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (name.endsWith(".ts") && !name.endsWith(".d.ts")) entryPoints.push(path);
      }
    };
    walk(join(repo, "src"));
    await esbuild.build({
      entryPoints,
      outdir: outDir,
      outbase: join(repo, "src"),
      format: "esm",
      platform: "node",
      target: "node20",
      bundle: false,
      logLevel: "silent",
      tsconfig: join(repo, "tsconfig.build.json"),
    });
    return;
  }
  await new Promise<void>((done) =>
    execFile(
      process.execPath,
      [
        join(repo, "node_modules/typescript/bin/tsc"),
        "-p",
        join(repo, "tsconfig.build.json"),
        "--outDir",
        outDir,
      ],
      { cwd: repo, timeout: BUILD_TIMEOUT_MS },
      () => done(),
    ),
  );
}

/** Builds of earlier source trees, once they are an hour old (a test run never lasts that long). */
function removeOldBuilds(current: string): void {
  for (const name of readdirSync(tmpdir())) {
    const path = join(tmpdir(), name);
    if (!name.startsWith("quiver-cli-build-") || path === current || path.endsWith(".lock")) continue;
    const info = statSync(path, { throwIfNoEntry: false });
    if (info && Date.now() - info.mtimeMs > 3_600_000) rmSync(path, { recursive: true, force: true });
  }
}

/**
 * A fresh project folder whose node_modules holds the built package, with the given fixture
 * agent files copied in: what `npm install quiver-agents` would give a user.
 */
export function project(pkgRoot: string, fixtures: string[] = []): string {
  const dir = mkdtempSync(join(tmpdir(), "quiver-cli-project-"));
  mkdirSync(join(dir, "node_modules"));
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({ name: "agent-project", private: true, type: "module" }),
  );
  symlinkSync(pkgRoot, join(dir, "node_modules/quiver-agents"), "dir");
  for (const name of fixtures) cpSync(join(repo, "test/cli/fixtures", name), join(dir, name));
  return dir;
}

/**
 * Registers a test file's hooks (the built `quiver` binary; its projects removed after the file)
 * and returns `bin`, the built package's `root`, and `project()`, a fresh project with the built package and `fixtures` (or
 * the ones given).
 *
 * @example
 * const cli = cliProjects(["chatty-agent.mjs"]);
 * it("runs", async () => expect((await quiver(cli.bin, ["--help"], cli.project())).code).toBe(0));
 */
export function cliProjects(fixtures: string[] = []): {
  readonly bin: string;
  readonly root: string;
  project(given?: string[]): string;
  removeAfter(dir: string): string;
} {
  let bin = "";
  let pkgRoot = "";
  const dirs: string[] = [];
  beforeAll(async () => {
    ({ bin, root: pkgRoot } = await builtPackage());
  }, 150_000);
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  const removeAfter = (dir: string) => {
    dirs.push(dir);
    return dir;
  };
  return {
    get bin() {
      return bin;
    },
    get root() {
      return pkgRoot;
    },
    project: (given = fixtures) => removeAfter(project(pkgRoot, given)),
    removeAfter,
  };
}

export type Ran = { code: number | null; stdout: string; stderr: string };

/** Runs the binary to its end (bounded by `timeoutMs`) with stdin from `input` (or closed). */
export function quiver(
  bin: string,
  args: string[],
  options: { cwd: string; input?: string; env?: Record<string, string>; timeoutMs?: number },
): Promise<Ran> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd: options.cwd,
      env: { ...process.env, NO_COLOR: "1", ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(
        new Error(`quiver ${args.join(" ")} did not finish in time\nstdout: ${stdout}\nstderr: ${stderr}`),
      );
    }, options.timeoutMs ?? 15_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? "");
  });
}
