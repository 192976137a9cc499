/**
 * Cold `import "quiver"` time in a fresh Node process, against a process that imports nothing
 * and one that imports zod (the schema library most users bring anyway). Uses the built
 * package in dist/ (run `npm run build` first; `npm run bench` does).
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");

function importMs(specifier: string | undefined, runs = 15): number {
  const code = specifier
    ? `const t=performance.now(); await import(${JSON.stringify(specifier)}); console.log(performance.now()-t)`
    : "const t=performance.now(); console.log(performance.now()-t)";
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", code], {
      cwd: root,
      encoding: "utf8",
    });
    samples.push(Number(out.trim()));
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(runs / 2)]!;
}

export async function main(): Promise<void> {
  const entry = resolve(root, "dist/index.js");
  if (!existsSync(entry)) throw new Error("dist/ is missing: run `npm run build` first");
  const nothing = importMs(undefined);
  const zod = importMs("zod");
  const quiver = importMs(entry);
  console.log("\nCold import (fresh process, median of 15)");
  console.log("| import | ms | vs zod |");
  console.log("|---|---|---|");
  console.log(`| (nothing) | ${nothing.toFixed(1)} | |`);
  console.log(`| zod | ${zod.toFixed(1)} | 1.00× |`);
  console.log(`| quiver | ${quiver.toFixed(1)} | ${(quiver / zod).toFixed(2)}× |`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
