import type { JSONSchema } from "../model/types.js";
import { jsonTypeOf, objectBranch, soleBranch, typesOf } from "./schema-walk.js";

const NUMERIC = /^\s*-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$/;

/**
 * Conservative, schema-directed coercion of model arguments, applied before validation.
 * Only unambiguous repairs: a numeric string where only a number fits, "true"/"false" where
 * only a boolean fits, a JSON string where only an object or array fits, and a single value
 * where an array is expected. Anything else is left for the validator to reject, so the
 * model hears about it instead of getting a silent guess (ajv's built-in coercion turns null
 * into 0 and "" into false — far too liberal for model output).
 *
 * @example
 * coerce({ n: "3" }, { type: "object", properties: { n: { type: "integer" } } }) // { n: 3 }
 */
export function coerce(value: unknown, schema: JSONSchema, root: JSONSchema = schema): unknown {
  const types = typesOf(schema, root);
  if (!types) return value;
  const actual = jsonTypeOf(value);
  if (types.has(actual) || (actual === "integer" && types.has("number"))) {
    return descend(value, actual, schema, root);
  }
  if (typeof value === "string") {
    const fromString = coerceString(value, types);
    if (fromString !== undefined) return descend(fromString, jsonTypeOf(fromString), schema, root);
  }
  if (types.has("array") && types.size === 1 && value !== undefined && value !== null) {
    return descend([value], "array", schema, root);
  }
  return value;
}

function coerceString(text: string, types: Set<string>): unknown {
  // A schema that also accepts strings means the string is already valid as it is.
  if (types.has("string")) return undefined;
  if ((types.has("number") || types.has("integer")) && NUMERIC.test(text)) {
    const n = Number(text);
    if (Number.isFinite(n) && (types.has("number") || Number.isInteger(n))) return n;
  }
  if (types.has("boolean") && (text === "true" || text === "false")) return text === "true";
  if (types.has("null") && text === "null") return null;
  if (types.has("object") || types.has("array")) {
    const trimmed = text.trim();
    if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
      try {
        const parsed: unknown = JSON.parse(trimmed);
        if (types.has(jsonTypeOf(parsed))) return parsed;
      } catch {
        // Not JSON: leave it for the validator to report.
      }
    }
  }
  return undefined;
}

function descend(value: unknown, actual: string, schema: JSONSchema, root: JSONSchema): unknown {
  if (actual === "object") {
    const branch = objectBranch(schema, root, value as object);
    if (!branch) return value;
    const properties = (branch.properties ?? {}) as Record<string, JSONSchema>;
    const extra =
      typeof branch.additionalProperties === "object"
        ? (branch.additionalProperties as JSONSchema)
        : undefined;
    let out: Record<string, unknown> | undefined;
    const record = value as Record<string, unknown>;
    for (const key in record) {
      if (!Object.hasOwn(record, key)) continue;
      const item = record[key];
      const itemSchema = Object.hasOwn(properties, key) ? properties[key] : extra;
      if (!itemSchema) continue;
      const coerced = coerce(item, itemSchema, root);
      if (coerced !== item) {
        out ??= { ...(value as Record<string, unknown>) };
        out[key] = coerced;
      }
    }
    return out ?? value;
  }
  if (actual === "array") {
    const branch = soleBranch(schema, root, "array");
    if (!branch) return value;
    const prefix = Array.isArray(branch.prefixItems) ? (branch.prefixItems as JSONSchema[]) : [];
    const items =
      typeof branch.items === "object" && !Array.isArray(branch.items)
        ? (branch.items as JSONSchema)
        : undefined;
    const list = value as unknown[];
    let out: unknown[] | undefined;
    list.forEach((item, i) => {
      const itemSchema = prefix[i] ?? items;
      if (!itemSchema) return;
      const coerced = coerce(item, itemSchema, root);
      if (coerced !== item) {
        out ??= [...list];
        out[i] = coerced;
      }
    });
    return out ?? value;
  }
  return value;
}
