/**
 * Conservative repair of the tool-call argument JSON models sometimes get slightly wrong.
 *
 * Only mistakes with one obvious reading are fixed: trailing commas, single-quoted strings
 * and keys, and an object cut off at the very end inside a string or before its closing
 * brackets. Anything else (comments, unquoted keys, Python literals, missing commas) is left
 * alone, so the call fails with the normal invalid-arguments result and the model retries.
 */

export type JsonRepair = {
  /** The repaired JSON text; it parses to an object. */
  text: string;
  /** What was fixed, for the event that reports the repair. */
  repairs: string[];
};

/**
 * Repairs `text` when that is unambiguous and the result is a JSON object; else `undefined`.
 * Text that already parses is never touched.
 *
 * @example
 * repairToolArguments(`{'city': "Paris",}`)
 * // → { text: '{"city": "Paris"}', repairs: ["single-quoted string", "trailing comma"] }
 */
export function repairToolArguments(text: string): JsonRepair | undefined {
  if (parsesAsObject(text) !== undefined) return undefined;
  const repairs = new Set<string>();
  let out = "";
  const open: string[] = [];
  let i = 0;
  const n = text.length;
  while (i < n) {
    const ch = text[i]!;
    if (ch === '"' || ch === "'") {
      const quote = ch;
      let body = "";
      let j = i + 1;
      let closed = false;
      while (j < n) {
        const c = text[j]!;
        if (c === "\\") {
          const next = text[j + 1];
          if (next === undefined) break;
          // \' is not a JSON escape; inside a single-quoted string it means a plain '.
          body += quote === "'" && next === "'" ? "'" : c + next;
          j += 2;
          continue;
        }
        if (c === quote) {
          closed = true;
          break;
        }
        body += quote === "'" && c === '"' ? '\\"' : c;
        j++;
      }
      if (quote === "'") repairs.add("single-quoted string");
      if (!closed) {
        // Only a string running to the very end of the text is completed.
        repairs.add("unterminated string");
        out += `"${body}"`;
        i = n;
        break;
      }
      out += `"${body}"`;
      i = j + 1;
      continue;
    }
    if (ch === "{" || ch === "[") open.push(ch === "{" ? "}" : "]");
    else if (ch === "}" || ch === "]") {
      if (open.pop() !== ch) return undefined;
    } else if (ch === ",") {
      let k = i + 1;
      while (k < n && /\s/.test(text[k]!)) k++;
      if (text[k] === "}" || text[k] === "]") {
        repairs.add("trailing comma");
        i++;
        continue;
      }
    }
    out += ch;
    i++;
  }
  if (open.length > 0) {
    // A dangling `,` or `:` means a value is missing: that has no single reading.
    if (/[,:]\s*$/.test(out)) return undefined;
    repairs.add("unclosed bracket");
    out += open.reverse().join("");
  }
  if (repairs.size === 0) return undefined;
  if (parsesAsObject(out) === undefined) return undefined;
  return { text: out, repairs: [...repairs] };
}

function parsesAsObject(text: string): object | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
