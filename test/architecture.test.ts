import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const src = resolve(import.meta.dirname, "../src");

/**
 * The core's layers, lowest first (docs/architecture.md has the map). A file may import files of
 * its own layer and of the layers below it, never above. A file's layer is the longest entry
 * that contains it: `run/engine/loop.ts` is in "run/engine", `run/runner.ts` in "run".
 */
const LAYERS: readonly string[][] = [
  ["errors.ts", "abort.ts", "thrown.ts", "plain-json.ts", "whole-number.ts", "json-depth.ts"], // what every layer raises and waits with
  ["model"], // the provider boundary's types, ScriptedModel
  ["providers"], // OpenAI, Anthropic, … (they know only model/)
  ["contract"], // the types every layer above shares: RunContext, RunEvent, …
  ["tool"], // defining a tool
  ["builtin-tools"], // the tools that ship
  ["hosts"], // where tools come from
  ["store"], // event logs
  ["run/config"], // what a user configures: Agent, handoff, plugin, permissions, budget
  ["run/state"], // one run's state and its events
  ["run/conversation"], // what the model is shown of a long transcript
  ["run/tracing"], // the spans of a traced run
  ["run/engine"], // the loop: a model turn, a turn's calls, their attempts, approvals
  ["run/durability"], // the event writer, replay, resume, recover
  ["run"], // Runner, RunHandle
  ["index.ts"], // the public surface
];
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

/** Relative imports (static, dynamic, re-exports and type-only) of a file, as paths under src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const specifiers = [
    ...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)["'](\.{1,2}\/[^"']+)["']/g),
    // A module loaded by name at run time (`const PROVIDERS_MODULE = "../providers/index.js"`).
    ...text.matchAll(/_MODULE\s*=\s*["'](\.{1,2}\/[^"']+)["']/g),
  ].map((m) => m[1]!);
  return specifiers.map((s) => relative(src, resolve(dirname(file), s)).replace(/\.js$/, ".ts"));
}

const folderOf = (path: string) => path.split("/")[0]!;

/** The index of a file's layer, or -1 for an edge folder. */
function layerOf(path: string): number {
  let best = -2;
  let bestLength = -1;
  LAYERS.forEach((entries, index) => {
    for (const entry of entries) {
      const inside = entry.endsWith(".ts") ? path === entry : path.startsWith(`${entry}/`);
      if (inside && entry.length > bestLength) {
        best = index;
        bestLength = entry.length;
      }
    }
  });
  if (best === -2 && EDGES.includes(folderOf(path))) return -1;
  return best;
}

/** Strongly connected components of more than one file (Tarjan), each sorted. */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (node: string) => {
    index.set(node, next);
    low.set(node, next);
    next++;
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) low.set(node, Math.min(low.get(node)!, index.get(target)!));
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

describe("the import graph", () => {
  const files = sourceFiles(src).map((file) => relative(src, file));
  const graph = new Map(files.map((file) => [file, importsOf(join(src, file))]));

  it("has no import cycle anywhere in src/ (type-only imports count)", () => {
    expect(cycles(graph)).toEqual([]);
  });

  it("places every file of src/ in a layer or an edge folder", () => {
    expect(files.filter((file) => layerOf(file) === -2)).toEqual([]);
  });

  it("has every import of the core point to its own layer or one below", () => {
    const offending: string[] = [];
    for (const [from, targets] of graph) {
      const layer = layerOf(from);
      if (layer < 0) continue;
      for (const target of targets) {
        const to = layerOf(target);
        if (to === -1 || to > layer) offending.push(`${from} → ${target}`);
      }
    }
    expect(offending).toEqual([]);
  });

  it("keeps edge folders apart, except the CLI (server, workspace, MCP server) and the MCP server (the server's auth)", () => {
    const offending: string[] = [];
    for (const [from, targets] of graph) {
      const edge = folderOf(from);
      if (!EDGES.includes(edge)) continue;
      for (const target of targets) {
        const to = folderOf(target);
        if (EDGES.includes(to) && to !== edge && !EDGE_IMPORTS[edge]?.includes(to))
          offending.push(`${from} → ${target}`);
      }
    }
    expect(offending).toEqual([]);
  });

  it("finds the cycles and upward imports it guards against (the checks can fail)", () => {
    const looped = new Map([
      ["a.ts", ["b.ts"]],
      ["b.ts", ["c.ts"]],
      ["c.ts", ["a.ts"]],
      ["d.ts", ["a.ts"]],
    ]);
    expect(cycles(looped)).toEqual([["a.ts", "b.ts", "c.ts"]]);
    expect(layerOf("run/engine/loop.ts")).toBeGreaterThan(layerOf("run/config/agent.ts"));
    expect(layerOf("run/runner.ts")).toBeGreaterThan(layerOf("run/durability/resume.ts"));
    expect(layerOf("tool/tool.ts")).toBeLessThan(layerOf("hosts/tool-host.ts"));
    expect(layerOf("server/chat.ts")).toBe(-1);
  });
});
