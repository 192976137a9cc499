import { toStrictSchema } from "../model/schema-lowering.js";
import type { JSONSchema } from "../model/types.js";
import { deref, objectBranch, soleBranch, typesOf } from "./schema-walk.js";

export type StrictSchema = { ok: true; schema: JSONSchema } | { ok: false; reason: string };

/**
 * Rewrites a JSON Schema into OpenAI's strict shape (one implementation, shared with the
 * providers: `model/schema-lowering.ts`): every object closed, every property required,
 * optional ones nullable, narrowing keywords strict mode rejects (`default`, `minLength`…)
 * moved into the description. Records and other shapes strict mode cannot express are not
 * strict: the result says why, and the tool is sent non-strict.
 *
 * @example
 * toStrict({ type: "object", properties: { q: { type: "string" }, n: { type: "integer" } }, required: ["q"] })
 * // n becomes { type: ["integer", "null"] } and is required
 */
export function toStrict(schema: JSONSchema): StrictSchema {
  const lowered = toStrictSchema(schema);
  return "schema" in lowered ? { ok: true, schema: lowered.schema } : { ok: false, reason: lowered.reason };
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
  const branch = objectBranch(schema, root, value);
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
