import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DocExampleError, docExamples } from "../../scripts/doc-examples.js";

let root: string | undefined;
afterEach(async () => {
  if (root) await rm(root, { recursive: true, force: true });
  root = undefined;
});

async function pages(files: Record<string, string>): Promise<string> {
  root = await mkdtemp(join(tmpdir(), "quiver-doc-examples-"));
  await mkdir(join(root, "docs"));
  await writeFile(join(root, "README.md"), "# readme\n");
  for (const [name, text] of Object.entries(files)) await writeFile(join(root, name), text);
  return root;
}

const block = (info: string, code = 'console.log("hi");') => `\`\`\`ts${info}\n${code}\n\`\`\`\n`;

describe("the documentation's examples", () => {
  it("a block not run must say why; one that says why is compiled but not run", async () => {
    const dir = await pages({
      "docs/a.md": `# A\n\n${block("")}\n${block(" no-run: needs OPENAI_API_KEY")}\n${block(" no-check")}`,
    });
    const examples = await docExamples(dir);
    expect(examples.map((e) => [e.page, e.index, e.line, e.run, e.noRun])).toEqual([
      ["docs/a.md", 1, 3, true, undefined],
      ["docs/a.md", 2, 7, false, "needs OPENAI_API_KEY"],
    ]);
  });

  it("a bare no-run, or an info string it does not know, is refused with its page and line", async () => {
    const dir = await pages({
      "docs/a.md": `# A\n\n${block(" no-run")}\n${block(" no-run:")}\n${block(" norun")}`,
    });
    const error = await docExamples(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DocExampleError);
    const message = (error as Error).message;
    expect(message).toContain("docs/a.md:3: `ts no-run` says no reason");
    expect(message).toContain("docs/a.md:7: `ts no-run:` says no reason");
    expect(message).toContain("docs/a.md:11: unknown info string `ts norun`");
  });

  it("every example of this repository's pages that is not run says why", async () => {
    const examples = await docExamples(resolve(import.meta.dirname, "../.."));
    const notRun = examples.filter((e) => !e.run);
    for (const example of notRun) expect(example.noRun, `${example.page}:${example.line}`).toMatch(/\w/);
    // The ones that could run offline do (the observability page's "Turn it on" block among them).
    expect(
      examples.some((e) => e.run && e.page === "docs/observability.md" && e.code.includes("instrument()")),
    ).toBe(true);
  });
});
