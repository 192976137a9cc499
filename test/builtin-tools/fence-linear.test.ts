import { describe, expect, it } from "vitest";
import { disarm, FENCE_BEGIN, FENCE_END, fence } from "../../src/builtin-tools/fence.js";

/**
 * Inputs built to make a backtracking regex engine go quadratic: an opening bracket or a
 * marker word followed by a megabyte of what the next quantifier could also take.
 */
const ADVERSARIAL: Record<string, (n: number) => string> = {
  "'<' then spaces": (n) => `<${" ".repeat(n)}`,
  "'<' then braille blanks": (n) => `<${"\u2800".repeat(n)}`,
  "'<' then ideographic spaces": (n) => `<${"\u3000".repeat(n)}`,
  "'<' then tabs and newlines": (n) => `<${"\t\n".repeat(n / 2)}`,
  "'[' then spaces": (n) => `[${" ".repeat(n)}`,
  "'<<' then spaces": (n) => `<<${" ".repeat(n)}`,
  "'<|' then spaces": (n) => `<|${" ".repeat(n)}`,
  "'<|' then letters": (n) => `<|${"a".repeat(n)}`,
  "'<' then letters": (n) => `<${"a".repeat(n)}`,
  "'</' then spaces": (n) => `</${" ".repeat(n)}`,
  "'<system' then spaces": (n) => `<system${" ".repeat(n)}`,
  "newlines, then one letter": (n) => `x${"\n".repeat(n)}x`,
  "'begin' then spaces": (n) => `begin${" ".repeat(n)}`,
  "'end of' then spaces": (n) => `end of${" ".repeat(n)}`,
  "'external content' then dashes": (n) => `external content${"-".repeat(n)}`,
  "'< ' repeated": (n) => "< ".repeat(n / 2),
  "'[ /' repeated": (n) => "[ /".repeat(n / 3),
  "'<|' repeated": (n) => "<|".repeat(n / 2),
  "spaced letters repeated": (n) => "e n d e x t ".repeat(n / 12),
  "small capitals repeated": (n) => "ᴇɴᴅ ".repeat(n / 4),
  "combining marks repeated": (n) => "e\u0301".repeat(n / 2),
  "variation selectors": (n) => `x${"\ufe00".repeat(n)}`,
  backslashes: (n) => `<${"\\".repeat(n)}`,
  "carriage returns": (n) => "\r".repeat(n),
};

const SIZE = 1_000_000;

/** The least time of `runs` calls: on a shared machine the others include lost CPU time. */
function leastTime(fn: () => unknown, runs: number): number {
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    fn();
    best = Math.min(best, performance.now() - started);
  }
  return best;
}

/** The yardstick: one pass that reads every code unit of the input. */
function plainScan(text: string): number {
  let hash = 0;
  for (let i = 0; i < text.length; i++) hash = (hash * 31 + text.charCodeAt(i)) | 0;
  return hash;
}

describe("fence() is linear in its input", () => {
  for (const [name, build] of Object.entries(ADVERSARIAL)) {
    it(name, () => {
      // A cheap probe first: a quadratic pattern already costs seconds at 32 K characters,
      // so a regression fails here instead of blocking the test for minutes at 1 MB.
      const small = build(32_000);
      expect(
        leastTime(() => fence(small), 1),
        "32 K characters",
      ).toBeLessThan(250);

      const text = build(SIZE);
      const scan = Math.max(
        leastTime(() => plainScan(text), 5),
        0.2,
      );
      const fenced = leastTime(() => fence(text), 2);
      // Folding and matching do more work per character than a plain scan; a quadratic
      // pattern would be ~10,000× slower at this size.
      expect(fenced / scan, `fence ${fenced.toFixed(1)} ms, scan ${scan.toFixed(2)} ms`).toBeLessThan(600);
      const out = fence(text);
      expect(out.startsWith(`${FENCE_BEGIN}\n`)).toBe(true);
      expect(out.endsWith(`\n${FENCE_END}`)).toBe(true);
    });
  }

  it("a seeded mix of framing fragments stays linear too", () => {
    const pieces = ["<", "|", "[", "/", " ", "\n", "end", "external", "content", "ᴇ", "\u2800", "<<", "sys"];
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    let text = "";
    while (text.length < SIZE) text += pieces[Math.floor(random() * pieces.length)];
    const scan = Math.max(
      leastTime(() => plainScan(text), 5),
      0.2,
    );
    const fenced = leastTime(() => disarm(text), 2);
    expect(fenced / scan).toBeLessThan(600);
  });
});
