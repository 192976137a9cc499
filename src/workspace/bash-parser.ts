import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import type { Node, Parser } from "web-tree-sitter";

export type { Node as SyntaxNode } from "web-tree-sitter";

/**
 * The shell's Bash parser: tree-sitter-bash's grammar run by web-tree-sitter, both WebAssembly
 * shipped in the package (web-tree-sitter's runtime in its own, the grammar beside this module),
 * so a packed install works and nothing is downloaded. Loaded on first use, once per process: `import()` and two small wasm
 * instantiations take ~20 ms, which a workspace without shell rules never pays.
 */
let loading: Promise<Parser> | undefined;
let ready: Parser | undefined;

/** Starts loading the parser (once); resolves to it, or rejects with why it cannot load. */
export function loadBashParser(): Promise<Parser> {
  loading ??= (async () => {
    const require = createRequire(import.meta.url);
    const { Parser, Language } = await import("web-tree-sitter");
    const runtime = require.resolve("web-tree-sitter/web-tree-sitter.wasm");
    await Parser.init({ locateFile: () => runtime });
    // The build puts tree-sitter-bash's grammar next to this module (scripts/copy-grammar.mjs):
    // its package, a build-time dependency, also carries a native addon nobody needs. Run from
    // the sources, the grammar is read from the package itself.
    const grammar = await readFile(new URL("./tree-sitter-bash.wasm", import.meta.url)).catch(() =>
      readFile(require.resolve("tree-sitter-bash/tree-sitter-bash.wasm")),
    );
    const language = await Language.load(new Uint8Array(grammar));
    const parser = new Parser();
    parser.setLanguage(language);
    ready = parser;
    return parser;
  })();
  return loading;
}

/** The parser if it has loaded, else `undefined` (callers that must decide now fail closed). */
export function loadedBashParser(): Parser | undefined {
  return ready;
}

/**
 * Parses `text` and hands the root to `use`, freeing the tree after (trees live in the wasm
 * heap, not the JS one). `undefined` when the parser is not loaded or gives up.
 */
export function withBashTree<T>(parser: Parser, text: string, use: (root: Node) => T): T | undefined {
  const tree = parser.parse(text);
  if (!tree) return undefined;
  try {
    return use(tree.rootNode);
  } finally {
    tree.delete();
  }
}
