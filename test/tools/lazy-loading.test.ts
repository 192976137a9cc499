import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../src");
const HEAVY = ["undici", "linkedom", "@mozilla/readability", "@mdream/js", "ipaddr.js"];

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
  it("loads undici, linkedom, Readability, mdream and ipaddr.js only on first use", () => {
    const { files, packages } = eagerGraph(path.join(src, "tools/index.ts"));
    expect(files.size).toBeGreaterThan(5);
    for (const heavy of HEAVY) expect([...packages], heavy).not.toContain(heavy);
    for (const lazy of ["html-to-markdown.ts", "guarded-dispatcher.ts", "address-policy.ts"]) {
      expect([...files].map((f) => path.basename(f))).not.toContain(lazy);
    }
  });

  it("the lazy modules are the ones that hold the heavy packages", () => {
    expect(eagerGraph(path.join(src, "tools/html-to-markdown.ts")).packages).toEqual(
      new Set(["@mdream/js", "@mozilla/readability", "linkedom"]),
    );
    expect([...eagerGraph(path.join(src, "tools/guarded-dispatcher.ts")).packages]).toContain("undici");
  });
});

describe("HTML is converted off the main thread", () => {
  it("only the conversion thread's program loads the converter (type imports load nothing)", () => {
    const loads =
      /import\(\s*"\.\/html-to-markdown\.js"\s*\)|^import\s+(?!type\b)[^;]*from\s+"\.\/html-to-markdown\.js"/m;
    const importers = readdirSync(path.join(src, "tools"))
      .filter((f) => f.endsWith(".ts"))
      .filter((f) => loads.test(readFileSync(path.join(src, "tools", f), "utf8")));
    expect(importers).toEqual(["conversion-worker.ts"]);
  });
});
