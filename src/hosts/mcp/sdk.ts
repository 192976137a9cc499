// The MCP SDK (and the zod, ajv and express it pulls in) is an optional peer dependency: it
// loads on a server's first connection, never on import, so `import "quiver-agents/mcp"` stays
// cheap, `import "quiver-agents"` never touches it, and a project without MCP servers does not
// install it. Its absence is a `UserError` saying how to install it.
import { UserError } from "../../errors.js";

type ClientModule = typeof import("@modelcontextprotocol/sdk/client/index.js");
type TypesModule = typeof import("@modelcontextprotocol/sdk/types.js");
type StdioModule = typeof import("@modelcontextprotocol/sdk/shared/stdio.js");
type StdioClientModule = typeof import("@modelcontextprotocol/sdk/client/stdio.js");
type HttpClientModule = typeof import("@modelcontextprotocol/sdk/client/streamableHttp.js");

export type McpSdk = {
  Client: ClientModule["Client"];
  types: TypesModule;
};

const PACKAGE = "@modelcontextprotocol/sdk";
export const INSTALL_SDK = `npm install ${PACKAGE}`;

let core: Promise<McpSdk> | undefined;

/** The SDK's client and protocol types, loaded once. */
export function loadSdk(): Promise<McpSdk> {
  core ??= Promise.all([
    import("@modelcontextprotocol/sdk/client/index.js"),
    import("@modelcontextprotocol/sdk/types.js"),
  ]).then(
    ([client, types]) => ({ Client: client.Client, types }),
    (error) => {
      core = undefined;
      throw missing(error);
    },
  );
  return core;
}

/** The SDK's stdio framing and its environment defaults (for child-process servers). */
export async function loadStdio(): Promise<StdioModule & Pick<StdioClientModule, "getDefaultEnvironment">> {
  try {
    const [framing, client] = await Promise.all([
      import("@modelcontextprotocol/sdk/shared/stdio.js"),
      import("@modelcontextprotocol/sdk/client/stdio.js"),
    ]);
    return { ...framing, getDefaultEnvironment: client.getDefaultEnvironment };
  } catch (error) {
    throw missing(error);
  }
}

/** The SDK's streamable HTTP client transport. */
export async function loadHttp(): Promise<HttpClientModule> {
  try {
    return await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  } catch (error) {
    throw missing(error);
  }
}

/** A `UserError` naming the install command when the SDK is not there; any other failure as it was. */
function missing(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  const message = String((error as { message?: unknown } | null)?.message ?? error);
  if ((code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") && message.includes(PACKAGE)) {
    return new UserError(
      `mcpServer() needs the optional package ${PACKAGE}, which is not installed: run \`${INSTALL_SDK}\``,
      { cause: error },
    );
  }
  if (code === "ERR_PACKAGE_PATH_NOT_EXPORTED" && message.includes(PACKAGE)) {
    return new UserError(
      `mcpServer() needs ${PACKAGE} 1.x with the streamable HTTP client; the installed version is too old: run \`${INSTALL_SDK}@1\``,
      { cause: error },
    );
  }
  return error;
}
