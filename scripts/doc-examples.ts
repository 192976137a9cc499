/**
 * The ```ts blocks of README.md and docs/*.md, as whole modules. Info strings after `ts`:
 * `no-check` skips a fragment that is not a whole program; `no-run` compiles a block but never
 * runs it (it needs a network, an API key or a server of the reader's).
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

export type DocExample = { page: string; index: number; file: string; code: string; run: boolean };

export async function docExamples(root: string): Promise<DocExample[]> {
  const pages = [
    "README.md",
    ...(await readdir(join(root, "docs")))
      .filter((f) => f.endsWith(".md"))
      .sort()
      .map((f) => `docs/${f}`),
  ];
  const examples: DocExample[] = [];
  for (const page of pages) {
    const text = await readFile(join(root, page), "utf8");
    let index = 0;
    for (const [, info = "", code = ""] of text.matchAll(/^```ts([^\n]*)\n([\s\S]*?)^```$/gm)) {
      index++;
      if (info.includes("no-check")) continue;
      // Each block is its own module, so top-level names never clash between blocks.
      examples.push({
        page,
        index,
        file: `${page.replace(/[/.]/g, "_")}_${index}.ts`,
        code: `// ${page}, block ${index}\nexport {};\n${code}`,
        run: !info.includes("no-run"),
      });
    }
  }
  return examples;
}
