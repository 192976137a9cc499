import type { JSONSchema } from "../model/types.js";
import { deref, soleBranch, typesOf } from "./schema-walk.js";

export type StrictSchema = { ok: true; schema: JSONSchema } | { ok: false; reason: string };

/**
 * Rewrites a JSON Schema into OpenAI's strict shape: every object closed
 * (`additionalProperties: false`), every property required, optional ones made nullable,
 * `default`s moved into the description (strict mode rejects the keyword). Records
 * (open-ended keys) cannot be strict: the result says why, and the tool is sent non-strict.
 *
 * @example
 * toStrict({ type: "object", properties: { q: { type: "string" }, n: { type: "integer" } }, required: ["q"] })
 * // n becomes { anyOf: [{ type: "integer" }, { type: "null" }] } and is required
 */
export function toStrict(schema: JSONSchema): StrictSchema {
  try {
    return { ok: true, schema: rewrite(schema, []) };
  } catch (error) {
    if (error instanceof NotStrict) return { ok: false, reason: error.message };
    throw error;
  }
}

class NotStrict extends Error {}

function rewrite(node: JSONSchema, path: string[]): JSONSchema {
  const out: JSONSchema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === "default") continue;
    if (key === "properties") {
      const properties: Record<string, JSONSchema> = {};
      const requiredSet = new Set((node.required as string[] | undefined) ?? []);
      for (const [name, child] of Object.entries(value as Record<string, JSONSchema>)) {
        const strictChild = rewrite(child, [...path, name]);
        properties[name] = requiredSet.has(name) ? strictChild : nullable(strictChild);
      }
      out.properties = properties;
      out.required = Object.keys(properties);
      continue;
    }
    if (key === "required") continue;
    if (key === "additionalProperties" && value !== false) {
      throw new NotStrict(`${where(path)} accepts arbitrary keys (a record)`);
    }
    if (key === "patternProperties" || key === "propertyNames") {
      throw new NotStrict(`${where(path)} accepts arbitrary keys (a record)`);
    }
    if (key === "items" && typeof value === "object" && value !== null && !Array.isArray(value)) {
      out.items = rewrite(value as JSONSchema, [...path, "[]"]);
      continue;
    }
    if ((key === "anyOf" || key === "oneOf" || key === "allOf") && Array.isArray(value)) {
      // Strict mode supports anyOf only; oneOf of disjoint object shapes means the same there.
      out[key === "oneOf" ? "anyOf" : key] = (value as JSONSchema[]).map((b) => rewrite(b, path));
      continue;
    }
    if ((key === "$defs" || key === "definitions") && typeof value === "object" && value !== null) {
      out[key] = Object.fromEntries(
        Object.entries(value as Record<string, JSONSchema>).map(([name, def]) => [
          name,
          rewrite(def, [name]),
        ]),
      );
      continue;
    }
    out[key] = value;
  }
  const isObject = out.type === "object" || (out.properties !== undefined && out.type === undefined);
  if (isObject) {
    out.properties ??= {};
    out.required ??= [];
    out.additionalProperties = false;
  }
  if (node.default !== undefined) {
    const note = `Default: ${JSON.stringify(node.default)}.`;
    out.description = typeof out.description === "string" ? `${out.description} ${note}` : note;
  }
  return out;
}

function nullable(schema: JSONSchema): JSONSchema {
  if (typeof schema.type === "string" && !schema.enum && !schema.const && !schema.anyOf) {
    return schema.type === "null" ? schema : { ...schema, type: [schema.type, "null"] };
  }
  if (Array.isArray(schema.type) && !schema.enum) {
    return schema.type.includes("null") ? schema : { ...schema, type: [...schema.type, "null"] };
  }
  const { description, ...rest } = schema;
  const withNull: JSONSchema = { anyOf: [rest, { type: "null" }] };
  if (description !== undefined) withNull.description = description;
  return withNull;
}

function where(path: string[]): string {
  return path.length ? `"${path.join(".")}"` : "the top-level object";
}

/**
 * Undoes strict mode's "optional means nullable": a `null` for a key that was optional in
 * the original schema, and that the original does not allow to be null, means "absent".
 */
export function nullsToAbsent(value: unknown, schema: JSONSchema, root: JSONSchema = schema): unknown {
  if (Array.isArray(value)) {
    const branch = soleBranch(schema, root, "array");
    const items = branch && typeof branch.items === "object" ? (branch.items as JSONSchema) : undefined;
    if (!items) return value;
    let out: unknown[] | undefined;
    value.forEach((item, i) => {
      const mapped = nullsToAbsent(item, items, root);
      if (mapped === item) return;
      out ??= [...value];
      out[i] = mapped;
    });
    return out ?? value;
  }
  if (typeof value !== "object" || value === null) return value;
  const branch = soleBranch(schema, root, "object");
  if (!branch) return value;
  const properties = (branch.properties ?? {}) as Record<string, JSONSchema>;
  const required = new Set((branch.required as string[] | undefined) ?? []);
  let out: Record<string, unknown> | undefined;
  for (const [key, item] of Object.entries(value)) {
    const propSchema = properties[key];
    if (!propSchema) continue;
    if (item === null && !required.has(key) && !typesOf(propSchema, root)?.has("null")) {
      out ??= { ...value };
      delete out[key];
      continue;
    }
    const mapped = nullsToAbsent(item, deref(propSchema, root), root);
    if (mapped === item) continue;
    out ??= { ...value };
    out[key] = mapped;
  }
  return out ?? value;
}
