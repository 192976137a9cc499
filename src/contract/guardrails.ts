import { UserError } from "../errors.js";
import type { Message, ToolCall } from "../model/types.js";
import type { InstructionContext } from "./instructions.js";

/** Where a guardrail checks: the run's input, its final output, or one tool call before and after it runs. */
export type GuardrailStage = "input" | "output" | "tool_input" | "tool_output";

/** What a guardrail is given to check. `text` is always there; the rest depends on the stage. */
export type GuardrailSubject = {
  stage: GuardrailStage;
  /**
   * The text to check: the latest user message (`input`), the final answer (`output`), the
   * call's arguments as JSON (`tool_input`), the result the model would see (`tool_output`).
   */
  text: string;
  /** `input`: the messages the agent starts from (the run's input, or the transcript a handoff passed on). */
  messages?: readonly Message[];
  /** `output`: the final output (the validated object with `outputType`); `tool_output`: the tool's raw value. */
  value?: unknown;
  /** `tool_input` and `tool_output`: the call, with its validated arguments. */
  call?: ToolCall;
};

/** A guardrail's verdict. `tripped: true` stops what it guards. */
export type GuardrailResult = { tripped: boolean; reason?: string; info?: unknown };

/** What a guardrail's `check` receives besides its subject: the run's context; `signal` aborts when its time is up. */
export type GuardrailContext<Deps = unknown> = InstructionContext<Deps>;

/** A named check on what enters or leaves a run or a tool (made with `guardrail()`). */
export type Guardrail<Deps = unknown> = {
  readonly kind: "guardrail";
  readonly name: string;
  readonly check: (
    subject: GuardrailSubject,
    ctx: GuardrailContext<Deps>,
  ) => GuardrailResult | Promise<GuardrailResult>;
  /** Input guardrails only: `true` (default) runs it beside the first model turn; `false` before it. */
  readonly runInParallel: boolean;
  /** How long one check may take; past it, it trips (fail closed). */
  readonly timeoutMs: number;
};

/** The guardrails of an agent (`input`, `output`) or of a tool (`input` before it runs, `output` after). */
export type Guardrails<Deps = unknown> = {
  input?: ReadonlyArray<Guardrail<Deps>>;
  output?: ReadonlyArray<Guardrail<Deps>>;
};

/** Checks a `guardrails` setting: arrays of `guardrail()` values. */
export function assertGuardrails(guardrails: unknown, owner: string): void {
  if (guardrails === undefined) return;
  if (guardrails === null || typeof guardrails !== "object")
    throw new UserError(`${owner}: guardrails must be { input?: [...], output?: [...] }`);
  // Without these checks a list or a misspelt stage (`inputs`) was no guardrail at all, silently.
  if (Array.isArray(guardrails))
    throw new UserError(
      `${owner}: guardrails is a list; say which stage each checks: { input: [...] } (before) or { output: [...] } (after)`,
    );
  for (const key of Object.keys(guardrails)) {
    if (key !== "input" && key !== "output")
      throw new UserError(
        `${owner}: guardrails has no stage named ${JSON.stringify(key)}: use input and output`,
      );
  }
  for (const stage of ["input", "output"] as const) {
    const list = (guardrails as Record<string, unknown>)[stage];
    if (list === undefined) continue;
    if (!Array.isArray(list) || list.some((g) => (g as Guardrail | undefined)?.kind !== "guardrail"))
      throw new UserError(`${owner}: guardrails.${stage} must be an array of guardrail() values`);
  }
}
