import { UserError } from "./errors.js";

/**
 * Throws a `UserError` unless `value` is absent or a whole number of at least `min` (or
 * `Infinity`, "no limit", where `unbounded`). A limit of 0 slots or a fractional retry count
 * is a mistake to name at definition, not a run that waits forever.
 *
 * @example
 * assertWholeNumber(options.concurrency, 'tool "search": concurrency', 1, { unbounded: true });
 */
export function assertWholeNumber(
  value: unknown,
  what: string,
  min: number,
  options: { unbounded?: boolean; hint?: string } = {},
): void {
  if (value === undefined) return;
  if (
    typeof value === "number" &&
    (Number.isInteger(value) ? value >= min : options.unbounded && value === Infinity)
  )
    return;
  const got = typeof value === "number" ? String(value) : (JSON.stringify(value) ?? String(value));
  throw new UserError(
    `${what} must be a whole number of at least ${min}${options.unbounded ? " (or Infinity)" : ""}, got ${got}${options.hint ? `: ${options.hint}` : ""}`,
  );
}
