/**
 * SQL literals for a statement sent with the simple query protocol, which takes no parameters:
 * PostgreSQL runs several statements of one such message in one round trip (`BEGIN; …`).
 */

/** The SQL types a literal can be written as (and is cast to). */
export type LiteralType = "text" | "bigint" | "integer[]" | "text[]";

/**
 * `value` as a SQL literal cast to `type`: a string quoted as node-postgres's `escapeLiteral`
 * does (quotes doubled; with a backslash, every backslash doubled in an `E''` string, which reads
 * the same whatever `standard_conforming_strings` says), an integer as digits, an array of those.
 * Throws on anything else (a float, NaN, an object): the caller then binds parameters instead.
 *
 * @example
 * sqlLiteral("it's", "text"); // → "'it''s'::text"
 * sqlLiteral([1, 2], "integer[]"); // → "ARRAY[1,2]::integer[]"
 */
export function sqlLiteral(value: unknown, type: LiteralType): string {
  if (value === null || value === undefined) return `NULL::${type}`;
  if (Array.isArray(value)) {
    if (value.length === 0) return `'{}'::${type}`;
    let items = "";
    for (const item of value) items += (items ? "," : "") + scalar(item);
    return `ARRAY[${items}]::${type}`;
  }
  return `${scalar(value)}::${type}`;
}

function scalar(value: unknown): string {
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new TypeError(`not an integer literal: ${value}`);
    return String(value);
  }
  if (typeof value !== "string") throw new TypeError(`no SQL literal for a ${typeof value}`);
  const quoted = `'${value.replaceAll("'", "''")}'`;
  return value.includes("\\") ? `E${quoted.replaceAll("\\", "\\\\")}` : quoted;
}
