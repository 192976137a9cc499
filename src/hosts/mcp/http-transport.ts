import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { McpHttpServer } from "./config.js";
import { NotDelivered, neverConnected } from "./delivery.js";
import { loadHttp } from "./sdk.js";

/** The HTTP transport can end its session politely (`DELETE`). */
export type HttpTransport = Transport & { terminateSession(): Promise<void> };

/**
 * The SDK's streamable HTTP transport, with one addition: a send that provably never reached
 * the server — the connection was refused, or the server no longer knows the session (a
 * restarted server answers 404, and must not have acted on it) — fails with `NotDelivered`.
 */
export async function httpTransport(config: McpHttpServer): Promise<HttpTransport> {
  const { StreamableHTTPClientTransport, StreamableHTTPError } = await loadHttp();
  const url = new URL(config.url);
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { ...config.headers } },
  });
  const send = transport.send.bind(transport);
  transport.send = async (message, options) => {
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
  return transport;
}
