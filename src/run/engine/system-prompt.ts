import type { InstructionContext, InstructionFragment, Instructions } from "../../contract/instructions.js";

type AnyInstructions<Deps> = Instructions<Deps> | ReadonlyArray<InstructionFragment<Deps>>;

/**
 * Evaluates instructions (string, function, or a list of them) into one system prompt. Several
 * sources (the agent's own, then each plugin's) are joined in order, separated by a blank line.
 * Text alone needs no evaluation: it resolves synchronously (no promise), and the context is
 * made (once, by `ctx()`) only for the first function.
 */
export function resolveInstructions<Deps>(
  instructions: AnyInstructions<Deps> | undefined,
  ctx: () => InstructionContext<Deps>,
  more: ReadonlyArray<AnyInstructions<Deps> | undefined> = [],
): string | undefined | Promise<string | undefined> {
  if (more.length === 0) {
    // The usual agent: one string, or none.
    if (instructions === undefined) return undefined;
    if (typeof instructions === "string") return instructions || undefined;
  }
  const fragments: Array<InstructionFragment<Deps>> = [];
  for (const source of [instructions, ...more]) {
    if (source === undefined) continue;
    if (Array.isArray(source)) fragments.push(...(source as ReadonlyArray<InstructionFragment<Deps>>));
    else fragments.push(source as InstructionFragment<Deps>);
  }
  const parts: string[] = [];
  for (let i = 0; i < fragments.length; i++) {
    const fragment = fragments[i]!;
    if (typeof fragment === "function") return evaluate(fragments, i, parts, ctx());
    if (fragment) parts.push(fragment);
  }
  return parts.length ? parts.join("\n\n") : undefined;
}

async function evaluate<Deps>(
  fragments: ReadonlyArray<InstructionFragment<Deps>>,
  from: number,
  parts: string[],
  ctx: InstructionContext<Deps>,
): Promise<string | undefined> {
  for (let i = from; i < fragments.length; i++) {
    const fragment = fragments[i]!;
    const text = typeof fragment === "function" ? await fragment(ctx) : fragment;
    if (text) parts.push(text);
  }
  return parts.length ? parts.join("\n\n") : undefined;
}
