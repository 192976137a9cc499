import type { RunContext } from "./run-context.js";

/** What instruction functions receive: the run's context, without the per-call fields. */
export type InstructionContext<Deps = unknown> = Pick<
  RunContext<Deps>,
  "runId" | "parentRunId" | "path" | "sessionId" | "userId" | "deps" | "agent" | "signal"
>;

/** One piece of the system prompt: text, or a function evaluated at each run start. */
export type InstructionFragment<Deps = unknown> =
  | string
  | ((ctx: InstructionContext<Deps>) => string | undefined | Promise<string | undefined>);
/** An agent's system prompt: one fragment, or a list joined with blank lines (a fragment that returns `undefined` is left out). */
export type Instructions<Deps = unknown> = InstructionFragment<Deps> | InstructionFragment<Deps>[];
