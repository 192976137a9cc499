import type { JSONSchema } from "../model/types.js";

const brand: unique symbol = Symbol.for("quiver.jsonSchema");

/** A raw JSON Schema carrying the TypeScript type of the arguments it describes. */
export type TypedJsonSchema<T> = {
  readonly [brand]: true;
  readonly jsonSchema: JSONSchema;
  readonly _type?: T;
};

/**
 * Declares tool parameters as plain JSON Schema, with the argument type you promise it matches.
 * Arguments are validated against it with ajv (draft chosen by `$schema`, default 2020-12).
 *
 * @example
 * const params = jsonSchema<{ city: string }>({
 *   type: "object", properties: { city: { type: "string" } }, required: ["city"],
 * });
 */
export function jsonSchema<T = Record<string, unknown>>(schema: JSONSchema): TypedJsonSchema<T> {
  return { [brand]: true, jsonSchema: schema };
}

export function isTypedJsonSchema(value: unknown): value is TypedJsonSchema<unknown> {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[brand] === true;
}
