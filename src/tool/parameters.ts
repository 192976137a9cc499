import type { StandardJSONSchemaV1, StandardSchemaV1 } from "@standard-schema/spec";
import type { ArgumentIssue } from "../errors.js";
import { UserError } from "../errors.js";
import type { JSONSchema } from "../model/types.js";
import { compileJsonSchema } from "./ajv.js";
import { isTypedJsonSchema, type TypedJsonSchema } from "./json-schema.js";

/** What `parameters` accepts: Zod 4, any Standard Schema that emits JSON Schema, or JSON Schema. */
export type ToolParameters =
  | (StandardSchemaV1 & StandardJSONSchemaV1)
  | StandardSchemaV1
  | TypedJsonSchema<any>
  | JSONSchema;

/** The argument type a `parameters` value describes. */
export type InferArgs<P> =
  P extends StandardSchemaV1<any, infer Out>
    ? Out
    : P extends TypedJsonSchema<infer T>
      ? T
      : Record<string, any>;

export type Validation = { ok: true; value: unknown } | { ok: false; issues: ArgumentIssue[] };

/** The one canonical form of a tool's parameters: a JSON Schema and a validator for it. */
export interface ParameterSchema {
  readonly jsonSchema: JSONSchema;
  validate(value: unknown): Validation | Promise<Validation>;
}

function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  return typeof value === "object" && value !== null && "~standard" in value;
}

/** Turns any accepted `parameters` value into its canonical JSON Schema and validator. */
export function toParameterSchema(parameters: ToolParameters, toolName: string): ParameterSchema {
  if (parameters === undefined || parameters === null || typeof parameters !== "object") {
    throw new UserError(
      `tool "${toolName}": parameters must be a schema for the arguments object, e.g. z.object({ city: z.string() }) ` +
        `(got ${parameters === null ? "null" : typeof parameters})`,
    );
  }
  if (isStandardSchema(parameters)) return fromStandardSchema(parameters, toolName);
  if (isZod3(parameters)) throw new UserError(zod3Message(toolName));
  const schema = isTypedJsonSchema(parameters) ? parameters.jsonSchema : (parameters as JSONSchema);
  const field = Object.entries(schema).find(([, value]) => isStandardSchema(value) || isZod3(value));
  if (field) {
    throw new UserError(
      `tool "${toolName}": parameters is a plain object of schema fields ("${field[0]}": …); ` +
        `wrap it in z.object({ ... }) so it describes the arguments object`,
    );
  }
  return fromJsonSchema(schema, toolName);
}

/** Zod 3 (before 3.24 it has no `~standard`; after, it cannot emit JSON Schema). */
function isZod3(value: unknown): boolean {
  return (
    typeof value === "object" &&
    value !== null &&
    "_def" in value &&
    typeof (value as { safeParse?: unknown }).safeParse === "function" &&
    !("_zod" in value)
  );
}

function zod3Message(toolName: string, schema?: unknown): string {
  // zod 3.25's "zod/v4" is an early Zod 4 core: it has `_zod` but no Standard JSON Schema.
  const version = (schema as { _zod?: { version?: { major?: number; minor?: number } } } | undefined)?._zod
    ?.version;
  const what =
    version?.major !== undefined
      ? `an early Zod 4 core (${version.major}.${version.minor ?? 0}, as zod 3.25's "zod/v4" is), which cannot emit JSON Schema`
      : "a Zod 3 schema, which cannot emit JSON Schema";
  return `tool "${toolName}": its parameters are ${what}. Install zod 4.6 or newer (npm install zod@^4.6) and import { z } from "zod"`;
}

/** Names a top-level JSON Schema that is not an object, with the fix. */
function notAnObject(schema: JSONSchema, toolName: string, zod: boolean): string | undefined {
  if (schema.type === "object") return undefined;
  const what =
    schema.type !== undefined
      ? `type "${Array.isArray(schema.type) ? schema.type.join(" | ") : String(schema.type)}"`
      : schema.anyOf || schema.oneOf
        ? "a union"
        : "something other than an object";
  const fix = zod
    ? "wrap it: z.object({ value: <your schema> })"
    : 'give it { type: "object", properties: { ... } }';
  return `tool "${toolName}": parameters must describe an object (the arguments a model sends are an object), but it describes ${what}; ${fix}`;
}

function fromStandardSchema(schema: StandardSchemaV1, toolName: string): ParameterSchema {
  const props = schema["~standard"] as StandardSchemaV1.Props & Partial<StandardJSONSchemaV1.Props>;
  if (!props.jsonSchema) {
    if (props.vendor === "zod") throw new UserError(zod3Message(toolName, schema));
    throw new UserError(
      `tool "${toolName}": its ${props.vendor} schema cannot emit JSON Schema (Standard JSON Schema). ` +
        "Use a library that implements it (Zod 4, Valibot with @valibot/to-json-schema, ArkType) or pass jsonSchema({...}).",
    );
  }
  let jsonSchema: JSONSchema;
  try {
    jsonSchema = props.jsonSchema.input({ target: "draft-2020-12" });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // A model sends JSON: dates and bigints arrive as strings, so the schema must take strings.
    const way = /\bDate\b/.test(message)
      ? ": a model sends dates as text, so take a string (z.iso.datetime() or z.iso.date()) and make the Date in execute"
      : /\bBigInt\b/i.test(message)
        ? ": a model sends numbers as JSON, so take z.number() or a digit string (z.string().regex(/^\\d+$/)) and make the BigInt in execute"
        : "";
    throw new UserError(
      `tool "${toolName}": its parameters cannot be expressed as JSON Schema: ${message}${way}`,
      {
        cause: error,
      },
    );
  }
  const { $schema: _dropped, ...rest } = jsonSchema;
  const problem = notAnObject(rest, toolName, props.vendor === "zod");
  if (problem) throw new UserError(problem);
  return {
    jsonSchema: rest,
    validate(value) {
      const outcome = props.validate(value);
      return outcome instanceof Promise ? outcome.then(fromStandardResult) : fromStandardResult(outcome);
    },
  };
}

function fromStandardResult(result: StandardSchemaV1.Result<unknown>): Validation {
  if (!result.issues) return { ok: true, value: result.value };
  return {
    ok: false,
    issues: result.issues.map((issue) => ({
      path: (issue.path ?? [])
        .map((segment) => (typeof segment === "object" ? String(segment.key) : String(segment)))
        .join("."),
      message: issue.message,
    })),
  };
}

function fromJsonSchema(schema: JSONSchema, toolName: string): ParameterSchema {
  if (schema.type !== undefined && schema.type !== "object") {
    throw new UserError(notAnObject(schema, toolName, false)!);
  }
  const stray = propertiesMap(schema);
  if (stray) {
    throw new UserError(
      `tool "${toolName}": parameters look like a map of properties (${stray.map((key) => `"${key}"`).join(", ")} ${stray.length === 1 ? "is not a JSON Schema keyword" : "are not JSON Schema keywords"}); ` +
        `wrap them: { type: "object", properties: { ${stray[0]}: … }, required: [${JSON.stringify(stray[0])}] }`,
    );
  }
  const canonical: JSONSchema = { type: "object", properties: {}, ...schema };
  // The common mistakes are caught here, at definition time where they were made, without
  // loading ajv (~100 ms): importing a module that defines JSON-Schema tools stays cheap.
  // ajv compiles the schema on the first call and reports anything subtler then.
  const mistake = structuralMistake(canonical, "") ?? brokenRef(canonical);
  if (mistake) throw new UserError(`tool "${toolName}": invalid JSON Schema: ${mistake}`);
  let validator: ReturnType<typeof compileJsonSchema> | undefined;
  // Defaults apply as with Zod: ajv writes them into the value it validates, so it gets a copy
  // (the call's own arguments stay what the model sent). Found with the compile, on first use.
  let defaults = false;
  const compiled = () => {
    if (!validator) {
      defaults = JSON.stringify(canonical).includes('"default"');
      try {
        validator = compileJsonSchema(canonical, { useDefaults: defaults });
      } catch (error) {
        throw new UserError(`tool "${toolName}": invalid JSON Schema: ${(error as Error).message}`);
      }
    }
    return validator;
  };
  const { $schema: _dropped, ...wire } = canonical;
  return {
    jsonSchema: wire,
    validate(given) {
      const check = compiled();
      const value = defaults ? structuredClone(given) : given;
      if (check(value)) return { ok: true, value };
      return { ok: false, issues: (check.errors ?? []).map(fromAjvError) };
    },
  };
}

function fromAjvError(error: {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, any>;
}): ArgumentIssue {
  const path = error.instancePath.split("/").filter(Boolean).map(decodePointer);
  if (error.keyword === "required") path.push(String(error.params.missingProperty));
  if (error.keyword === "additionalProperties") {
    return { path: path.join("."), message: `unknown property "${error.params.additionalProperty}"` };
  }
  if (error.keyword === "required") return { path: path.join("."), message: "is required" };
  if (error.keyword === "enum") {
    return { path: path.join("."), message: `must be one of ${JSON.stringify(error.params.allowedValues)}` };
  }
  return { path: path.join("."), message: error.message ?? error.keyword };
}

function decodePointer(segment: string): string {
  return segment.replace(/~1/g, "/").replace(/~0/g, "~");
}

const JSON_TYPES = new Set(["object", "array", "string", "number", "integer", "boolean", "null"]);

/** The keywords a schema for an arguments object may have at its top (JSON Schema 2020-12 and draft 7). */
const TOP_KEYWORDS = new Set([
  "$schema",
  "$id",
  "$ref",
  "$defs",
  "$comment",
  "$anchor",
  "$dynamicRef",
  "$dynamicAnchor",
  "$vocabulary",
  "definitions",
  "type",
  "properties",
  "required",
  "additionalProperties",
  "patternProperties",
  "propertyNames",
  "minProperties",
  "maxProperties",
  "dependentRequired",
  "dependentSchemas",
  "dependencies",
  "unevaluatedProperties",
  "allOf",
  "anyOf",
  "oneOf",
  "not",
  "if",
  "then",
  "else",
  "title",
  "description",
  "default",
  "examples",
  "deprecated",
  "readOnly",
  "writeOnly",
  "enum",
  "const",
  "nullable",
  "discriminator",
]);

/**
 * The top-level keys of a hand-written schema that are property definitions put where the
 * schema belongs (`{ city: { type: "string" } }`, `{ city: "string" }`), or undefined. Such a
 * schema is an object with no properties to a model, which then calls the tool with `{}`.
 */
function propertiesMap(schema: JSONSchema): string[] | undefined {
  const stray = Object.keys(schema).filter((key) => !TOP_KEYWORDS.has(key) && !key.startsWith("x-"));
  if (stray.length === 0) return undefined;
  const looksLikeProperty = (value: unknown) =>
    (typeof value === "string" && JSON_TYPES.has(value)) ||
    (typeof value === "object" &&
      value !== null &&
      !Array.isArray(value) &&
      ["type", "enum", "anyOf", "oneOf", "$ref", "properties", "items"].some((k) => k in value));
  return stray.every((key) => looksLikeProperty(schema[key])) ? stray : undefined;
}

/** The mistakes people make in hand-written schemas: unknown types and malformed keywords. */
function structuralMistake(node: unknown, path: string): string | undefined {
  if (typeof node === "boolean") return undefined;
  if (typeof node !== "object" || node === null || Array.isArray(node))
    return `${path || "the schema"} must be an object`;
  const schema = node as JSONSchema;
  const at = (key: string) => (path ? `${path}.${key}` : key);
  const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type];
  for (const type of types) {
    if (typeof type !== "string" || !JSON_TYPES.has(type))
      return `${at("type")}: unknown type ${JSON.stringify(type)}`;
  }
  if (
    schema.required !== undefined &&
    (!Array.isArray(schema.required) || schema.required.some((r) => typeof r !== "string"))
  ) {
    return `${at("required")} must be an array of property names`;
  }
  for (const key of ["properties", "$defs", "definitions", "patternProperties"]) {
    const group = schema[key];
    if (group === undefined) continue;
    if (typeof group !== "object" || group === null || Array.isArray(group))
      return `${at(key)} must be an object`;
    for (const [name, child] of Object.entries(group)) {
      const found = structuralMistake(child, `${at(key)}.${name}`);
      if (found) return found;
    }
  }
  for (const key of ["items", "additionalProperties", "not", "contains", "propertyNames"]) {
    if (schema[key] === undefined) continue;
    const found = structuralMistake(schema[key], at(key));
    if (found) return found;
  }
  for (const key of ["anyOf", "oneOf", "allOf", "prefixItems"]) {
    const list = schema[key];
    if (list === undefined) continue;
    if (!Array.isArray(list)) return `${at(key)} must be an array`;
    for (const [i, child] of list.entries()) {
      const found = structuralMistake(child, `${at(key)}[${i}]`);
      if (found) return found;
    }
  }
  return undefined;
}

/** A local `$ref` that points at nothing: ajv would only say so on the first call. */
function brokenRef(root: JSONSchema): string | undefined {
  const visit = (node: unknown, path: string): string | undefined => {
    if (typeof node !== "object" || node === null) return undefined;
    if (Array.isArray(node)) {
      for (const [i, child] of node.entries()) {
        const found = visit(child, `${path}[${i}]`);
        if (found) return found;
      }
      return undefined;
    }
    const ref = (node as JSONSchema).$ref;
    if (typeof ref === "string" && ref.startsWith("#") && resolvePointer(root, ref) === undefined) {
      return `${path || "the schema"}: $ref "${ref}" points at nothing in this schema (define it under $defs)`;
    }
    for (const [key, child] of Object.entries(node)) {
      if (key === "enum" || key === "const" || key === "default" || key === "examples") continue;
      const found = visit(child, path ? `${path}.${key}` : key);
      if (found) return found;
    }
    return undefined;
  };
  return visit(root, "");
}

function resolvePointer(root: JSONSchema, ref: string): unknown {
  if (ref === "#") return root;
  if (!ref.startsWith("#/")) return undefined;
  let node: unknown = root;
  for (const segment of ref.slice(2).split("/").map(decodePointer)) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Record<string, unknown>)[decodeURIComponent(segment)];
  }
  return node;
}
