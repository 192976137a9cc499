import type { InstructionContext, Instructions } from "./agent.js";

/** Evaluates an agent's instructions (string, function, or a list of them) into one system prompt. */
export async function resolveInstructions<Deps>(
  instructions: Instructions<Deps> | undefined,
  ctx: InstructionContext<Deps>,
): Promise<string | undefined> {
  if (instructions === undefined) return undefined;
  const fragments = Array.isArray(instructions) ? instructions : [instructions];
  const parts: string[] = [];
  for (const fragment of fragments) {
    const text = typeof fragment === "function" ? await fragment(ctx) : fragment;
    if (text) parts.push(text);
  }
  return parts.length ? parts.join("\n\n") : undefined;
}
