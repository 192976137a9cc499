/**
 * W6: cold import time of each entry point of the built package, each in a fresh plain
 * `node` process (no tsx, no loader: what a user's process pays), median of 11 processes.
 * The clock runs inside the process around `await import(...)`, so Node's own boot is not
 * counted. zod is timed the same way for scale: most users import it anyway.
 *
 * To show that heavy optional parts load lazily, one more process per entry runs with a
 * module `resolve` hook that logs every ESM URL resolved, and then adds what `require()`
 * loaded (its cache: CommonJS packages such as ajv are required, not imported); the
 * node_modules packages that importing the entry pulled in are listed. (Not timed.) The root
 * entry must also leave the subpaths alone: none of dist/server, workspace, otel, dbos or cli
 * may load with it (issue 20).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { fmt, median, type Row, ratio, root, runNode } from "../harness.js";

const PROCESSES = 11;
/** Packages that must not load until a feature that needs them is used (src/ says so of each). */
const HEAVY = [
  "ajv",
  "@modelcontextprotocol/sdk",
  "linkedom",
  "@mozilla/readability",
  "@mdream/js",
  "ipaddr.js",
  "better-sqlite3",
  "pg",
  "hono",
];

/** The subpaths (dist/ folders) the root import must not load. */
const SUBPATHS = ["server", "workspace", "otel", "dbos", "cli"];
/** The root import's target, as a multiple of `import "zod"` timed the same way. */
const ROOT_TIMES_ZOD = 3;

const ENTRIES: Array<{ name: string; file: string; allowed?: string[]; root?: boolean }> = [
  { name: "quiver-agents", file: "dist/index.js", root: true },
  { name: "quiver-agents/tools", file: "dist/builtin-tools/index.js" },
  { name: "quiver-agents/store", file: "dist/store/index.js" },
  { name: "quiver-agents/providers", file: "dist/providers/index.js" },
  { name: "quiver-agents/mcp", file: "dist/hosts/mcp/index.js", allowed: ["@modelcontextprotocol/sdk"] },
  { name: "quiver-agents/workspace", file: "dist/workspace/index.js" },
  { name: "quiver-agents/server", file: "dist/server/index.js", allowed: ["hono"] },
  { name: "quiver-agents/otel", file: "dist/otel/index.js" },
  { name: "quiver-agents/dbos", file: "dist/dbos/index.js", allowed: ["@dbos-inc/dbos-sdk", "pg"] },
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

/** The node_modules packages that importing `specifier` loads, and the dist/ folders. */
async function packagesLoaded(specifier: string): Promise<{ packages: string[]; folders: string[] }> {
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
    const folders = new Set<string>();
    const dist = pathToFileURL(resolve(root, "dist")).href;
    for (const url of readFileSync(log, "utf8").split("\n")) {
      const match = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
      if (match) packages.add(match[1]!);
      const path = url.startsWith("file:") ? url : pathToFileURL(url).href;
      const folder = path.startsWith(`${dist}/`) ? /^([^/]+)\//.exec(path.slice(dist.length + 1)) : null;
      if (folder) folders.add(folder[1]!);
    }
    return { packages: [...packages].sort(), folders: [...folders].sort() };
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
    const { packages: loaded, folders } = await packagesLoaded(url);
    const heavy = loaded.filter((p) => HEAVY.includes(p) && !entry.allowed?.includes(p));
    if (entry.root) {
      const subpaths = folders.filter((f) => SUBPATHS.includes(f));
      out.push({
        workload: `W6 import "${entry.name}"`,
        measure: `cold ms; loads: ${loaded.join(", ") || "no packages"}; subpaths loaded: ${subpaths.join(", ") || "none"}`,
        quiver: fmt(ms),
        baseline: `zod ${fmt(zodMs)}`,
        ratio: ratio(ms / zodMs),
        target: `≤ ${ROOT_TIMES_ZOD}× zod, no heavy package, none of ${SUBPATHS.join(", ")}`,
        met: ms <= ROOT_TIMES_ZOD * zodMs && heavy.length === 0 && subpaths.length === 0,
      });
      continue;
    }
    out.push({
      workload: `W6 import "${entry.name}"`,
      measure: `cold ms; loads: ${loaded.join(", ") || "no packages"}`,
      quiver: fmt(ms),
      target: "no heavy package",
      met: heavy.length === 0,
    });
  }
  return out;
}
