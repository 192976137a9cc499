import { BudgetExceeded, UserError } from "../../errors.js";
import type { Usage } from "../../model/types.js";

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
      if (value !== undefined && (typeof value !== "number" || Number.isNaN(value) || value < 0)) {
        throw new UserError(`Budget ${key} must be a non-negative number, got ${JSON.stringify(value)}`);
      }
    }
    this.limits = Object.freeze({ ...limits });
  }
}

/** One run's usage against one budget. Ancestors' trackers are shared with child runs. */
export class BudgetTracker {
  readonly runId: string;
  readonly limits: Readonly<BudgetLimits>;
  readonly usage: Usage;
  readonly startedAt = Date.now();
  toolCalls = 0;
  turns = 0;

  constructor(runId: string, budget: Budget, usage: Usage) {
    this.runId = runId;
    this.limits = budget.limits;
    this.usage = usage;
  }

  /** The first limit this run is past (`>` for counters, `>=` for the deadline), if any. */
  exceeded(): BudgetExceeded | undefined {
    const l = this.limits;
    const u = this.usage;
    const over = (limit: string, used: number, max: number | undefined, unit = "") =>
      max !== undefined && used > max
        ? new BudgetExceeded(
            this.runId,
            limit,
            `budget exceeded: ${limit} is ${max}${unit}, used ${round(used)}${unit}`,
          )
        : undefined;
    return (
      over("maxTurns", this.turns, l.maxTurns) ??
      over("maxToolCalls", this.toolCalls, l.maxToolCalls) ??
      over("maxInputTokens", u.inputTokens, l.maxInputTokens) ??
      over("maxOutputTokens", u.outputTokens, l.maxOutputTokens) ??
      over("maxTotalTokens", u.totalTokens, l.maxTotalTokens) ??
      over("maxCostUsd", u.costUsd ?? 0, l.maxCostUsd, " USD") ??
      (l.maxDurationMs !== undefined && Date.now() - this.startedAt >= l.maxDurationMs
        ? new BudgetExceeded(
            this.runId,
            "maxDurationMs",
            `budget exceeded: maxDurationMs is ${l.maxDurationMs} ms`,
          )
        : undefined)
    );
  }

  /** Whether starting one more turn would pass `maxTurns`. */
  turnsLeft(): boolean {
    return this.limits.maxTurns === undefined || this.turns < this.limits.maxTurns;
  }
}

function round(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}
