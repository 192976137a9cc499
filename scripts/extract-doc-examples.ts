/**
 * Copies every ```ts code block of docs/*.md and README.md into .doc-examples/ so that
 * `npm run typecheck` type-checks the documentation's examples like any other code (see
 * doc-examples.ts for the info strings that skip a block).
 */
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { docExamples } from "./doc-examples.js";

const root = resolve(import.meta.dirname, "..");
const out = join(root, ".doc-examples");
await rm(out, { recursive: true, force: true });
await mkdir(out, { recursive: true });

const examples = await docExamples(root);
for (const example of examples) await writeFile(join(out, example.file), example.code);
// A folder whose name starts with a dot is skipped by `include` globs: the examples get a
// tsconfig of their own, so `tsc -p .doc-examples` compiles every one of them (with the
// project's settings and its `paths` to src/; the packed-tarball check compiles them again
// the way a user's project does: scripts/consumer-check.ts).
await writeFile(
  join(out, "tsconfig.json"),
  `${JSON.stringify({ extends: "../tsconfig.json", compilerOptions: { rootDir: ".." }, include: ["*.ts"] }, null, 2)}\n`,
);
console.log(`extracted ${examples.length} documentation examples into .doc-examples/`);
