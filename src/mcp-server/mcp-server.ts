import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  Agent,
  type AgentConfig,
  type AgentTools,
  type Permissions,
  type RunEvent,
  type RunOptions,
  Tool,
  UserError,
} from "../index.js";
import { type AgentRunSettings, agentTool, runAgentCall } from "./agent-call.js";
import type { CallSettings } from "./call-scope.js";
import { listenHttp } from "./http.js";
import type { McpListening, McpListenOptions } from "./listen-options.js";
import { exposedTools, exposedToolsNow, sourcesOf } from "./listing.js";
import { loadServerSdk, loadStdioTransport } from "./sdk.js";
import { type Exposure, openSession } from "./session.js";
import { runToolCall } from "./tool-call.js";

/** What every `mcpServer()` takes. */
export type McpServerBaseOptions = {
  /** The server's name, as clients show it. */
  name: string;
  version: string;
  /** Told to the client at `initialize`: how to use these tools. */
  instructions?: string;
  /**
   * The rules that decide which calls run, ask or are refused. Default for tools: a
   * `StandardPermissions` in "default" mode (destructive tools ask); for an agent: the agent's own,
   * which this replaces when given.
   */
  permissions?: Permissions;
  /** How long an approval question waits for the client's answer. Default 600,000 (10 minutes); for an agent, the agent's setting. */
  approvalTimeoutMs?: number;
  /** `ctx.deps` in every tool. */
  deps?: unknown;
  /** Sees every event of every run the server starts (a call is a run): for logs, metrics, a UI. */
  onEvent?: (event: RunEvent) => void;
};

/** Options when serving tools: the loop settings an agent would give them. */
export type McpToolsOptions = McpServerBaseOptions &
  Pick<
    AgentConfig,
    | "defaultToolRetries"
    | "defaultToolTimeoutMs"
    | "maxToolOutputChars"
    | "maxImageBytes"
    | "toolResultRenderer"
  >;

/** Options when serving an agent: how its runs are started. */
export type McpAgentOptions = McpServerBaseOptions & {
  /** The tool's name. Default: the agent's name, with characters MCP does not allow as `_`. */
  toolName?: string;
  /** The tool's description. Default: a sentence saying it gives a task to the agent. */
  description?: string;
  /** Persist every run (each call is one), as `Runner.run`'s `store`. */
  store?: RunOptions["store"];
  /** Limits for each run. */
  budget?: RunOptions["budget"];
  /** Model turns per run. Default 50. */
  maxTurns?: number;
};

/**
 * An MCP transport, as the SDK defines it (`StdioServerTransport`,
 * `StreamableHTTPServerTransport`, an in-memory pair, your own): written out here so that this
 * package's types do not need the SDK's.
 */
export interface McpServerTransport {
  start(): Promise<void>;
  send(message: any, options?: any): Promise<void>;
  close(): Promise<void>;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: ((message: any, extra?: any) => void) | undefined;
  sessionId?: string | undefined;
}

/** One client connected through `connect()`. */
export type McpConnection = {
  /** Settles when the connection ends: the client went away (stdin closed), or `close()`. */
  readonly closed: Promise<void>;
  /** Ends the connection: its running calls are cancelled; resolves once they have ended. */
  close(): Promise<void>;
};

/** A Quiver agent, or tools, served to MCP clients. */
export interface QuiverMcpServer {
  readonly name: string;
  /**
   * Serves one client over `transport`; `"stdio"` (the default) is this process's stdin and
   * stdout. With stdio, nothing else may write to stdout: log to stderr.
   */
  connect(transport?: McpServerTransport | "stdio"): Promise<McpConnection>;
  /** Serves any number of clients over streamable HTTP. */
  listen(options: McpListenOptions): Promise<McpListening>;
  /** Ends every connection and listener; resolves once their calls have ended. */
  close(): Promise<void>;
}

const DEFAULT_APPROVAL_TIMEOUT_MS = 600_000;

/**
 * Serves tools, or an agent, to MCP clients (Claude Desktop, Cursor, VS Code, the MCP Inspector,
 * other agents) over stdio or streamable HTTP, on the official MCP SDK (an optional peer:
 * `npm install @modelcontextprotocol/sdk`).
 *
 * `{ tools }`: each tool with its JSON Schema, description and hints (as MCP annotations); a call
 * runs as the engine runs a model's call — validation, permissions, approvals, timeouts,
 * retries, renderers, truncation. `{ agent }`: one tool named after the agent (`{ input }`),
 * whose call is a whole run. Approvals are asked of the client through MCP elicitation, and
 * refused, never allowed, when the client cannot be asked.
 *
 * @example
 * const server = mcpServer({ tools: [lookupOrder, refund] }, { name: "orders", version: "1.0.0" });
 * await server.connect(); // stdio: the client started this process
 * // or: const { url } = await server.listen({ port: 3001 }); // http://127.0.0.1:3001/mcp
 */
export function mcpServer(source: { tools: AgentTools }, options: McpToolsOptions): QuiverMcpServer;
export function mcpServer(source: { agent: Agent<any, any> }, options: McpAgentOptions): QuiverMcpServer;
export function mcpServer(
  source: { tools: AgentTools } | { agent: Agent<any, any> },
  options: McpToolsOptions | McpAgentOptions,
): QuiverMcpServer {
  if (typeof options?.name !== "string" || options.name === "" || typeof options.version !== "string")
    throw new UserError(
      'mcpServer() needs { name, version } in its options, e.g. { name: "orders", version: "1.0.0" }',
    );
  const exposure =
    "agent" in source && source.agent !== undefined
      ? agentExposure(source.agent, options as McpAgentOptions)
      : "tools" in source && source.tools !== undefined
        ? toolsExposure(source.tools, options as McpToolsOptions)
        : undefined;
  if (!exposure) throw new UserError("mcpServer() serves { tools } or { agent }: give one of them");
  return new Served(exposure);
}

function settingsOf(options: McpServerBaseOptions): CallSettings {
  return { deps: options.deps, onEvent: options.onEvent };
}

function toolsExposure(tools: AgentTools, options: McpToolsOptions): Exposure {
  const sources = sourcesOf(tools);
  for (const entry of sources)
    if (!(entry instanceof Tool) && typeof (entry as { listTools?: unknown })?.listTools !== "function")
      throw new UserError("mcpServer({ tools }) takes tools (tool(), new Tool) and ToolHosts");
  const {
    name,
    permissions,
    approvalTimeoutMs,
    defaultToolRetries,
    defaultToolTimeoutMs,
    maxToolOutputChars,
    maxImageBytes,
    toolResultRenderer,
  } = options;
  // The agent each call's one-call run is cloned from: the tools and the loop settings. Its name
  // is what events and traces call the server.
  const base = new Agent({
    name: /^[a-zA-Z0-9_-][a-zA-Z0-9 _.-]{0,63}$/.test(name) ? name : "mcp-server",
    tools,
    ...(permissions && { permissions }),
    ...(approvalTimeoutMs !== undefined && { approvalTimeoutMs }),
    ...(defaultToolRetries !== undefined && { defaultToolRetries }),
    ...(defaultToolTimeoutMs !== undefined && { defaultToolTimeoutMs }),
    ...(maxToolOutputChars !== undefined && { maxToolOutputChars }),
    ...(maxImageBytes !== undefined && { maxImageBytes }),
    ...(toolResultRenderer && { toolResultRenderer }),
  });
  const settings = settingsOf(options);
  // Tools alone list the same every time (and a clash of their names is a UserError now, not
  // at the first request); hosts are asked at each listing.
  const fixed = sources.every((entry) => entry instanceof Tool)
    ? Promise.resolve(exposedToolsNow(sources as Tool[], permissions))
    : undefined;
  const list = (signal: AbortSignal) => fixed ?? exposedTools(sources, permissions, signal);
  return {
    info: { name: options.name, version: options.version },
    instructions: options.instructions,
    approvalTimeoutMs: approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS,
    speaksForAgent: false,
    list,
    call: (tool, args, scope) => runToolCall(base, tool.name, args, scope, settings),
  };
}

function agentExposure(agent: Agent<any, any>, options: McpAgentOptions): Exposure {
  if (!(agent instanceof Agent)) throw new UserError("mcpServer({ agent }) takes an Agent");
  const { exposed, schema } = agentTool(agent, options);
  const settings: AgentRunSettings = {
    ...settingsOf(options),
    store: options.store,
    budget: options.budget,
    maxTurns: options.maxTurns,
    permissions: options.permissions,
    approvalTimeoutMs: options.approvalTimeoutMs,
  };
  const list = Promise.resolve([exposed]);
  return {
    info: { name: options.name, version: options.version },
    instructions: options.instructions,
    approvalTimeoutMs:
      options.approvalTimeoutMs ?? agent.config.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS,
    speaksForAgent: true,
    list: () => list,
    call: (_tool, args, scope) => runAgentCall(agent, schema, args, scope, settings),
  };
}

/** The server object: its connections and listeners, so that `close()` ends them all. */
class Served implements QuiverMcpServer {
  readonly #exposure: Exposure;
  readonly #connections = new Set<McpConnection>();
  readonly #listeners = new Set<McpListening>();

  constructor(exposure: Exposure) {
    this.#exposure = exposure;
  }

  get name(): string {
    return this.#exposure.info.name;
  }

  async connect(transport: McpServerTransport | "stdio" = "stdio"): Promise<McpConnection> {
    const sdk = await loadServerSdk();
    const session = openSession(sdk, this.#exposure, undefined);
    let wire: McpServerTransport;
    let stopWatching = () => {};
    if (transport === "stdio") {
      const Stdio = await loadStdioTransport();
      wire = new Stdio();
      // The SDK's stdio transport does not notice the client going away; stdin's end is that.
      const ended = () => void wire.close();
      process.stdin.once("end", ended);
      stopWatching = () => process.stdin.off("end", ended);
    } else wire = transport;
    let markClosed!: () => void;
    const closed = new Promise<void>((resolve) => {
      markClosed = resolve;
    });
    const connection: McpConnection = {
      closed,
      close: async () => {
        await session.shutdown();
        await session.server.close().catch(() => {});
        await closed;
      },
    };
    session.server.onclose = () => {
      stopWatching();
      this.#connections.delete(connection);
      // The SDK aborted the calls of this connection; the connection has ended when they have.
      void session.settled().then(markClosed);
    };
    try {
      await session.server.connect(wire as Transport);
    } catch (error) {
      stopWatching();
      throw error;
    }
    this.#connections.add(connection);
    return connection;
  }

  async listen(options: McpListenOptions): Promise<McpListening> {
    let listening: McpListening | undefined;
    listening = await listenHttp(this.#exposure, options, () => {
      if (listening) this.#listeners.delete(listening);
    });
    this.#listeners.add(listening);
    return listening;
  }

  async close(): Promise<void> {
    await Promise.all([
      ...[...this.#connections].map((c) => c.close()),
      ...[...this.#listeners].map((l) => l.close()),
    ]);
  }
}
