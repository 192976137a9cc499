/** What V8 spends on an object or array besides its contents, and on one slot (a property, a number). */
const OBJECT_BYTES = 32;
const SLOT_BYTES = 8;
/** A string's header: a short string costs more than its characters. */
const STRING_BYTES = 16;

/**
 * About how much memory `value` holds: its strings (a byte a character, as V8 keeps ASCII such
 * as base64), the bytes of its typed arrays and buffers, and a little for every object, array and
 * number. A value reached twice counts once. An estimate for a budget (the memory a finished
 * run's events keep), not an exact count: it errs on the high side for text shared between values.
 *
 * @example
 * approxBytes({ type: "image", data: "A".repeat(1_000_000), mimeType: "image/png" }); // ≈ 1,000,100
 */
export function approxBytes(value: unknown): number {
  let total = 0;
  const seen = new Set<object>();
  // A stack, not recursion: a deeply nested tool result must not overflow the call stack.
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next === "string") total += STRING_BYTES + next.length;
    else if (typeof next === "number" || typeof next === "bigint" || typeof next === "boolean")
      total += SLOT_BYTES;
    else if (typeof next === "object" && next !== null && !seen.has(next)) {
      seen.add(next);
      if (ArrayBuffer.isView(next) || next instanceof ArrayBuffer) total += OBJECT_BYTES + next.byteLength;
      else if (Array.isArray(next)) {
        total += OBJECT_BYTES + SLOT_BYTES * next.length;
        for (const item of next) pending.push(item);
      } else {
        total += OBJECT_BYTES;
        for (const key of Object.keys(next)) {
          total += SLOT_BYTES;
          pending.push((next as Record<string, unknown>)[key]);
        }
      }
    }
  }
  return total;
}
