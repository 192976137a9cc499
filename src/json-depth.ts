/**
 * Whether `value` (parsed JSON) nests objects and arrays more than `max` levels deep. It walks
 * without recursion, so a value nested a million levels deep is answered, not a stack overflow:
 * JSON from a peer (an MCP server's results and listings, an HTTP client's request body) is
 * checked with it before anything recursive (a schema check, a copy, a `JSON.stringify`)
 * touches it.
 *
 * @example
 * nestedDeeperThan({ a: [{ b: 1 }] }, 2) // → true (object → array → object)
 */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (typeof item !== "object" || item === null) continue;
    if (depth > max) return true;
    for (const child of Array.isArray(item) ? item : Object.values(item))
      if (typeof child === "object" && child !== null) stack.push([child, depth + 1]);
  }
  return false;
}
