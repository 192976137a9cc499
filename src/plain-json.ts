/**
 * JSON text for any value a tool may return, without throwing: Dates as ISO strings, Maps as
 * objects, Sets as arrays, bigints as decimal strings, `toJSON` honoured, cycles as
 * "[Circular]", functions and symbols dropped.
 *
 * @example
 * toJsonText({ at: new Date(0), ids: new Set([1n]) }) // '{"at":"1970-01-01T00:00:00.000Z","ids":["1"]}'
 */
export function toJsonText(value: unknown): string {
  // Numbers, booleans and null need none of the walk below (the common result of small tools).
  if (value === null || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value))) {
    return String(value);
  }
  const text = JSON.stringify(toPlain(value, new WeakSet()));
  return text === undefined ? "null" : text;
}

/**
 * The plain-JSON form `toJsonText` serialises, for callers that embed a value in a larger
 * record (events). Total: a getter, trap or `toJSON` that throws becomes a marker string.
 */
export function toPlainJson(value: unknown): unknown {
  return toPlain(value, new WeakSet());
}

function toPlain(value: unknown, seen: WeakSet<object>): unknown {
  try {
    return toPlainUnsafe(value, seen);
  } catch {
    // A hostile value (a Proxy whose traps throw, a getter that throws): never fail the caller.
    return "[unreadable value]";
  }
}

function toPlainUnsafe(value: unknown, seen: WeakSet<object>): unknown {
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "function" || typeof value === "symbol") return undefined;
  if (typeof value !== "object" || value === null) {
    return typeof value === "number" && !Number.isFinite(value) ? String(value) : value;
  }
  if (seen.has(value)) return "[Circular]";
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? "Invalid Date" : value.toISOString();
  // Binary data is named, not spelt out: a Buffer's toJSON lists every byte (~4 characters each),
  // and an ArrayBuffer has no fields at all ({}), so its bytes would vanish without a word.
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer || value instanceof SharedArrayBuffer)
    return `[${value.constructor.name} ${value.byteLength} bytes]`;
  // A promise inside a result is a missing `await` in the tool: `{}` would hide it from everyone.
  if (value instanceof Promise) return "[a Promise: not awaited in execute]";
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") {
    try {
      return toPlain((value as { toJSON(): unknown }).toJSON(), seen);
    } catch (error) {
      return `[toJSON threw: ${(error as Error).message}]`;
    }
  }
  seen.add(value);
  try {
    if (value instanceof Map) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of value) out[typeof k === "string" ? k : toJsonText(k)] = toPlain(v, seen);
      return out;
    }
    if (value instanceof Set) return [...value].map((v) => toPlain(v, seen));
    if (value instanceof Error) return { name: value.name, message: value.message };
    if (Array.isArray(value)) return value.map((v) => toPlain(v, seen) ?? null);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const plain = toPlain(v, seen);
      if (plain !== undefined) out[k] = plain;
    }
    return out;
  } finally {
    // Shared (non-cyclic) references are fine: only an object inside itself is a cycle.
    seen.delete(value);
  }
}
