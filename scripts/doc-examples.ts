/**
 * The ```ts blocks of README.md and docs/*.md, as whole modules. Info strings after `ts`:
 * - `no-check` skips a fragment that is not a whole program;
 * - `no-run: <why>` compiles a block but never runs it, and must say why: it needs a network, an
 *   API key, a database or a server of the reader's, or it serves until stopped
 *   (```ts no-run: needs OPENAI_API_KEY). Every other example is run by scripts/consumer-check.ts
 *   against the packed package, so a bare `no-run` (an example nobody runs, with no reason) is
 *   refused, as is any other info string.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

export type DocExample = {
  page: string;
  index: number;
  /** The line of the opening fence, 1-based. */
  line: number;
  file: string;
  code: string;
  run: boolean;
  /** Why the block is not run (`no-run: …`). */
  noRun?: string;
};

/** Thrown when a page's fence line breaks the rules above; the message lists every such line. */
export class DocExampleError extends Error {
  override name = "DocExampleError";
}

const INFO = /^(?:|no-check(?:\s.*)?|no-run:\s*(?<why>\S.*))$/;

export async function docExamples(root: string): Promise<DocExample[]> {
  const pages = [
    "README.md",
    ...(await readdir(join(root, "docs")))
      .filter((f) => f.endsWith(".md"))
      .sort()
      .map((f) => `docs/${f}`),
  ];
  const examples: DocExample[] = [];
  const problems: string[] = [];
  for (const page of pages) {
    const text = await readFile(join(root, page), "utf8");
    let index = 0;
    for (const match of text.matchAll(/^```ts([^\n]*)\n([\s\S]*?)^```$/gm)) {
      const [, rawInfo = "", code = ""] = match;
      index++;
      const line = text.slice(0, match.index).split("\n").length;
      const info = rawInfo.trim();
      const parsed = INFO.exec(info);
      if (!parsed) {
        problems.push(
          info === "no-run" || info.startsWith("no-run")
            ? `${page}:${line}: \`ts ${info}\` says no reason: write \`ts no-run: <why>\` (it needs a network, a key, a database, or it never exits), or let the example run`
            : `${page}:${line}: unknown info string \`ts ${info}\` (use \`ts\`, \`ts no-check\` or \`ts no-run: <why>\`)`,
        );
        continue;
      }
      if (info.startsWith("no-check")) continue;
      const why = parsed.groups?.why?.trim();
      // Each block is its own module, so top-level names never clash between blocks.
      examples.push({
        page,
        index,
        line,
        file: `${page.replace(/[/.]/g, "_")}_${index}.ts`,
        code: `// ${page}, block ${index}\nexport {};\n${code}`,
        run: why === undefined,
        ...(why !== undefined && { noRun: why }),
      });
    }
  }
  if (problems.length) throw new DocExampleError(`documentation examples:\n${problems.join("\n")}`);
  return examples;
}
