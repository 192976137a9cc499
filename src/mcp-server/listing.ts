import {
  type AgentTools,
  type HostedTool,
  isToolHost,
  type JSONSchema,
  type Permissions,
  type Tool,
  type ToolHost,
  UserError,
} from "../index.js";

/** One entry of an agent's `tools`: a tool, or a host of tools. */
export type ToolSource = Tool | ToolHost;

/** MCP tool annotations (hints a client may show or act on; it must not trust them from an unknown server). */
export type ToolAnnotations = {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
};

/** A tool as `tools/list` shows it, plus whether its calls run alone (a barrier). */
export type ExposedTool = {
  name: string;
  title?: string;
  description: string;
  inputSchema: JSONSchema;
  annotations: ToolAnnotations;
  parallel: boolean;
};

type Hints = Pick<
  HostedTool,
  "label" | "readOnly" | "destructive" | "idempotent" | "untrustedOutput" | "parallel"
>;

/**
 * The tools an MCP client is offered: each tool's spec as a model gets it (`toSpec()`: name,
 * description, JSON Schema) and its hints as MCP annotations; hosts are listed now. Tools the
 * permissions never offer (`deniedTools`, outside `allowedTools`) are left out, as from a model.
 */
export async function exposedTools(
  sources: readonly ToolSource[],
  permissions: Permissions | undefined,
  signal?: AbortSignal,
): Promise<ExposedTool[]> {
  const exposed: ExposedTool[] = [];
  const from: string[] = [];
  let hosts = 0;
  for (const source of sources) {
    if (isToolHost(source)) {
      const host = `tool host ${++hosts} (${source.constructor?.name ?? "a ToolHost"})`;
      for (const hosted of await source.listTools(signal)) {
        exposed.push(expose(hosted.name, hosted.description, hosted.parameters, hosted));
        from.push(host);
      }
    } else {
      exposed.push(exposeTool(source));
      from.push("the server's tools");
    }
  }
  return offered(exposed, permissions, from);
}

/** `exposedTools` for plain tools, which need no listing: checked when the server is made. */
export function exposedToolsNow(tools: readonly Tool[], permissions: Permissions | undefined): ExposedTool[] {
  return offered(tools.map(exposeTool), permissions);
}

function exposeTool(tool: Tool): ExposedTool {
  const spec = tool.toSpec();
  return expose(spec.name, spec.description, spec.parameters, tool);
}

/** `from[i]` says where `exposed[i]` came from, for a clash's message. */
function offered(
  exposed: ExposedTool[],
  permissions: Permissions | undefined,
  from?: string[],
): ExposedTool[] {
  const seen = new Map<string, number>();
  exposed.forEach((tool, i) => {
    const first = seen.get(tool.name);
    if (first !== undefined) {
      const where = from ? ` (one in ${from[first]}, one in ${from[i]})` : "";
      throw new UserError(`two tools are named ${tool.name}${where}: an MCP server offers each name once`);
    }
    seen.set(tool.name, i);
  });
  if (!permissions?.offers) return exposed;
  return exposed.filter((tool) =>
    permissions.offers!({
      name: tool.name,
      readOnly: tool.annotations.readOnlyHint === true,
      destructive: tool.annotations.destructiveHint === true,
    }),
  );
}

/** The entries of an agent's `tools` setting, as a list. */
export function sourcesOf(tools: AgentTools | undefined): ToolSource[] {
  if (tools === undefined) return [];
  return Array.isArray(tools) ? [...tools] : [tools];
}

function expose(name: string, description: string, inputSchema: JSONSchema, hints: Hints): ExposedTool {
  const tool: ExposedTool = {
    name,
    description,
    inputSchema,
    annotations: annotationsOf(hints),
    parallel: hints.parallel !== false,
  };
  if (hints.label) tool.title = hints.label;
  return tool;
}

/**
 * Quiver's hints in MCP's words. MCP's defaults are the cautious ones (a tool is destructive and
 * open-world unless it says otherwise), so the hints Quiver's engine guards by are always
 * stated: `readOnly` → `readOnlyHint`; for other tools `destructive` → `destructiveHint` and
 * `idempotent` → `idempotentHint` (MCP reads both only when the tool is not read-only);
 * `untrustedOutput` (third-party content) → `openWorldHint: true`, else left to MCP's default,
 * since Quiver cannot know a tool's world is closed. `parallel: false` has no MCP annotation;
 * the server enforces it instead (see `CallGate`).
 */
function annotationsOf(hints: Hints): ToolAnnotations {
  const annotations: ToolAnnotations = {};
  if (hints.label) annotations.title = hints.label;
  if (hints.readOnly) annotations.readOnlyHint = true;
  else {
    annotations.readOnlyHint = false;
    annotations.destructiveHint = hints.destructive === true;
    annotations.idempotentHint = hints.idempotent === true;
  }
  if (hints.untrustedOutput) annotations.openWorldHint = true;
  return annotations;
}
