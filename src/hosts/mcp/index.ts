// The public surface of "quiver-agents/mcp". The MCP SDK itself loads on a server's first
// connection, so importing this module is cheap.
import type { McpServerConfig, McpServerOptions } from "./config.js";
import { McpToolHost } from "./host.js";

export type {
  McpApprovalPredicate,
  McpElicitation,
  McpElicitationAnswer,
  McpElicitationHandler,
  McpHttpServer,
  McpServerConfig,
  McpServerOptions,
  McpStdioServer,
  McpToolFilter,
} from "./config.js";
export { McpToolHost } from "./host.js";

/**
 * Tools from an MCP server, as a `ToolHost` an agent takes like any tool. The server is
 * started (stdio) or reached (streamable HTTP) on first use; its tools keep their JSON Schema
 * and their annotations become hints (`readOnlyHint` → `readOnly`; `destructiveHint`,
 * default true, → `destructive` unless read-only; `idempotentHint` → `idempotent`). Results
 * are `untrustedOutput` unless you say otherwise. Call `close()` when done: it ends the
 * server process (which also ends when this process exits).
 *
 * @example
 * const files = mcpServer(
 *   { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"] },
 *   { prefix: "files", needsApproval: ["write_file", "move_file"] },
 * );
 * try {
 *   const agent = new Agent({ name: "librarian", model, tools: [files] });
 *   console.log((await Runner.run(agent, "What is in /srv/docs?")).output);
 * } finally {
 *   await files.close();
 * }
 */
export function mcpServer(server: McpServerConfig, options: McpServerOptions = {}): McpToolHost {
  return new McpToolHost(server, options);
}
