// Text an MCP server wrote that a model will read outside a tool result: tool descriptions,
// titles, parameter descriptions. None of it goes between fence markers (it is the tool's
// own definition), so each piece is cleaned — invisible and control characters removed,
// chat-template tokens and framing tags rewritten visibly — and kept to a bounded length.

import { disarm } from "../../builtin-tools/fence.js";
import { detached } from "../../tool/render.js";

/** Longest tool description offered to a model; longer ones are cut with a note. */
export const MAX_DESCRIPTION_CHARS = 4_000;
/** Longest title, and longest description or title inside a tool's input schema. */
export const MAX_TITLE_CHARS = 200;
export const MAX_SCHEMA_TEXT_CHARS = 1_000;

/**
 * `text` cleaned by `disarm()` and cut to `max` characters (`…` marks the cut). Only the
 * first `4 * max` characters are ever looked at, so a megabyte description costs as little
 * as a short one.
 *
 * @example
 * cleanPeerText("Lists files.\u0007<|im_start|>system", 100) // → "Lists files.‹|im_start|›system"
 */
export function cleanPeerText(text: unknown, max: number): string {
  const raw = typeof text === "string" ? text : String(text ?? "");
  let clean = disarm(raw.length > 4 * max ? raw.slice(0, 4 * max) : raw);
  if (clean.length > max || raw.length > 4 * max) {
    clean = `${clean.slice(0, max - 1).replace(/[\ud800-\udbff]$/, "")}…`;
  }
  // Kept for as long as the listing or transcript is: it must not pin a megabyte original.
  return clean.length < raw.length ? detached(clean) : clean;
}

/** One line of cleaned text, for names and titles a message quotes. */
export function cleanPeerLine(text: unknown, max = MAX_TITLE_CHARS): string {
  return cleanPeerText(text, max).replace(/\s+/g, " ").trim();
}

/** Keywords whose string values are prose for the model, at any depth of a JSON Schema. */
const PROSE_KEYWORDS = new Set(["description", "title", "$comment"]);
/** Keywords whose values are data (validated against, or sent back), never cleaned. */
const DATA_KEYWORDS = new Set(["enum", "const", "default", "examples", "required"]);

/**
 * A copy of `schema` with its descriptions and titles cleaned and bounded and `$comment`s
 * dropped; everything that validation depends on is left as the server wrote it. A property
 * name or enum value that carries control characters or chat-template tokens cannot be
 * cleaned without breaking the tool: that throws, naming it.
 */
export function cleanSchemaText(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(cleanSchemaText);
  if (typeof schema !== "object" || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "$comment") continue;
    if (PROSE_KEYWORDS.has(key) && typeof value === "string") {
      out[key] = cleanPeerText(value, MAX_SCHEMA_TEXT_CHARS);
    } else if (DATA_KEYWORDS.has(key)) {
      if (key === "enum" || key === "const") checkValues(key, value);
      out[key] = value;
    } else if (isSchemaMap(key) && typeof value === "object" && value !== null && !Array.isArray(value)) {
      // Property names are data: a `description` property is not a description keyword.
      out[key] = Object.fromEntries(
        Object.entries(value).map(([name, sub]) => {
          if (isHostileName(name)) throw new Error(`the property name ${quote(name)} ${HOSTILE}`);
          return [name, cleanSchemaText(sub)];
        }),
      );
    } else {
      out[key] = cleanSchemaText(value);
    }
  }
  return out;
}

const HOSTILE = "holds control characters or chat-template tokens";

function checkValues(key: string, value: unknown): void {
  for (const item of Array.isArray(value) ? value : [value]) {
    if (typeof item === "string" && isHostileName(item)) {
      throw new Error(`the ${key} value ${quote(item)} ${HOSTILE}`);
    }
  }
}

/** A hostile name, quoted safely for an error message. */
function quote(name: string): string {
  return JSON.stringify(cleanPeerLine(name, 60));
}

function isSchemaMap(key: string): boolean {
  return (
    key === "properties" ||
    key === "patternProperties" ||
    key === "$defs" ||
    key === "definitions" ||
    key === "dependentSchemas"
  );
}

/**
 * Whether a name the model sees or sends back (a property name, an enum value) carries
 * something `disarm()` would change: such a name cannot be cleaned without breaking the
 * tool, so the tool is not offered.
 */
export function isHostileName(name: string): boolean {
  return disarm(name) !== name;
}
