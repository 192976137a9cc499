import { lstat, readlink, realpath } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "../errors.js";

/** Where a model-given path lands: the real absolute path and its path relative to the root. */
export type ResolvedPath = {
  /** Real absolute path (symbolic links resolved as far as they exist). */
  real: string;
  /** Relative to the real root, with `/` separators; `.` for the root itself. */
  relative: string;
  /** The real root it was checked against. */
  root: string;
};

/** Links followed before giving up, as the kernel does (SYMLOOP_MAX is 40 on Linux). */
const MAX_LINKS = 40;

/**
 * The real path of the workspace root. Resolved on every call rather than once, so a root that
 * is created, moved or re-linked after `workspace()` is seen as it is now.
 */
export async function realRoot(root: string): Promise<string> {
  try {
    return await realpath(root);
  } catch (error) {
    throw new ToolError(`the workspace root ${root} is not accessible (${codeOf(error)})`, {
      hint: "The operator must create the workspace directory; nothing can be done from inside it.",
    });
  }
}

/**
 * Resolves a model-given path inside the workspace, refusing anything that lands outside:
 * `..`, absolute paths elsewhere, symbolic links (dangling ones too, whose target a write would
 * create) and prefix look-alikes (`/root-evil` next to `/root`). The deepest existing ancestor is
 * resolved with `lstat` + `realpath`, links are followed by hand where `realpath` cannot (a
 * dangling link), and the result is compared with `path.relative` — never with a string prefix.
 *
 * This guards against accidents by a model; it is not a sandbox (see the docs): another process
 * can swap a directory for a link between this check and the use.
 */
export async function resolveInside(rootPath: string, given: string): Promise<ResolvedPath> {
  if (typeof given !== "string" || given.trim() === "") {
    throw new ToolError("the path is empty", { hint: "Give a path relative to the workspace root." });
  }
  if (given.includes("\0")) throw new ToolError(`the path ${JSON.stringify(given)} contains a NUL byte`);
  const root = await realRoot(rootPath);
  const lexicalRoot = path.resolve(rootPath);
  let candidate: string;
  if (path.isAbsolute(given)) {
    // An absolute path is accepted only when it names something under the root, spelled either
    // with the root as configured or with its real path.
    const normal = path.resolve(given);
    if (isWithin(root, normal)) candidate = normal;
    else if (isWithin(lexicalRoot, normal)) candidate = path.join(root, path.relative(lexicalRoot, normal));
    else throw outside(given);
  } else {
    candidate = path.resolve(root, given);
    if (!isWithin(root, candidate)) throw outside(given);
  }
  const real = await realLocation(candidate, 0, given);
  if (!isWithin(root, real)) throw outside(given, real);
  return { real, relative: toPosix(path.relative(root, real)) || ".", root };
}

/** True when `target` is `base` or below it (`/root-evil` is not below `/root`). */
export function isWithin(base: string, target: string): boolean {
  const rel = path.relative(base, target);
  return rel === "" || (!rel.startsWith(`..${path.sep}`) && rel !== ".." && !path.isAbsolute(rel));
}

/** Where an operation on `p` would really land, following every link that exists. */
async function realLocation(p: string, links: number, given: string): Promise<string> {
  if (links > MAX_LINKS) throw new ToolError(`too many levels of symbolic links in ${given}`);
  let stats: Awaited<ReturnType<typeof lstat>>;
  try {
    stats = await lstat(p);
  } catch (error) {
    if (codeOf(error) !== "ENOENT" && codeOf(error) !== "ENOTDIR") throw accessError(given, error);
    const parent = path.dirname(p);
    if (parent === p) return p;
    return path.join(await realLocation(parent, links, given), path.basename(p));
  }
  if (!stats.isSymbolicLink()) {
    try {
      return await realpath(p);
    } catch (error) {
      throw accessError(given, error);
    }
  }
  try {
    return await realpath(p);
  } catch {
    // A dangling link: `writeFile` would follow it and create its target, wherever that is.
    const parent = await realLocation(path.dirname(p), links, given);
    const target = await readlink(p);
    return realLocation(path.resolve(parent, target), links + 1, given);
  }
}

function outside(given: string, real?: string): ToolError {
  const via = real ? ` (it resolves to ${real})` : "";
  return new ToolError(`${given} is outside the workspace${via}`, {
    hint: "Use a path relative to the workspace root; links that lead out of it are not followed.",
  });
}

function accessError(given: string, error: unknown): ToolError {
  return new ToolError(`cannot access ${given} (${codeOf(error)})`);
}

export function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : error instanceof Error ? error.message : String(error);
}

export function toPosix(p: string): string {
  return path.sep === "/" ? p : p.split(path.sep).join("/");
}
