import type { Usage } from "../../model/types.js";

/**
 * US dollars per million tokens. `cachedInput` (cache reads) and `cacheWriteInput` (tokens written
 * to the prompt cache) default to `input` when a provider does not price them apart.
 */
export type ModelPrice = { input: number; output: number; cachedInput?: number; cacheWriteInput?: number };

/** Anthropic's list prices: cache reads at 0.1× the input rate, 5-minute cache writes at 1.25×. */
const claude = (input: number, output: number): ModelPrice => ({
  input,
  output,
  cachedInput: input / 10,
  cacheWriteInput: input * 1.25,
});

// List prices at the time of writing; providers change them — register your own to be exact.
const prices = new Map<string, ModelPrice>([
  ["gpt-5", { input: 1.25, output: 10, cachedInput: 0.125 }],
  ["gpt-5-mini", { input: 0.25, output: 2, cachedInput: 0.025 }],
  ["gpt-5-nano", { input: 0.05, output: 0.4, cachedInput: 0.005 }],
  ["gpt-4.1", { input: 2, output: 8, cachedInput: 0.5 }],
  ["gpt-4.1-mini", { input: 0.4, output: 1.6, cachedInput: 0.1 }],
  ["gpt-4.1-nano", { input: 0.1, output: 0.4, cachedInput: 0.025 }],
  ["gpt-4o", { input: 2.5, output: 10, cachedInput: 1.25 }],
  ["gpt-4o-mini", { input: 0.15, output: 0.6, cachedInput: 0.075 }],
  ["o4-mini", { input: 1.1, output: 4.4, cachedInput: 0.275 }],
  ["o3", { input: 2, output: 8, cachedInput: 0.5 }],
  ["o3-mini", { input: 1.1, output: 4.4, cachedInput: 0.55 }],
  ["o3-pro", { input: 20, output: 80 }],
  ["o1", { input: 15, output: 60, cachedInput: 7.5 }],
  ["claude-opus-4-5", claude(5, 25)],
  ["claude-opus-4-1", claude(15, 75)],
  ["claude-opus-4", claude(15, 75)],
  ["claude-sonnet-4-5", claude(3, 15)],
  ["claude-sonnet-4", claude(3, 15)],
  ["claude-haiku-4-5", claude(1, 5)],
  ["claude-3-5-haiku", claude(0.8, 4)],
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

/**
 * The price of a model: an exact match, then without its `provider:` prefix, then a dated
 * snapshot of a known model (`gpt-4o-2024-08-06`, `claude-sonnet-4-5-20250929`, `…-latest`). Only
 * a date: `o3-pro` is not `o3`, whose price is a tenth of it.
 */
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
  const snapshot = SNAPSHOT.exec(bare);
  return snapshot ? prices.get(bare.slice(0, snapshot.index)) : undefined;
}

/** The suffix of a dated (or floating) snapshot of a model. */
const SNAPSHOT = /-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)$/;

/** The dollar cost of one turn's usage, unless the provider reported it or the price is unknown. */
export function costOf(model: string, usage: Partial<Usage>): number | undefined {
  if (usage.costUsd !== undefined) return usage.costUsd;
  const price = modelPrice(model);
  if (!price) return undefined;
  const cached = usage.cachedInputTokens ?? 0;
  const written = usage.cacheWriteTokens ?? 0;
  const uncached = Math.max(0, (usage.inputTokens ?? 0) - cached - written);
  return (
    (uncached * price.input +
      cached * (price.cachedInput ?? price.input) +
      written * (price.cacheWriteInput ?? price.input) +
      (usage.outputTokens ?? 0) * price.output) /
    1e6
  );
}
