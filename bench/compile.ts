/**
 * Transpiles the workloads (and the harness they import) to plain JavaScript, so their child
 * processes run under `node` with no loader (see harness.ts). Type-only imports vanish; the
 * output sits in node_modules/.cache so that `zod` still resolves from the checkout.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import ts from "typescript";
import { root } from "./harness.js";

const FILES = [
  "harness.ts",
  ...readdirSync(join(import.meta.dirname, "workloads")).map((f) => `workloads/${f}`),
];

/** Writes the JavaScript and tells later `inChild()` calls (and their children) where it is. */
export function compileWorkloads(): string {
  const out = join(root, "node_modules/.cache/quiver-bench");
  for (const file of FILES.filter((f) => f.endsWith(".ts"))) {
    const source = readFileSync(join(import.meta.dirname, file), "utf8");
    const { outputText } = ts.transpileModule(source, {
      fileName: file,
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2023,
        verbatimModuleSyntax: true,
      },
    });
    const target = join(out, file.replace(/\.ts$/, ".js"));
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, outputText);
  }
  process.env.BENCH_COMPILED = out;
  process.env.BENCH_ROOT = root;
  return out;
}
