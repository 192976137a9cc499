/**
 * Puts tree-sitter-bash's WebAssembly grammar (and its license) next to the built Bash parser.
 * The package is a build-time dependency only: what Quiver needs of it is this one file, and
 * installing it would bring a native addon, its install script and 20 MB to every user.
 */
import { copyFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
copyFileSync(
  require.resolve("tree-sitter-bash/tree-sitter-bash.wasm"),
  "dist/workspace/tree-sitter-bash.wasm",
);
copyFileSync(require.resolve("tree-sitter-bash/LICENSE"), "dist/workspace/tree-sitter-bash.LICENSE");
