import type { InstructionContext, InstructionFragment, Instructions } from "./agent.js";

type AnyInstructions<Deps> = Instructions<Deps> | ReadonlyArray<InstructionFragment<Deps>>;

/**
 * Evaluates instructions (string, function, or a list of them) into one system prompt. Several
 * sources (the agent's own, then each plugin's) are joined in order, separated by a blank line.
 */
export async function resolveInstructions<Deps>(
  instructions: AnyInstructions<Deps> | undefined,
  ctx: InstructionContext<Deps>,
  ...more: Array<AnyInstructions<Deps> | undefined>
): Promise<string | undefined> {
  const parts: string[] = [];
  for (const source of [instructions, ...more]) {
    if (source === undefined) continue;
    const fragments: ReadonlyArray<InstructionFragment<Deps>> = Array.isArray(source) ? source : [source];
    for (const fragment of fragments) {
      const text = typeof fragment === "function" ? await fragment(ctx) : fragment;
      if (text) parts.push(text);
    }
  }
  return parts.length ? parts.join("\n\n") : undefined;
}
