import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { ElicitRequestFormParams } from "@modelcontextprotocol/sdk/types.js";
import { CallGate } from "./call-gate.js";
import { type CallScope, errorResult, type McpToolResult } from "./call-scope.js";
import { elicitationChannel } from "./elicitation.js";
import type { ExposedTool } from "./listing.js";
import { ProgressReporter } from "./progress.js";
import type { ServerSdk } from "./sdk.js";

/** What a connection serves: the tool list and how a call runs. Shared by every connection of one `mcpServer()`. */
export interface Exposure {
  readonly info: { name: string; version: string };
  readonly instructions: string | undefined;
  readonly approvalTimeoutMs: number;
  /** True for an exposed agent: approval questions name the agent that asks. */
  readonly speaksForAgent: boolean;
  list(signal: AbortSignal): Promise<ExposedTool[]>;
  call(
    tool: ExposedTool,
    args: Record<string, unknown> | undefined,
    scope: CallScope,
  ): Promise<McpToolResult>;
}

/** One client's connection: an SDK `Server` with the exposure's handlers. */
export type Session = {
  readonly server: Server;
  /** Calls of this connection still running. */
  readonly running: number;
  /** Settles when every call of this connection has ended. */
  settled(): Promise<void>;
  /**
   * Cancels the calls of this connection and resolves once their answers (cancelled results)
   * are handed to the transport: closing the server answers its clients instead of leaving
   * their requests to time out.
   */
  shutdown(): Promise<void>;
};

/**
 * An SDK `Server` (the low-level one: the exposed tools come with their own JSON Schemas, which
 * the high-level `McpServer` would want as Zod) answering `tools/list` and `tools/call` for one
 * connection. `userId` is who the HTTP `auth` said the caller is; calls run as that user.
 */
export function openSession(sdk: ServerSdk, exposure: Exposure, userId: string | undefined): Session {
  const { types } = sdk;
  const server = new sdk.Server(exposure.info, {
    capabilities: { tools: { listChanged: false } },
    ...(exposure.instructions !== undefined && { instructions: exposure.instructions }),
  });
  const gate = new CallGate();
  const calls = new Set<Promise<unknown>>();
  const closing = new AbortController();

  server.setRequestHandler(types.ListToolsRequestSchema, async (_request, extra) => ({
    tools: (await exposure.list(extra.signal)).map(({ parallel: _parallel, ...definition }) => definition),
  }));

  server.setRequestHandler(types.CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args } = request.params;
    const tool = (await exposure.list(extra.signal)).find((t) => t.name === name);
    // An unknown name is a protocol error (the client's list is stale or wrong), not a result.
    // A plain error with a code: McpError puts "MCP error -32602: " into its message, and the
    // client's McpError puts it in again.
    if (!tool)
      throw Object.assign(new Error(`Unknown tool: ${name}`), { code: types.ErrorCode.InvalidParams });
    const token = extra._meta?.progressToken;
    const progress =
      token === undefined
        ? undefined
        : new ProgressReporter((p) =>
            extra.sendNotification({
              method: "notifications/progress",
              params: { progressToken: token, ...p },
            }),
          );
    const approvals = elicitationChannel(
      {
        canElicit: () => server.getClientCapabilities()?.elicitation?.form !== undefined,
        elicit: (params, options) =>
          server.elicitInput({ mode: "form", ...params } as ElicitRequestFormParams, {
            ...options,
            // Over HTTP, the question goes out on the stream of the call it is about.
            relatedRequestId: extra.requestId,
          }),
      },
      { timeoutMs: exposure.approvalTimeoutMs, speaksForAgent: exposure.speaksForAgent },
    );
    const signal = AbortSignal.any([extra.signal, closing.signal]);
    const scope: CallScope = {
      signal,
      approvals,
      progress,
      userId,
      requestId: extra.requestId,
      clientName: server.getClientVersion()?.name,
    };
    const work = (async (): Promise<McpToolResult> => {
      let leave: () => void;
      try {
        leave = await gate.enter(!tool.parallel, signal);
      } catch {
        progress?.end();
        return errorResult(`${name} was cancelled before it started`);
      }
      try {
        return await exposure.call(tool, args, scope);
      } finally {
        leave();
        progress?.end();
      }
    })();
    calls.add(work);
    try {
      return await work;
    } finally {
      calls.delete(work);
    }
  });

  const settled = async () => {
    while (calls.size > 0) await Promise.allSettled([...calls]);
  };
  return {
    server,
    get running() {
      return calls.size;
    },
    settled,
    shutdown: async () => {
      closing.abort(new Error("the MCP server is closing"));
      await settled();
      // The SDK sends a handler's answer a few ticks after it settles.
      await new Promise((resolve) => setImmediate(resolve));
    },
  };
}
