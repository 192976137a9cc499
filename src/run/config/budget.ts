import { UserError } from "../../errors.js";

/** Limits on one run. Every field is optional; time in milliseconds, cost in US dollars. */
export type BudgetLimits = {
  maxTurns?: number;
  maxToolCalls?: number;
  maxInputTokens?: number;
  maxOutputTokens?: number;
  maxTotalTokens?: number;
  maxDurationMs?: number;
  maxCostUsd?: number;
};

const LIMITS = new Set<string>([
  "maxTurns",
  "maxToolCalls",
  "maxInputTokens",
  "maxOutputTokens",
  "maxTotalTokens",
  "maxDurationMs",
  "maxCostUsd",
] satisfies Array<keyof BudgetLimits>);

/**
 * Limits for a run. A `Budget` only describes limits: each run (and each child run) tracks its
 * own usage against it, so one object can be reused. Token and cost limits are checked at turn
 * boundaries, so one model turn may overshoot them; tool calls are counted as they are
 * requested (rejected ones too); the duration is a deadline that aborts running calls.
 *
 * @example
 * await Runner.run(agent, "Research this", { budget: new Budget({ maxToolCalls: 20, maxCostUsd: 0.5, maxDurationMs: 120_000 }) });
 */
export class Budget {
  readonly limits: Readonly<BudgetLimits>;
  constructor(limits: BudgetLimits) {
    for (const [key, value] of Object.entries(limits)) {
      // A misspelt limit (maxTokens) would be no limit at all.
      if (!LIMITS.has(key))
        throw new UserError(`Budget has no limit named ${key}: use ${[...LIMITS].join(", ")}`);
      if (value !== undefined && (typeof value !== "number" || Number.isNaN(value) || value < 0)) {
        throw new UserError(`Budget ${key} must be a non-negative number, got ${JSON.stringify(value)}`);
      }
    }
    // Not a spread: V8 freezes a spread's copy into dictionary mode, slow to read (see Agent).
    this.limits = Object.freeze(Object.assign({}, limits));
  }
}
