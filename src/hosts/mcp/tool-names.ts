import { createHash } from "node:crypto";

const MAX_NAME = 64;

/**
 * The name a model sees for an MCP tool: `prefix__name` when a prefix is given. MCP allows
 * names providers reject (dots, slashes, up to 128 characters), so other characters become
 * `_`, and a name that is still too long keeps its start plus a short hash of the original,
 * which keeps it stable across listings and distinct from its neighbours.
 */
export function modelFacingName(mcpName: string, prefix?: string): string {
  const safe = mcpName.replace(/[^a-zA-Z0-9_-]/g, "_") || "tool";
  const name = prefix ? `${prefix}__${safe}` : safe;
  return name.length <= MAX_NAME ? name : withHash(name, mcpName);
}

/** `name` shortened to leave room for `_` and 8 hash characters of `original`. */
export function withHash(name: string, original: string): string {
  const hash = createHash("sha256").update(original).digest("hex").slice(0, 8);
  return `${name.slice(0, MAX_NAME - 9)}_${hash}`;
}
