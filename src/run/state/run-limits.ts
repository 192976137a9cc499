import { BudgetExceeded } from "../../errors.js";
import type { Usage } from "../../model/types.js";
import type { Budget, BudgetLimits } from "../config/budget.js";

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
    // Counters are past their limit once over it (the call or turn at the limit was allowed);
    // tokens and cost once they reach it: the next request would only add more.
    const over = (limit: string, used: number, max: number | undefined, unit = "", reached = false) =>
      max !== undefined && (reached ? used >= max : used > max)
        ? new BudgetExceeded(
            this.runId,
            limit,
            `budget exceeded: ${limit} is ${max}${unit}, used ${round(used)}${unit}`,
          )
        : undefined;
    return (
      over("maxTurns", this.turns, l.maxTurns) ??
      over("maxToolCalls", this.toolCalls, l.maxToolCalls) ??
      over("maxInputTokens", u.inputTokens, l.maxInputTokens, "", true) ??
      over("maxOutputTokens", u.outputTokens, l.maxOutputTokens, "", true) ??
      over("maxTotalTokens", u.totalTokens, l.maxTotalTokens, "", true) ??
      over("maxCostUsd", u.costUsd ?? 0, l.maxCostUsd, " USD", true) ??
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

/**
 * The limits of one run: its turn cap and the budgets in force — its own first, then every
 * ancestor's (shared with them, so a child's calls and tokens count toward theirs too) — plus the
 * deadline of its own `maxDurationMs`.
 */
export class RunLimits {
  readonly maxTurns: number;
  /** This run's own budget first, then every ancestor's (shared with them). */
  readonly budgets: BudgetTracker[];
  /** The budget that stopped the run (its own or an ancestor's), for agents-as-tools to report. */
  stop: BudgetExceeded | undefined;
  /** This run's id, then its parent's, up to the root. */
  readonly #lineage: readonly string[];
  #deadline: NodeJS.Timeout | undefined;

  constructor(runId: string, maxTurns: number, budget: Budget | undefined, usage: Usage, parent?: RunLimits) {
    this.maxTurns = maxTurns;
    const own = budget ? [new BudgetTracker(runId, budget, usage)] : [];
    this.budgets = [...own, ...(parent?.budgets ?? [])];
    this.#lineage = parent ? [runId, ...parent.#lineage] : [runId];
  }

  /** Whether `error` belongs to this run or one above it: then it stops this run too. */
  owns(error: BudgetExceeded): boolean {
    return this.#lineage.includes(error.runId);
  }

  /** Counts one requested call against every budget in force; returns the first one it passes. */
  countToolCall(): BudgetExceeded | undefined {
    for (const tracker of this.budgets) tracker.toolCalls++;
    return this.exceeded();
  }

  /** The first budget (own or an ancestor's) this run is past. */
  exceeded(): BudgetExceeded | undefined {
    for (const tracker of this.budgets) {
      const exceeded = tracker.exceeded();
      if (exceeded) return exceeded;
    }
    return undefined;
  }

  /** This run's own budget, if it has one (ancestors' come after it in `budgets`). */
  own(runId: string): BudgetTracker | undefined {
    const first = this.budgets[0];
    return first?.runId === runId ? first : undefined;
  }

  /**
   * Arms `maxDurationMs`: when it passes, `expire` gets the error (it aborts running calls'
   * signals; the stop reason is "budget", not "cancelled"). The timer holds the process open,
   * so a run waiting on something that never settles still ends with its budget.
   */
  startDeadline(runId: string, ms: number, expire: (error: BudgetExceeded) => void): void {
    this.#deadline = setTimeout(
      () => expire(new BudgetExceeded(runId, "maxDurationMs", `budget exceeded: maxDurationMs is ${ms} ms`)),
      ms,
    );
  }

  /** The run ended: its deadline no longer applies. */
  clearDeadline(): void {
    clearTimeout(this.#deadline);
  }
}

function round(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}
