import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage, MessageExtraInfo } from "@modelcontextprotocol/sdk/types.js";
import { boundedFetch } from "./bounded-fetch.js";
import type { McpHttpServer } from "./config.js";
import { NotDelivered, neverConnected } from "./delivery.js";
import { coalesceListChanged } from "./notice-coalescing.js";
import { loadHttp } from "./sdk.js";

/** The HTTP transport can end its session politely (`DELETE`). */
export type HttpTransport = Transport & { terminateSession(): Promise<void> };

/**
 * The SDK's streamable HTTP transport, with one addition: a send that provably never reached
 * the server — the connection was refused, or the server no longer knows the session (a
 * restarted server answers 404, and must not have acted on it) — fails with `NotDelivered`;
 * and every message it receives is bounded by `maxMessageBytes` (see `boundedFetch`).
 */
export async function httpTransport(config: McpHttpServer, maxMessageBytes: number): Promise<HttpTransport> {
  const { StreamableHTTPClientTransport, StreamableHTTPError } = await loadHttp();
  const url = new URL(config.url);
  /** Requests sent and not yet answered. */
  const awaiting = new Set<string | number>();
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { ...config.headers } },
    fetch: boundedFetch(maxMessageBytes, awaiting),
  });
  const send = transport.send.bind(transport);
  transport.send = async (message, options) => {
    if ("method" in message && "id" in message && message.id !== undefined) awaiting.add(message.id);
    // A request given up on (timeout, abort) is answered by nothing any more.
    if ("method" in message && message.method === "notifications/cancelled") {
      awaiting.delete((message.params as { requestId?: string | number } | undefined)?.requestId ?? "");
    }
    try {
      await send(message, options);
    } catch (error) {
      if (neverConnected(error)) {
        throw new NotDelivered(`could not connect to the MCP server at ${url.origin}`, { cause: error });
      }
      if (error instanceof StreamableHTTPError && error.code === 404 && transport.sessionId !== undefined) {
        throw new NotDelivered("the MCP server no longer knows this session (it restarted?)", {
          cause: error,
        });
      }
      throw error;
    }
  };
  // The SDK sets `onmessage` after this returns (at connect): wrap whatever it sets, to
  // track answered requests and fold change-notification floods.
  let deliver: Transport["onmessage"];
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    get: () => deliver,
    set: (handler: Transport["onmessage"]) => {
      deliver =
        handler &&
        coalesceListChanged((message: JSONRPCMessage, extra?: MessageExtraInfo) => {
          if (!("method" in message) && "id" in message && message.id !== undefined) {
            awaiting.delete(message.id);
          }
          handler(message, extra);
        });
    },
  });
  return transport;
}
