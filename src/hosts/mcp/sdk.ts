// The MCP SDK (and the zod and ajv it pulls in) loads on a server's first connection, never
// on import: `import "quiver-agents/mcp"` stays cheap, and `import "quiver-agents"` never touches it.

type ClientModule = typeof import("@modelcontextprotocol/sdk/client/index.js");
type TypesModule = typeof import("@modelcontextprotocol/sdk/types.js");
type StdioModule = typeof import("@modelcontextprotocol/sdk/shared/stdio.js");
type StdioClientModule = typeof import("@modelcontextprotocol/sdk/client/stdio.js");
type HttpClientModule = typeof import("@modelcontextprotocol/sdk/client/streamableHttp.js");

export type McpSdk = {
  Client: ClientModule["Client"];
  types: TypesModule;
};

let core: Promise<McpSdk> | undefined;

/** The SDK's client and protocol types, loaded once. */
export function loadSdk(): Promise<McpSdk> {
  core ??= Promise.all([
    import("@modelcontextprotocol/sdk/client/index.js"),
    import("@modelcontextprotocol/sdk/types.js"),
  ]).then(([client, types]) => ({ Client: client.Client, types }));
  return core;
}

/** The SDK's stdio framing and its environment defaults (for child-process servers). */
export async function loadStdio(): Promise<StdioModule & Pick<StdioClientModule, "getDefaultEnvironment">> {
  const [framing, client] = await Promise.all([
    import("@modelcontextprotocol/sdk/shared/stdio.js"),
    import("@modelcontextprotocol/sdk/client/stdio.js"),
  ]);
  return { ...framing, getDefaultEnvironment: client.getDefaultEnvironment };
}

/** The SDK's streamable HTTP client transport. */
export function loadHttp(): Promise<HttpClientModule> {
  return import("@modelcontextprotocol/sdk/client/streamableHttp.js");
}
