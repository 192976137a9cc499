import type {
  Guardrail,
  GuardrailContext,
  GuardrailResult,
  GuardrailStage,
  GuardrailSubject,
} from "../../contract/guardrails.js";
import { UserError } from "../../errors.js";

/** How long a guardrail's check may take by default before it trips. */
export const DEFAULT_GUARDRAIL_TIMEOUT_MS = 30_000;
const GUARDRAIL_NAME = /^[a-zA-Z0-9_-][a-zA-Z0-9 _.-]{0,63}$/;

/** What `guardrail()` accepts. */
export type GuardrailConfig<Deps = unknown> = {
  /** Names the guardrail in events, errors and spans. 1-64 letters, digits, " _.-". */
  name: string;
  /**
   * Returns `{ tripped, reason?, info? }`. A check that throws, or takes longer than
   * `timeoutMs`, trips (fail closed), with the error as its reason.
   */
  check: (
    subject: GuardrailSubject,
    ctx: GuardrailContext<Deps>,
  ) => GuardrailResult | Promise<GuardrailResult>;
  /**
   * Input guardrails: run beside the first model turn (default `true`: no added latency; a trip
   * cancels the turn before any of its tools starts) or before it (`false`: no tokens are spent
   * on an input that trips).
   */
  runInParallel?: boolean;
  /** Default 30,000 ms. */
  timeoutMs?: number;
};

/**
 * A check on what enters or leaves a run (an agent's `guardrails: { input, output }`) or a tool
 * call (a tool's `guardrails`). A trip of an agent's guardrail ends the run with
 * `GuardrailTripped`; a tool's turns the call into an error the model sees.
 *
 * @example
 * const noSsn = guardrail({
 *   name: "no_ssn",
 *   check: async (input) => ({ tripped: /\d{3}-\d{2}-\d{4}/.test(input.text), reason: "looks like an SSN" }),
 * });
 * const agent = new Agent({ name: "support", model, guardrails: { input: [noSsn] } });
 */
export function guardrail<Deps = unknown>(config: GuardrailConfig<Deps>): Guardrail<Deps> {
  if (config === null || typeof config !== "object")
    throw new UserError(
      "guardrail() takes an object: guardrail({ name, check, runInParallel?, timeoutMs? })",
    );
  const { name, check, runInParallel = true, timeoutMs = DEFAULT_GUARDRAIL_TIMEOUT_MS } = config;
  if (typeof name !== "string" || !GUARDRAIL_NAME.test(name))
    throw new UserError(`invalid guardrail name ${JSON.stringify(name)}: use 1-64 letters, digits, " _.-"`);
  if (typeof check !== "function") throw new UserError(`guardrail "${name}": check must be a function`);
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
    throw new UserError(
      `guardrail "${name}": timeoutMs must be a positive number of milliseconds, got ${timeoutMs}`,
    );
  return Object.freeze({
    kind: "guardrail" as const,
    name,
    check,
    runInParallel: runInParallel !== false,
    timeoutMs,
  });
}

/**
 * An agent's guardrail tripped: the run failed (`run_failed` with kind `guardrail_tripped`) and
 * `result()` rejects with this.
 */
export class GuardrailTripped extends Error {
  override name = "GuardrailTripped";
  readonly guardrail: string;
  readonly stage: GuardrailStage;
  readonly reason: string;
  readonly info: unknown;
  constructor(guardrail: string, stage: GuardrailStage, reason: string, info?: unknown) {
    super(`guardrail "${guardrail}" tripped on the ${stage === "input" ? "input" : "output"}: ${reason}`);
    this.guardrail = guardrail;
    this.stage = stage;
    this.reason = reason;
    this.info = info;
  }
}
