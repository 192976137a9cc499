// The MCP SDK is an optional peer dependency, as on the client side (src/hosts/mcp/sdk.ts): it
// loads when a server first connects or listens, never on import, so `import
// "quiver-agents/mcp-server"` stays cheap and a project that serves no MCP clients does not
// install it. Its absence is a `UserError` naming the install line.
import { UserError } from "../index.js";

type ServerModule = typeof import("@modelcontextprotocol/sdk/server/index.js");
type TypesModule = typeof import("@modelcontextprotocol/sdk/types.js");
type StdioModule = typeof import("@modelcontextprotocol/sdk/server/stdio.js");
type HttpModule = typeof import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js");

/** The parts of the SDK's server side this folder uses. */
export type ServerSdk = {
  Server: ServerModule["Server"];
  types: TypesModule;
};

const PACKAGE = "@modelcontextprotocol/sdk";
const INSTALL = `npm install ${PACKAGE}`;

let core: Promise<ServerSdk> | undefined;

/** The SDK's low-level `Server` and protocol schemas, loaded once. */
export function loadServerSdk(): Promise<ServerSdk> {
  core ??= Promise.all([
    import("@modelcontextprotocol/sdk/server/index.js"),
    import("@modelcontextprotocol/sdk/types.js"),
  ]).then(
    ([server, types]) => ({ Server: server.Server, types }),
    (error) => {
      core = undefined;
      throw missing(error);
    },
  );
  return core;
}

/** The SDK's stdio server transport. */
export async function loadStdioTransport(): Promise<StdioModule["StdioServerTransport"]> {
  try {
    return (await import("@modelcontextprotocol/sdk/server/stdio.js")).StdioServerTransport;
  } catch (error) {
    throw missing(error);
  }
}

/** The SDK's streamable HTTP server transport on Web standard `Request` / `Response`. */
export async function loadHttpTransport(): Promise<HttpModule["WebStandardStreamableHTTPServerTransport"]> {
  try {
    return (await import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"))
      .WebStandardStreamableHTTPServerTransport;
  } catch (error) {
    throw missing(error);
  }
}

/** A `UserError` naming the install command when the SDK is not there (or too old); any other failure as it was. */
function missing(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  const message = String((error as { message?: unknown } | null)?.message ?? error);
  if (!message.includes(PACKAGE)) return error;
  if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND")
    return new UserError(
      `mcpServer() from quiver-agents/mcp-server needs the optional package ${PACKAGE}, which is not installed: run \`${INSTALL}\``,
      { cause: error },
    );
  if (code === "ERR_PACKAGE_PATH_NOT_EXPORTED")
    return new UserError(
      `mcpServer() from quiver-agents/mcp-server needs ${PACKAGE} 1.x with the streamable HTTP server; the installed version is too old: run \`${INSTALL}@1\``,
      { cause: error },
    );
  return error;
}
