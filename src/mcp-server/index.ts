// The public surface of "quiver-agents/mcp-server": re-exports only.
export type { ServerAuth } from "../server/auth.js";
export type { McpListening, McpListenOptions } from "./listen-options.js";
export {
  type McpAgentOptions,
  type McpConnection,
  type McpServerBaseOptions,
  type McpServerTransport,
  type McpToolsOptions,
  mcpServer,
  type QuiverMcpServer,
} from "./mcp-server.js";
