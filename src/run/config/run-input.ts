import { UserError } from "../../errors.js";
import type { Message } from "../../model/types.js";

/** What a run starts from: a user message, or a whole transcript (e.g. `previous.messages` plus a new turn). */
export type RunInput = string | Message | readonly Message[];

export function inputMessages(input: RunInput): Message[] {
  if (typeof input === "string") return [{ role: "user", content: input }];
  if (Array.isArray(input)) return [...input];
  return [input as Message];
}

const ROLES = new Set(["system", "user", "assistant", "tool"]);

/**
 * Checks what `Runner.run` / `Runner.stream` were given before anything else happens, so a
 * programming mistake is a `UserError` naming it, not a provider failure several calls later.
 *
 * @example
 * assertRunInput("hello", { maxTurns: 5 }); // fine
 * assertRunInput(42, {});                    // UserError: the input must be …
 */
export function assertRunInput(
  input: unknown,
  options: { maxTurns?: unknown } | undefined,
): asserts input is RunInput {
  if (options?.maxTurns !== undefined) {
    const { maxTurns } = options;
    if (typeof maxTurns !== "number" || !Number.isInteger(maxTurns) || maxTurns < 1) {
      throw new UserError(`maxTurns must be a whole number of at least 1 (got ${describe(maxTurns)})`);
    }
  }
  if (typeof input === "string") return;
  if (Array.isArray(input)) {
    if (input.length === 0)
      throw new UserError("the input is an empty list of messages: give at least one message");
    input.forEach((message, index) => {
      const problem = messageProblem(message);
      if (problem) throw new UserError(`input message ${index} ${problem}`);
    });
    return;
  }
  const problem = messageProblem(input);
  if (problem) {
    throw new UserError(
      `the input must be a string, a message ({ role: "user", content: "…" }) or an array of messages; it ${problem}`,
    );
  }
}

function messageProblem(message: unknown): string | undefined {
  if (typeof message !== "object" || message === null) return `is ${describe(message)}`;
  const { role, content } = message as { role?: unknown; content?: unknown };
  if (typeof role !== "string" || !ROLES.has(role)) {
    return `has no valid role (got ${describe(role)}; use "user", "assistant", "system" or "tool")`;
  }
  if (typeof content !== "string" && !Array.isArray(content)) {
    return `has content ${describe(content)}: use a string or an array of content blocks`;
  }
  return undefined;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return typeof value === "object" ? "an object" : typeof value;
}
