import { createRequire } from "node:module";
import type { ValidateFunction } from "ajv";
import type { JSONSchema } from "../model/types.js";

// ajv is CommonJS and ~100 ms to load: required on first use so `import "quiver-agents"` stays cheap.
const require = createRequire(import.meta.url);

type AjvInstance = { compile(schema: JSONSchema): ValidateFunction };
const instances = new Map<string, AjvInstance>();

function draftOf(schema: JSONSchema): "2020" | "2019" | "07" {
  const uri = typeof schema.$schema === "string" ? schema.$schema : "";
  if (uri.includes("draft-07") || uri.includes("draft-06") || uri.includes("draft-04")) return "07";
  if (uri.includes("2019-09")) return "2019";
  return "2020";
}

function ajvFor(draft: "2020" | "2019" | "07", useDefaults = false): AjvInstance {
  const key = useDefaults ? `${draft}+defaults` : draft;
  let ajv = instances.get(key);
  if (ajv) return ajv;
  const modulePath = draft === "2020" ? "ajv/dist/2020" : draft === "2019" ? "ajv/dist/2019" : "ajv";
  const Ajv = require(modulePath).default;
  // strict: false — schemas from zod, MCP servers and users carry annotations ajv's strict
  // mode rejects ("unknown keyword"); validation of values is unaffected.
  const instance = new Ajv({ allErrors: true, strict: false, validateFormats: true, useDefaults });
  require("ajv-formats").default(instance);
  instances.set(key, instance);
  ajv = instance as AjvInstance;
  return ajv;
}

/**
 * Compiles a JSON Schema with the ajv draft its `$schema` names (2020-12 by default). With
 * `useDefaults`, validating fills in the `default` of an absent property, in place.
 */
export function compileJsonSchema(
  schema: JSONSchema,
  options: { useDefaults?: boolean } = {},
): ValidateFunction {
  return ajvFor(draftOf(schema), options.useDefaults).compile(schema);
}
