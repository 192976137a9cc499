import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** One file the page loads from `/assets/…`, named by a digest of its contents. */
export type PageAsset = { path: string; body: string; type: string };

/** The page's scripts from the package's own dependencies, and its icon. */
export type PageAssets = {
  /** `/assets/marked-<digest>.js`, or undefined when the package could not be read. */
  marked: string | undefined;
  /** `/assets/purify-<digest>.js`, or undefined when the package could not be read. */
  purify: string | undefined;
  /** Every servable file by its path (the icon included). */
  files: ReadonlyMap<string, PageAsset>;
};

/** The page's icon: an arrow in a rounded square, in the page's accent colour. */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#2451c7"/><path d="M8 24 23 9M15 9h8v8" fill="none" stroke="#fff" stroke-width="3" stroke-linecap="round" stroke-linejoin="round"/></svg>`;

/** Browser builds the page uses: `marked`'s UMD build and DOMPurify's minified one. */
const SOURCES = [
  { key: "marked", name: "marked", file: "lib/marked.umd.js" },
  { key: "purify", name: "dompurify", file: "dist/purify.min.js" },
] as const;

let loading: Promise<PageAssets> | undefined;

/**
 * Reads the page's scripts from the installed `marked` and `dompurify` packages (the package's
 * dependencies, so they sit beside it), once per process. Their URLs carry a digest of the
 * contents, so a browser may keep them for a year and an upgrade still reaches it.
 *
 * A package that cannot be read (a runtime without a file system, a broken install) leaves its
 * entry undefined: the page then shows the model's text as plain text, never unsanitized HTML.
 *
 * @example
 * const assets = await pageAssets();
 * assets.marked; // "/assets/marked-3f2a9c1d7e6b.js"
 */
export function pageAssets(): Promise<PageAssets> {
  loading ??= load();
  return loading;
}

async function load(): Promise<PageAssets> {
  const files = new Map<string, PageAsset>();
  const found: Record<string, string | undefined> = {};
  const icon: PageAsset = { path: "/favicon.svg", body: FAVICON_SVG, type: "image/svg+xml" };
  files.set(icon.path, icon);
  let require: NodeRequire | undefined;
  try {
    require = createRequire(import.meta.url);
  } catch {
    require = undefined;
  }
  for (const source of SOURCES) {
    try {
      const root = await packageRoot(require!.resolve(source.name), source.name);
      const text = await readFile(join(root, source.file), "utf8");
      // A source map the package ships beside it is not served: drop the comment that asks for it.
      const body = text.replace(/\n\/\/# sourceMappingURL=\S+\s*$/, "\n");
      const digest = createHash("sha256").update(body).digest("hex").slice(0, 12);
      const path = `/assets/${source.key}-${digest}.js`;
      files.set(path, { path, body, type: "text/javascript; charset=utf-8" });
      found[source.key] = path;
    } catch {
      found[source.key] = undefined;
    }
  }
  return { marked: found.marked, purify: found.purify, files };
}

/**
 * The folder of package `name`, found from its entry point: a package's exports need not list
 * its browser build or even its package.json (DOMPurify's list neither), so neither is resolved.
 */
async function packageRoot(entry: string, name: string): Promise<string> {
  for (let dir = dirname(entry); ; ) {
    try {
      const manifest = JSON.parse(await readFile(join(dir, "package.json"), "utf8")) as { name?: string };
      if (manifest.name === name) return dir;
    } catch {
      // No manifest here (or a partial one): keep going up.
    }
    const up = dirname(dir);
    if (up === dir) throw new Error(`cannot find the folder of ${name}`);
    dir = up;
  }
}
