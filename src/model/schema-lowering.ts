/**
 * Lowering a tool's canonical JSON Schema to what an API accepts. Nothing here throws: a
 * schema an API cannot express is simplified for that one tool and the caller warns.
 */
import type { JSONSchema } from "./types.js";

type Schema = { [key: string]: unknown };

const isSchema = (value: unknown): value is Schema =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/**
 * Function-calling APIs want an object at the root of a tool's parameters. A root that is
 * already an object passes through (with `type: "object"` added when only implied). A root
 * `anyOf`/`oneOf` of objects is merged into one object whose properties are the union and
 * whose required keys are those every variant requires: the documented simplification. The
 * tool still validates against its real schema, so a wrong guess is an ordinary
 * invalid-arguments result, not a crash.
 */
export function objectRootSchema(schema: JSONSchema): { schema: JSONSchema; simplified?: string } {
  const { $schema: _ignored, ...rest } = schema;
  if (rest.type === "object") return { schema: rest };
  if (rest.type === undefined && isSchema(rest.properties)) return { schema: { ...rest, type: "object" } };
  const variants = (rest.anyOf ?? rest.oneOf) as unknown;
  if (Array.isArray(variants) && variants.length > 0 && variants.every(isSchema)) {
    const properties: Schema = {};
    let required: string[] | undefined;
    for (const variant of variants) {
      for (const [key, value] of Object.entries(isSchema(variant.properties) ? variant.properties : {})) {
        if (!(key in properties)) properties[key] = value;
      }
      const own = Array.isArray(variant.required) ? (variant.required as string[]) : [];
      required = required === undefined ? own : required.filter((key) => own.includes(key));
    }
    const merged: Schema = { type: "object", properties };
    if (required && required.length > 0) merged.required = required;
    if (typeof rest.description === "string") merged.description = rest.description;
    if (isSchema(rest.$defs)) merged.$defs = rest.$defs;
    return { schema: merged, simplified: "its root anyOf/oneOf was merged into one object" };
  }
  return {
    schema: { type: "object", properties: {} },
    simplified: "its parameters are not an object; the model sees an empty parameter list",
  };
}

/** Keywords OpenAI strict mode rejects but that only narrow a value: kept as a note instead. */
const NOTE_KEYWORDS = ["minLength", "maxLength", "minProperties", "maxProperties", "uniqueItems", "default"];
/** Keywords strict mode cannot express at all: the tool is sent non-strict. */
const UNSUPPORTED = [
  "allOf",
  "not",
  "if",
  "then",
  "else",
  "patternProperties",
  "dependentRequired",
  "dependentSchemas",
  "unevaluatedProperties",
  "prefixItems",
  "propertyNames",
];

/**
 * The OpenAI strict form of a tool schema: every object closed (`additionalProperties:
 * false`), every property required, formerly optional ones nullable, `default` and other
 * unsupported narrowing keywords moved into the description. Idempotent. Returns the reason
 * instead when the schema cannot be strict (records, `allOf`, tuples…): the caller then
 * sends the tool non-strict and warns. The tool layer maps the nulls back to "absent".
 *
 * @example
 * toStrictSchema({ type: "object", properties: { a: { type: "string" } } })
 * // → { schema: { type: "object", properties: { a: { type: ["string", "null"] } },
 * //     required: ["a"], additionalProperties: false } }
 */
export function toStrictSchema(schema: JSONSchema): StrictForm {
  // A tool's schema is the same object on every request of a run (and of every run of its
  // agent): lowered once, not once per request.
  const known = strictForms.get(schema);
  if (known) return known;
  const form = lowerStrict(schema);
  strictForms.set(schema, form);
  return form;
}

type StrictForm = { schema: JSONSchema } | { reason: string };

const strictForms = new WeakMap<JSONSchema, StrictForm>();

function lowerStrict(schema: JSONSchema): StrictForm {
  const root = objectRootSchema(schema);
  if (root.simplified) return { reason: root.simplified };
  try {
    return { schema: strictNode(root.schema, "") };
  } catch (error) {
    if (error instanceof NotStrict) return { reason: error.message };
    throw error;
  }
}

class NotStrict extends Error {}

function strictNode(node: Schema, path: string): Schema {
  const where = path === "" ? "the root" : path;
  for (const keyword of UNSUPPORTED) {
    if (keyword in node) throw new NotStrict(`\`${keyword}\` at ${where} has no strict form`);
  }
  const out: Schema = {};
  const notes: string[] = [];
  for (const [key, value] of Object.entries(node)) {
    if (key === "$schema") continue;
    if (NOTE_KEYWORDS.includes(key)) notes.push(`${key}: ${JSON.stringify(value)}`);
    else out[key] = value;
  }
  if (notes.length > 0) {
    const description = typeof out.description === "string" ? `${out.description} ` : "";
    out.description = `${description}(${notes.join(", ")})`;
  }
  if (isSchema(node.properties) || node.type === "object") {
    const extra = node.additionalProperties;
    if (extra !== undefined && extra !== false) {
      throw new NotStrict(`${where} is a record (free-form keys), which strict mode cannot express`);
    }
    const properties = isSchema(node.properties) ? node.properties : {};
    const required = Array.isArray(node.required) ? (node.required as string[]) : [];
    const lowered: Schema = {};
    for (const [key, value] of Object.entries(properties)) {
      if (!isSchema(value)) throw new NotStrict(`property ${key} at ${where} is not a schema`);
      const strict = strictNode(value, path === "" ? key : `${path}.${key}`);
      lowered[key] = required.includes(key) ? strict : nullable(strict);
    }
    out.properties = lowered;
    out.required = Object.keys(lowered);
    out.additionalProperties = false;
    if (out.type === undefined) out.type = "object";
  }
  if (isSchema(node.items)) out.items = strictNode(node.items, `${path}[]`);
  else if (Array.isArray(node.items))
    throw new NotStrict(`${where} is a tuple, which strict mode cannot express`);
  for (const key of ["anyOf", "oneOf"] as const) {
    const variants = node[key];
    if (!Array.isArray(variants)) continue;
    // oneOf has no strict form; anyOf accepts every value oneOf does, and the tool still
    // validates against its real schema.
    delete out.oneOf;
    out.anyOf = variants.map((variant, i) => {
      if (!isSchema(variant)) throw new NotStrict(`${key} at ${where} holds a non-schema`);
      return strictNode(variant, `${path}|${i}`);
    });
  }
  for (const defsKey of ["$defs", "definitions"] as const) {
    const defs = node[defsKey];
    if (!isSchema(defs)) continue;
    const lowered: Schema = {};
    for (const [key, value] of Object.entries(defs)) {
      if (isSchema(value)) lowered[key] = strictNode(value, `${defsKey}.${key}`);
    }
    out[defsKey] = lowered;
  }
  return out;
}

/** Optional → nullable: `type: ["string", "null"]` where possible, else `anyOf [X, null]`. */
function nullable(schema: Schema): Schema {
  const type = schema.type;
  if (type === "null") return schema;
  if (Array.isArray(type)) return type.includes("null") ? schema : { ...schema, type: [...type, "null"] };
  if (typeof type === "string" && schema.enum === undefined && schema.const === undefined) {
    return { ...schema, type: [type, "null"] };
  }
  if (Array.isArray(schema.anyOf)) {
    const hasNull = schema.anyOf.some((v) => isSchema(v) && v.type === "null");
    return hasNull ? schema : { ...schema, anyOf: [...schema.anyOf, { type: "null" }] };
  }
  return { anyOf: [schema, { type: "null" }] };
}
