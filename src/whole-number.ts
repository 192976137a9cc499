import { UserError } from "./errors.js";

/** What one count or limit must be: a whole number of at least `min`, or `Infinity` ("no limit") where `unbounded`. */
export type WholeNumberRule = { min: number; unbounded?: boolean; hint?: string };

/**
 * Throws a `UserError` unless every option `rules` names is absent or follows its rule. A limit of
 * 0 slots or a fractional retry count is a mistake to name at definition, not a run that waits
 * forever. Nothing is built for options left out (the common case, on every `new Agent`).
 *
 * @example
 * assertWholeNumbers(config, "tool", config.name, { concurrency: { min: 1, unbounded: true } });
 */
export function assertWholeNumbers(
  options: object,
  kind: string,
  name: string,
  rules: Readonly<Partial<Record<string, WholeNumberRule>>>,
): void {
  for (const option in rules) {
    const value = (options as Record<string, unknown>)[option];
    if (value === undefined) continue;
    const { min, unbounded, hint } = rules[option]!;
    if (
      typeof value === "number" &&
      (Number.isInteger(value) ? value >= min : unbounded && value === Infinity)
    )
      continue;
    const got = typeof value === "number" ? String(value) : (JSON.stringify(value) ?? String(value));
    throw new UserError(
      `${kind} "${name}": ${option} must be a whole number of at least ${min}${unbounded ? " (or Infinity)" : ""}, got ${got}${hint ? `: ${hint}` : ""}`,
    );
  }
}
