import picomatch from "picomatch";
import { ToolError } from "../errors.js";
import { SKIPPED_DIRECTORIES } from "./walk.js";

/** A glob matcher over root-relative paths; a pattern without `/` matches a file name at any depth (as `rg -g` does). */
export function globMatcher(glob: string | undefined): ((relative: string) => boolean) | undefined {
  if (glob === undefined || glob.trim() === "") return undefined;
  try {
    return picomatch(glob, { dot: true, basename: !glob.includes("/") });
  } catch (error) {
    throw new ToolError(`invalid glob ${JSON.stringify(glob)}: ${(error as Error).message}`);
  }
}

/** Whether a path or glob names `.git/` or `node_modules/` itself: then the walk goes in. */
export function asksForSkipped(...texts: Array<string | undefined>): boolean {
  return texts.some((text) => text?.split(/[\\/]/).some((part) => SKIPPED_DIRECTORIES.has(part)));
}
