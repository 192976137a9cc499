import { UserError } from "../../errors.js";
import { isToolHost } from "../../hosts/tool-host.js";
import { Tool } from "../../tool/tool.js";

/**
 * Checks an agent's `tools` when the agent is made, not when its first run starts (in a server,
 * the first request): each entry is a tool or a tool host, and no two of its tools share a
 * name. What hosts list is known only at run time and checked then.
 *
 * @example
 * assertAgentTools([lookupOrder, lookupOrder], "support"); // UserError: the same tool "lookup_order" is listed twice
 */
export function assertAgentTools(tools: unknown, agent: string): void {
  if (tools === undefined) return;
  const list: unknown[] = Array.isArray(tools) ? tools : [tools];
  let names: Map<string, Tool> | undefined;
  for (const entry of list) {
    if (!(entry instanceof Tool)) {
      if (isToolHost(entry)) continue;
      throw new UserError(
        `agent "${agent}": tools must be tools (tool(), new Tool) or ToolHosts; got ${describeToolEntry(entry)}`,
      );
    }
    names ??= new Map();
    const same = names.get(entry.name);
    if (same === entry)
      throw new UserError(`agent "${agent}": the same tool "${entry.name}" is listed twice in its tools`);
    if (same !== undefined) {
      throw new UserError(
        `agent "${agent}": two tools are named "${entry.name}": tool names must be unique across an agent's tools; rename one or leave one out`,
      );
    }
    names.set(entry.name, entry);
  }
}

/** What a value given where a tool belongs is, with the way to make it one. */
export function describeToolEntry(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined (an import cycle, or a tool used before its definition?)";
  if (typeof value === "function")
    return `a function${value.name ? ` (${value.name})` : ""}: wrap it with tool()`;
  if (typeof value !== "object") return typeof value;
  // A search backend or page reader (duckduckgoSearch(), new HttpReader()) is what a web tool uses.
  const object = value as { search?: unknown; read?: unknown; execute?: unknown };
  if (typeof object.search === "function")
    return "a search backend, not a tool: wrap it with webSearch(…) from quiver-agents/tools";
  if (typeof object.read === "function")
    return "a page reader, not a tool: wrap it with webFetch(…) from quiver-agents/tools";
  if (typeof object.execute === "function")
    return "an object with execute, not a tool: pass it to tool({ … })";
  const values = Object.values(value);
  if (values.length > 0 && values.every((item) => item instanceof Tool))
    return "a record of tools: pass them as an array (Object.values(tools))";
  return "an object";
}
