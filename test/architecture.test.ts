import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const src = resolve(import.meta.dirname, "../src");
/** Folders at the edge: they import the core; the core never imports them. */
const EDGES = ["workspace", "server", "cli", "otel", "dbos", "mcp-server"];
/** The imports between edges that are allowed: the CLI drives the server, the workspace and the MCP server; the MCP server checks requests with the server's auth. */
const EDGE_IMPORTS: Record<string, string[]> = {
  cli: ["server", "workspace", "mcp-server"],
  "mcp-server": ["server"],
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** Relative imports (static, dynamic and type-only) of a file, as paths under src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const specifiers = [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)["'](\.{1,2}\/[^"']+)["']/g)].map(
    (m) => m[1]!,
  );
  return specifiers.map((s) => relative(src, resolve(dirname(file), s)));
}

const folderOf = (path: string) => path.split("/")[0]!;

describe("the import graph", () => {
  const files = sourceFiles(src);

  it("has the core never import an edge folder (workspace, server, cli, otel, dbos, mcp-server)", () => {
    const offending: string[] = [];
    for (const file of files) {
      const from = relative(src, file);
      if (EDGES.includes(folderOf(from))) continue;
      for (const target of importsOf(file)) {
        if (EDGES.includes(folderOf(target))) offending.push(`${from} → ${target}`);
      }
    }
    expect(offending).toEqual([]);
  });

  it("keeps edge folders apart, except the CLI (server, workspace, MCP server) and the MCP server (the server's auth)", () => {
    const offending: string[] = [];
    for (const file of files) {
      const from = relative(src, file);
      const edge = folderOf(from);
      if (!EDGES.includes(edge)) continue;
      for (const target of importsOf(file)) {
        const to = folderOf(target);
        if (EDGES.includes(to) && to !== edge && !EDGE_IMPORTS[edge]?.includes(to))
          offending.push(`${from} → ${target}`);
      }
    }
    expect(offending).toEqual([]);
  });
});
