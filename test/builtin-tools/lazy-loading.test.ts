import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../src");
const HEAVY = ["undici", "linkedom", "@mozilla/readability", "@mdream/js", "ipaddr.js"];

/** Every .ts file under `dir`. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/** Every module `entry` loads eagerly: static value imports and re-exports, not `import type` or `import()`. */
function eagerGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const code = readFileSync(file, "utf8");
    const statements = code.matchAll(/^(?:import|export)\s+(?!type\b)([^;]*?)\s+from\s+"([^"]+)";/gms);
    for (const [, clause, specifier] of statements) {
      // `import { type A, type B } from` loads nothing either.
      if (
        /^\{[^}]*\}$/s.test(clause!.trim()) &&
        clause!
          .replace(/[{}\s]/g, "")
          .split(",")
          .every((n) => n.startsWith("type") || n === "")
      )
        continue;
      if (specifier!.startsWith("."))
        visit(path.resolve(path.dirname(file), specifier!.replace(/\.js$/, ".ts")));
      else packages.add(specifier!);
    }
  };
  visit(entry);
  return { files, packages };
}

describe("quiver-agents/tools stays cheap to import", () => {
  it("loads linkedom, Readability, mdream and ipaddr.js only on first use (and undici never)", () => {
    const { files, packages } = eagerGraph(path.join(src, "builtin-tools/index.ts"));
    expect(files.size).toBeGreaterThan(5);
    for (const heavy of HEAVY) expect([...packages], heavy).not.toContain(heavy);
    for (const lazy of [
      "html-to-markdown.ts",
      "guarded-agent.ts",
      "http-transport.ts",
      "address-policy.ts",
    ]) {
      expect([...files].map((f) => path.basename(f))).not.toContain(lazy);
    }
  });

  it("the lazy modules are the ones that hold the heavy packages", () => {
    expect(eagerGraph(path.join(src, "builtin-tools/html-to-markdown.ts")).packages).toEqual(
      new Set(["@mdream/js", "@mozilla/readability", "linkedom"]),
    );
    expect(eagerGraph(path.join(src, "builtin-tools/address-policy.ts")).packages).toEqual(
      new Set(["ipaddr.js"]),
    );
    // The transport stands on Node's own modules: nothing to load from node_modules.
    for (const network of ["guarded-agent.ts", "http-transport.ts"]) {
      const packages = [...eagerGraph(path.join(src, "builtin-tools", network)).packages];
      expect(
        packages.filter((p) => !p.startsWith("node:")),
        network,
      ).toEqual([]);
    }
  });

  it("no source file imports undici", () => {
    const importers = sourceFiles(src).filter((file) =>
      /\bfrom\s+"undici"|import\(\s*"undici"\s*\)|require\(\s*"undici"\s*\)/.test(readFileSync(file, "utf8")),
    );
    expect(importers).toEqual([]);
  });
});

describe("the first fetch of a process", () => {
  it("loads no HTTP client library on the event loop's thread (neither undici nor Node's bundled copy)", () => {
    // A fresh process, so that nothing this test runner loaded counts.
    const dir = mkdtempSync(path.join(tmpdir(), "quiver-first-fetch-"));
    const script = path.join(dir, "first-fetch.mts");
    const reader = pathToFileURL(path.join(src, "builtin-tools/http-reader.ts")).href;
    writeFileSync(
      script,
      [
        'import http from "node:http";',
        'import { createRequire } from "node:module";',
        `const { HttpReader } = await import(${JSON.stringify(reader)});`,
        "const server = http.createServer((_req, res) => {",
        '  res.writeHead(200, { "content-type": "text/plain" });',
        '  res.end("first page");',
        "});",
        'await new Promise((done) => server.listen(0, "127.0.0.1", done));',
        'const reader = new HttpReader({ allowHosts: ["127.0.0.1"] });',
        'const page = await reader.read("http://127.0.0.1:" + server.address().port + "/");',
        "await reader.close();",
        "server.close();",
        "const required = Object.keys(createRequire(import.meta.url).cache);",
        "const internal = process.moduleLoadList;",
        'const undici = [...required, ...internal].filter((name) => name.includes("undici"));',
        "console.log(JSON.stringify({ text: page.text, undici }));",
      ].join("\n"),
    );
    try {
      const out = execFileSync(process.execPath, ["--import", "tsx", script], {
        cwd: path.resolve(src, ".."),
        encoding: "utf8",
        timeout: 60_000,
      });
      const result = JSON.parse(out.trim().split("\n").at(-1)!);
      expect(result.text).toBe("first page");
      expect(result.undici).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("HTML is converted off the main thread", () => {
  it("only the conversion thread's program loads the converter (type imports load nothing)", () => {
    const loads =
      /import\(\s*"\.\/html-to-markdown\.js"\s*\)|^import\s+(?!type\b)[^;]*from\s+"\.\/html-to-markdown\.js"/m;
    const importers = readdirSync(path.join(src, "builtin-tools"))
      .filter((f) => f.endsWith(".ts"))
      .filter((f) => loads.test(readFileSync(path.join(src, "builtin-tools", f), "utf8")));
    expect(importers).toEqual(["conversion-worker.ts"]);
  });
});
