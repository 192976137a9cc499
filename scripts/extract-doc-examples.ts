/**
 * Copies every ```ts code block of docs/*.md and README.md into .doc-examples/ so that
 * `npm run typecheck` type-checks the documentation's examples like any other code.
 * A block fenced as ```ts no-check is skipped (for fragments that are not whole programs).
 */
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
const out = join(root, ".doc-examples");
await rm(out, { recursive: true, force: true });
await mkdir(out, { recursive: true });

const pages = [
  "README.md",
  ...(await readdir(join(root, "docs"))).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`),
];
let count = 0;
for (const page of pages) {
  const text = await readFile(join(root, page), "utf8");
  const blocks = [...text.matchAll(/^```ts([^\n]*)\n([\s\S]*?)^```$/gm)];
  let index = 0;
  for (const [, info, code] of blocks) {
    index++;
    if (info?.includes("no-check")) continue;
    const name = `${page.replace(/[/.]/g, "_")}_${index}.ts`;
    // Each block is its own module, so top-level names never clash between blocks.
    await writeFile(join(out, name), `// ${page}, block ${index}\nexport {};\n${code}`);
    count++;
  }
}
// A folder whose name starts with a dot is skipped by `include` globs: the examples get a
// tsconfig of their own, so `tsc -p .doc-examples` compiles every one of them (with the
// project's settings and its `paths` to src/; the packed-tarball check compiles them again
// the way a user's project does: scripts/consumer-check.ts).
await writeFile(
  join(out, "tsconfig.json"),
  `${JSON.stringify({ extends: "../tsconfig.json", compilerOptions: { rootDir: ".." }, include: ["*.ts"] }, null, 2)}\n`,
);
console.log(`extracted ${count} documentation examples into .doc-examples/`);
