/**
 * W6: cold import time of each entry point of the built package, each in a fresh plain
 * `node` process (no tsx, no loader: what a user's process pays), median of 11 processes.
 * The clock runs inside the process around `await import(...)`, so Node's own boot is not
 * counted. zod is timed the same way for scale: most users import it anyway.
 *
 * To show that heavy optional parts load lazily, one more process per entry runs with a
 * module `resolve` hook that logs every ESM URL resolved, and then adds what `require()`
 * loaded (its cache: CommonJS packages such as ajv are required, not imported); the
 * node_modules packages that importing the entry pulled in are listed. (Not timed.)
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { fmt, median, type Row, root, runNode } from "../harness.js";

const PROCESSES = 11;
/** Packages that must not load until a feature that needs them is used (src/ says so of each). */
const HEAVY = [
  "ajv",
  "@modelcontextprotocol/sdk",
  "linkedom",
  "@mozilla/readability",
  "@mdream/js",
  "undici",
  "ipaddr.js",
  "better-sqlite3",
  "pg",
  "hono",
];

const ENTRIES: Array<{ name: string; file: string; allowed?: string[]; target?: number }> = [
  { name: "quiver-agents", file: "dist/index.js", target: 60 },
  { name: "quiver-agents/tools", file: "dist/tools/index.js" },
  { name: "quiver-agents/store", file: "dist/store/index.js" },
  { name: "quiver-agents/providers", file: "dist/providers/index.js" },
  { name: "quiver-agents/mcp", file: "dist/hosts/mcp/index.js", allowed: ["@modelcontextprotocol/sdk"] },
];

async function importMs(specifier: string): Promise<number> {
  const code = `const t = performance.now(); await import(${JSON.stringify(specifier)}); console.log(performance.now() - t);`;
  const samples: number[] = [];
  for (let i = 0; i < PROCESSES; i++) {
    samples.push(Number((await runNode(["--input-type=module", "-e", code])).trim()));
  }
  return median(samples);
}

const HOOKS = `import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(process.env.BENCH_MODULE_LOG, result.url + "\\n");
  return result;
}`;
const REGISTER = `import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOKS)}`)});`;

/** The node_modules packages that importing `specifier` loads. */
async function packagesLoaded(specifier: string): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), "quiver-bench-"));
  const log = join(dir, "modules.log");
  try {
    await runNode(
      [
        "--import",
        `data:text/javascript,${encodeURIComponent(REGISTER)}`,
        "--input-type=module",
        "-e",
        `await import(${JSON.stringify(specifier)});
        const { createRequire } = await import("node:module");
        const { appendFileSync } = await import("node:fs");
        const required = Object.keys(createRequire(import.meta.url).cache);
        appendFileSync(process.env.BENCH_MODULE_LOG, required.join("\\n") + "\\n");`,
      ],
      { ...process.env, BENCH_MODULE_LOG: log },
    );
    const packages = new Set<string>();
    for (const url of readFileSync(log, "utf8").split("\n")) {
      const match = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
      if (match) packages.add(match[1]!);
    }
    return [...packages].sort();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function rows(): Promise<Row[]> {
  const out: Row[] = [];
  const zodMs = await importMs("zod");
  for (const entry of ENTRIES) {
    const url = pathToFileURL(resolve(root, entry.file)).href;
    const ms = await importMs(url);
    const loaded = await packagesLoaded(url);
    const heavy = loaded.filter((p) => HEAVY.includes(p) && !entry.allowed?.includes(p));
    const speed = entry.target === undefined || ms <= entry.target;
    out.push({
      workload: `W6 import "${entry.name}"`,
      measure: `cold ms; loads: ${loaded.join(", ") || "no packages"}`,
      quiver: fmt(ms),
      baseline: entry.name === "quiver-agents" ? `zod ${fmt(zodMs)}` : undefined,
      target: `${entry.target === undefined ? "" : `≤ ${entry.target} ms, `}no heavy package`,
      met: speed && heavy.length === 0,
    });
  }
  return out;
}
