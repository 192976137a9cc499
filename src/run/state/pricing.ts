import type { Usage } from "../../model/types.js";

/** US dollars per million tokens. `cachedInput` defaults to `input` when a provider does not discount. */
export type ModelPrice = { input: number; output: number; cachedInput?: number };

// List prices at the time of writing; providers change them — register your own to be exact.
const prices = new Map<string, ModelPrice>([
  ["gpt-4.1", { input: 2, output: 8, cachedInput: 0.5 }],
  ["gpt-4.1-mini", { input: 0.4, output: 1.6, cachedInput: 0.1 }],
  ["gpt-4.1-nano", { input: 0.1, output: 0.4, cachedInput: 0.025 }],
  ["gpt-4o", { input: 2.5, output: 10, cachedInput: 1.25 }],
  ["gpt-4o-mini", { input: 0.15, output: 0.6, cachedInput: 0.075 }],
  ["o4-mini", { input: 1.1, output: 4.4, cachedInput: 0.275 }],
  ["o3", { input: 2, output: 8, cachedInput: 0.5 }],
  ["claude-sonnet-4-5", { input: 3, output: 15, cachedInput: 0.3 }],
  ["claude-sonnet-4", { input: 3, output: 15, cachedInput: 0.3 }],
  ["claude-opus-4-1", { input: 15, output: 75, cachedInput: 1.5 }],
  ["claude-haiku-4-5", { input: 1, output: 5, cachedInput: 0.1 }],
]);

/**
 * Adds or replaces the price of a model, by its id as providers name it (`"gpt-4.1-mini"`,
 * `"openai:gpt-4.1-mini"`, or your deployment's name).
 *
 * @example
 * setModelPrice("my-finetune", { input: 3, output: 12 });
 */
export function setModelPrice(model: string, price: ModelPrice): void {
  prices.set(model, price);
  found.clear();
}

/** What `modelPrice` found for each model name asked about (null: no price), until a price changes. */
const found = new Map<string, ModelPrice | null>();

/** The price of a model: an exact match, then without its `provider:` prefix, then the longest known prefix (dated snapshots). */
export function modelPrice(model: string): ModelPrice | undefined {
  // Asked every turn: the prefix search over every known name was ~1 % of a short run.
  const known = found.get(model);
  if (known !== undefined) return known ?? undefined;
  const price = lookUp(model);
  // Bounded: a process that asks about endless distinct names keeps only the latest ones.
  if (found.size >= 1_000) found.clear();
  found.set(model, price ?? null);
  return price;
}

function lookUp(model: string): ModelPrice | undefined {
  const exact = prices.get(model);
  if (exact) return exact;
  const bare = model.includes(":") ? model.slice(model.indexOf(":") + 1) : model;
  if (prices.has(bare)) return prices.get(bare);
  let best: string | undefined;
  for (const key of prices.keys())
    if (bare.startsWith(key) && (!best || key.length > best.length)) best = key;
  return best ? prices.get(best) : undefined;
}

/** The dollar cost of one turn's usage, unless the provider reported it or the price is unknown. */
export function costOf(model: string, usage: Partial<Usage>): number | undefined {
  if (usage.costUsd !== undefined) return usage.costUsd;
  const price = modelPrice(model);
  if (!price) return undefined;
  const cached = usage.cachedInputTokens ?? 0;
  const uncached = Math.max(0, (usage.inputTokens ?? 0) - cached);
  return (
    (uncached * price.input +
      cached * (price.cachedInput ?? price.input) +
      (usage.outputTokens ?? 0) * price.output) /
    1e6
  );
}
