import type { JSONSchema } from "../model/types.js";

/** Follows a local `$ref` (`#/$defs/x`, `#/definitions/x`) once; other refs are left alone. */
export function deref(schema: JSONSchema, root: JSONSchema): JSONSchema {
  let current = schema;
  for (let hops = 0; hops < 32 && typeof current.$ref === "string"; hops++) {
    const ref = current.$ref as string;
    if (!ref.startsWith("#")) return current;
    let target: unknown = root;
    for (const part of ref.slice(1).split("/").filter(Boolean)) {
      const key = decodeURIComponent(part).replace(/~1/g, "/").replace(/~0/g, "~");
      target = (target as Record<string, unknown> | undefined)?.[key];
    }
    if (typeof target !== "object" || target === null) return current;
    current = target as JSONSchema;
  }
  return current;
}

// Schemas are fixed once a tool is defined, so what a node admits is worked out once: coercion
// runs on every call and must not rebuild these sets each time.
const typeCache = new WeakMap<JSONSchema, WeakMap<JSONSchema, Set<string> | null>>();
const branchCache = new WeakMap<JSONSchema, WeakMap<JSONSchema, Map<string, JSONSchema | null>>>();

/** The JSON types a schema admits, or undefined when it does not say (any type). */
export function typesOf(schema: JSONSchema, root: JSONSchema): Set<string> | undefined {
  let perRoot = typeCache.get(root);
  if (!perRoot) {
    perRoot = new WeakMap();
    typeCache.set(root, perRoot);
  }
  const cached = perRoot.get(schema);
  if (cached !== undefined) return cached ?? undefined;
  const types = computeTypes(schema, root);
  perRoot.set(schema, types ?? null);
  return types;
}

function computeTypes(schema: JSONSchema, root: JSONSchema): Set<string> | undefined {
  const resolved = deref(schema, root);
  if (typeof resolved.type === "string") return new Set([resolved.type]);
  if (Array.isArray(resolved.type)) return new Set(resolved.type as string[]);
  if (resolved.const !== undefined) return new Set([jsonTypeOf(resolved.const)]);
  if (Array.isArray(resolved.enum)) return new Set((resolved.enum as unknown[]).map(jsonTypeOf));
  const branches = (resolved.anyOf ?? resolved.oneOf) as JSONSchema[] | undefined;
  if (Array.isArray(branches)) {
    const all = new Set<string>();
    for (const branch of branches) {
      const types = typesOf(branch, root);
      if (!types) return undefined;
      for (const t of types) all.add(t);
    }
    return all;
  }
  if (resolved.properties !== undefined) return new Set(["object"]);
  if (resolved.items !== undefined || resolved.prefixItems !== undefined) return new Set(["array"]);
  return undefined;
}

export function jsonTypeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

/** The branch of a union that describes objects/arrays, when exactly one does. */
export function soleBranch(schema: JSONSchema, root: JSONSchema, type: string): JSONSchema | undefined {
  let perRoot = branchCache.get(root);
  if (!perRoot) {
    perRoot = new WeakMap();
    branchCache.set(root, perRoot);
  }
  let perNode = perRoot.get(schema);
  if (!perNode) {
    perNode = new Map();
    perRoot.set(schema, perNode);
  }
  const cached = perNode.get(type);
  if (cached !== undefined) return cached ?? undefined;
  const branch = computeSoleBranch(schema, root, type);
  perNode.set(type, branch ?? null);
  return branch;
}

function computeSoleBranch(schema: JSONSchema, root: JSONSchema, type: string): JSONSchema | undefined {
  const resolved = deref(schema, root);
  const branches = (resolved.anyOf ?? resolved.oneOf) as JSONSchema[] | undefined;
  if (!Array.isArray(branches)) return resolved;
  const matching = branches.filter((b) => typesOf(b, root)?.has(type));
  return matching.length === 1 ? deref(matching[0]!, root) : undefined;
}

/**
 * The branch of a union that describes this object: the only object branch; else the one whose
 * discriminator (a property every object branch pins to a `const`, as `z.discriminatedUnion`
 * does) matches the value's; else the only branch whose keys the value fits (every required
 * key present, no key a closed branch does not list). Undefined when it is not clear.
 *
 * @example
 * objectBranch({ anyOf: [circle, rect] }, root, { kind: "rect", w: "3" }) // rect
 */
export function objectBranch(schema: JSONSchema, root: JSONSchema, value: object): JSONSchema | undefined {
  const sole = soleBranch(schema, root, "object");
  if (sole) return sole;
  const resolved = deref(schema, root);
  const branches = ((resolved.anyOf ?? resolved.oneOf) as JSONSchema[] | undefined)
    ?.map((b) => deref(b, root))
    .filter((b) => typesOf(b, root)?.has("object"));
  if (!branches?.length) return undefined;
  const record = value as Record<string, unknown>;
  const pinned = (branch: JSONSchema, key: string) => {
    const property = (branch.properties as Record<string, JSONSchema> | undefined)?.[key];
    if (!property) return undefined;
    const p = deref(property, root);
    if (p.const !== undefined) return { value: p.const };
    return Array.isArray(p.enum) && p.enum.length === 1 ? { value: p.enum[0] } : undefined;
  };
  for (const key of Object.keys(record)) {
    if (!branches.every((b) => pinned(b, key))) continue;
    const matching = branches.filter((b) => pinned(b, key)!.value === record[key]);
    if (matching.length === 1) return matching[0];
  }
  const fitting = branches.filter((b) => {
    const properties = (b.properties ?? {}) as Record<string, unknown>;
    const required = (b.required as string[] | undefined) ?? [];
    if (!required.every((key) => Object.hasOwn(record, key))) return false;
    return (
      b.additionalProperties !== false || Object.keys(record).every((key) => Object.hasOwn(properties, key))
    );
  });
  return fitting.length === 1 ? fitting[0] : undefined;
}
