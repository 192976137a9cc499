const CONTEXT_LINES = 3;
const MAX_DIFF_CHARS = 20_000;

/**
 * A unified diff of `before` → `after` for an approval prompt: one hunk spanning everything
 * that changed (common leading and trailing lines trimmed, three lines of context kept). Not
 * minimal inside the hunk, which a human reviewing one edit does not need; capped at 20,000
 * characters.
 */
export function unifiedDiff(path: string, before: string | undefined, after: string): string {
  const a = before === undefined ? [] : splitLines(before);
  const b = splitLines(after);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const header = `--- ${before === undefined ? "/dev/null" : `a/${path}`}\n+++ b/${path}\n`;
  if (start === endA && start === endB) return `${header}(no change)\n`;
  const from = Math.max(0, start - CONTEXT_LINES);
  const toA = Math.min(a.length, endA + CONTEXT_LINES);
  const toB = Math.min(b.length, endB + CONTEXT_LINES);
  const lines: string[] = [];
  for (let i = from; i < start; i++) lines.push(` ${a[i]}`);
  for (let i = start; i < endA; i++) lines.push(`-${a[i]}`);
  for (let i = start; i < endB; i++) lines.push(`+${b[i]}`);
  for (let i = endA; i < toA; i++) lines.push(` ${a[i]}`);
  const range = (first: number, count: number) => `${count === 0 ? first : first + 1},${count}`;
  const hunk = `@@ -${range(from, toA - from)} +${range(from, toB - from)} @@\n`;
  const text = `${header}${hunk}${lines.join("\n")}\n`;
  return text.length > MAX_DIFF_CHARS
    ? `${text.slice(0, MAX_DIFF_CHARS)}\n[... diff cut at ${MAX_DIFF_CHARS.toLocaleString("en-US")} of ${text.length.toLocaleString("en-US")} chars ...]\n`
    : text;
}

function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines;
}
