import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { RunContext } from "../../src/contract/run-context.js";

/** Small pages written for the tests, in the shape real sites serve. */
export const HAND_MADE_PAGES = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../fixtures/pages",
);

export type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => unknown;

export interface TestServer {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  port: number;
  /** Every request path the server saw, in order. */
  requests: string[];
  close(): Promise<void>;
}

/** A real HTTP server on 127.0.0.1 with an ephemeral port. */
export async function startServer(handler: Handler): Promise<TestServer> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? "");
    Promise.resolve(handler(req, res)).catch((error) => {
      res.statusCode = 500;
      res.end(String(error));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Sends `body` with a content type (and optional extra headers). */
export function send(
  res: http.ServerResponse,
  status: number,
  contentType: string | undefined,
  body: string | Uint8Array,
  headers: Record<string, string> = {},
): void {
  const head: Record<string, string> = { ...headers };
  if (contentType !== undefined) head["content-type"] = contentType;
  res.writeHead(status, head);
  res.end(body);
}

/** Enough of a run context to call a tool's `execute` directly. */
export function testContext(signal: AbortSignal = new AbortController().signal): RunContext {
  return {
    runId: "run_test",
    sessionId: "session_run_test",
    userId: "anonymous",
    path: ["test"],
    deps: undefined,
    agent: "test",
    turn: 1,
    transcript: [],
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
    signal,
    toolCallId: "call_1",
    attempt: 1,
    idempotencyKey: "run_test:call_1",
    update: () => {},
    mailbox: { messages: [], next: async () => undefined },
    state: undefined,
    setState: () => {},
  };
}
