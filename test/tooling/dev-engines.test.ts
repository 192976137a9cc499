import { execFile } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";

const repo = resolve(import.meta.dirname, "../..");
/** The one development dependency allowed to want more than Node 20, with what it brings. */
const EXCEPTION = "node_modules/ai-v7";

it("npm ci on this Node warns EBADENGINE only for the documented exception (ai-v7's tree)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "quiver-engines-"));
  try {
    copyFileSync(join(repo, "package.json"), join(dir, "package.json"));
    copyFileSync(join(repo, "package-lock.json"), join(dir, "package-lock.json"));
    // What `npm ci` says about engines, from the lockfile alone: no download, nothing installed.
    const { stderr } = await promisify(execFile)(
      "npm",
      ["ci", "--dry-run", "--offline", "--ignore-scripts", "--no-audit", "--no-fund"],
      { cwd: dir, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 },
    );
    const warned = [...stderr.matchAll(/EBADENGINE {3}package: '(.+)@([^@']+)'/g)].map(([, name, v]) => ({
      name: name!,
      version: v!,
    }));
    const lock = JSON.parse(readFileSync(join(repo, "package-lock.json"), "utf8")) as {
      packages: Record<string, { name?: string; version?: string }>;
    };
    for (const { name, version } of warned) {
      const paths = Object.entries(lock.packages)
        // An alias (ai-v7 is npm:ai@7) keeps the real name in `name`.
        .filter(
          ([path, entry]) =>
            (entry.name ?? path.split("node_modules/").pop()) === name && entry.version === version,
        )
        .map(([path]) => path);
      expect(paths.length, `${name}@${version} in the lockfile`).toBeGreaterThan(0);
      for (const path of paths)
        expect(
          path === EXCEPTION || path.startsWith(`${EXCEPTION}/`),
          `${name}@${version} (${path}) wants a newer Node than engines promises: keep the development tree within it, or say why in package.json "//"`,
        ).toBe(true);
    }
    // The exception is written down where `npm ci`'s reader looks.
    const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as Record<string, unknown>;
    if (warned.length) expect(String(pkg["//"])).toMatch(/ai-v7 .*EBADENGINE/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
