import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { serve as nodeServe } from "@hono/node-server";
import type { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { UserError } from "../index.js";
import { authenticate, isLoopback } from "../server/auth.js";
import { HttpError } from "../server/http.js";
import { checkOrigin } from "../server/origin.js";
import type { McpListening, McpListenOptions } from "./listen-options.js";
import { loadHttpTransport, loadServerSdk } from "./sdk.js";
import { type Exposure, openSession, type Session } from "./session.js";

type HttpSession = {
  transport: WebStandardStreamableHTTPServerTransport;
  session: Session;
  userId: string | undefined;
  lastSeen: number;
};

const DEFAULT_IDLE_MS = 30 * 60_000;
const DEFAULT_MAX_SESSIONS = 1_000;
const DEFAULT_MAX_SESSIONS_PER_USER = 100;
const NO_OTHER_ORIGINS: ReadonlySet<string> = new Set();

/**
 * Serves the exposure over MCP's streamable HTTP transport: one session (an SDK `Server` and its
 * transport) per client, created by its `initialize` and found again by `Mcp-Session-Id`.
 * Requests are checked as by `createServer`: `auth` (or loopback only without it: the Host, the
 * peer and any forwarded address must be this machine, which also stops DNS rebinding), then the
 * Origin of state-changing requests (a page of another site is refused; there are no CORS
 * headers, so browsers are not served). A session belongs to the user who opened it: another
 * user's id is unknown here (404).
 */
export async function listenHttp(
  exposure: Exposure,
  options: McpListenOptions,
  onClosed: () => void,
): Promise<McpListening> {
  const hostname = options.hostname ?? "127.0.0.1";
  const path = options.path ?? "/mcp";
  const auth = options.auth;
  if (!isLoopback(hostname) && auth === undefined)
    throw new UserError(
      `refusing to listen on ${hostname} without auth: anyone who can reach it could call the tools. ` +
        "Pass { auth: token } (or a function) to listen(), or listen on 127.0.0.1",
    );
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65_535)
    throw new UserError(`port must be an integer from 0 to 65535, got ${options.port}`);
  if (!path.startsWith("/")) throw new UserError(`path must start with "/", got ${JSON.stringify(path)}`);
  const idleMs = options.sessionIdleMs ?? DEFAULT_IDLE_MS;
  if (!Number.isInteger(idleMs) || idleMs < 1)
    throw new UserError(`sessionIdleMs must be a positive integer, got ${idleMs}`);
  const maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
  const maxPerUser = options.maxSessionsPerUser ?? DEFAULT_MAX_SESSIONS_PER_USER;
  for (const [name, value] of [
    ["maxSessions", maxSessions],
    ["maxSessionsPerUser", maxPerUser],
  ] as const)
    if (!Number.isInteger(value) || value < 1)
      throw new UserError(`${name} must be a positive integer, got ${value}`);
  // Load the SDK before listening, so a missing package fails here and not on a first request.
  const [sdk, Transport] = await Promise.all([loadServerSdk(), loadHttpTransport()]);
  const sessions = new Map<string, HttpSession>();

  const closeSession = async (id: string, entry: HttpSession) => {
    if (sessions.get(id) === entry) sessions.delete(id);
    await entry.session.shutdown();
    await entry.transport.close().catch(() => {});
  };

  /** `initialize`s being handled: they count against the caps before their session exists. */
  const opening = new Map<string | undefined, number>();
  let openingTotal = 0;

  /**
   * Whether one more session fits under the caps: when it does not, the user's own oldest idle
   * session is closed to make room (another user's never is), else there is no room.
   */
  const makeRoom = async (userId: string | undefined): Promise<boolean> => {
    let mine = opening.get(userId) ?? 0;
    let oldestIdle: [string, HttpSession] | undefined;
    for (const [id, entry] of sessions) {
      if (entry.userId !== userId) continue;
      mine++;
      if (entry.session.running === 0 && (!oldestIdle || entry.lastSeen < oldestIdle[1].lastSeen))
        oldestIdle = [id, entry];
    }
    const full = () => mine >= maxPerUser || sessions.size + openingTotal >= maxSessions;
    if (!full()) return true;
    if (!oldestIdle) return false;
    await closeSession(...oldestIdle);
    mine--;
    return !full();
  };

  const open = async (request: Request, userId: string | undefined): Promise<Response> => {
    if (!(await makeRoom(userId))) {
      return Response.json(
        {
          jsonrpc: "2.0",
          error: {
            code: -32000,
            message:
              "too many open MCP sessions, none of them idle: end one (DELETE with its Mcp-Session-Id) or try again later",
          },
          id: null,
        },
        { status: 503, headers: { "cache-control": "no-store", "retry-after": "30" } },
      );
    }
    opening.set(userId, (opening.get(userId) ?? 0) + 1);
    openingTotal++;
    try {
      return await startSession(request, userId);
    } finally {
      openingTotal--;
      const left = (opening.get(userId) ?? 1) - 1;
      if (left > 0) opening.set(userId, left);
      else opening.delete(userId);
    }
  };

  const startSession = async (request: Request, userId: string | undefined): Promise<Response> => {
    let entry: HttpSession | undefined;
    const transport: WebStandardStreamableHTTPServerTransport = new Transport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        if (entry) sessions.set(id, entry);
      },
    });
    const session = openSession(sdk, exposure, userId);
    entry = { transport, session, userId, lastSeen: Date.now() };
    const opened = entry;
    transport.onclose = () => {
      const id = transport.sessionId;
      if (id !== undefined && sessions.get(id) === opened) sessions.delete(id);
    };
    await session.server.connect(transport);
    const response = await transport.handleRequest(request);
    // Not an `initialize` (or a bad one): the transport answered with an error and no session began.
    if (transport.sessionId === undefined) await transport.close().catch(() => {});
    return response;
  };

  const fetch = async (request: Request, env: unknown): Promise<Response> => {
    const url = new URL(request.url);
    if (url.pathname !== path) return refusal(new HttpError(404, "not_found", `the MCP endpoint is ${path}`));
    let userId: string | undefined;
    try {
      ({ userId } = await authenticate(request, auth, remoteAddressOf(env)));
      checkOrigin(
        request,
        NO_OTHER_ORIGINS,
        "an MCP server takes no browser pages' requests: call it from a server-side client, or through a proxy of your own",
      );
    } catch (error) {
      if (error instanceof HttpError) return refusal(error);
      throw error;
    }
    const id = request.headers.get("mcp-session-id");
    if (id === null) {
      if (request.method !== "POST")
        return rpcError(400, "no Mcp-Session-Id: start a session with an initialize request (POST)");
      return open(request, userId);
    }
    const entry = sessions.get(id);
    if (!entry || entry.userId !== userId) return rpcError(404, "Session not found");
    entry.lastSeen = Date.now();
    return entry.transport.handleRequest(request);
  };

  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [id, entry] of sessions)
        if (entry.session.running === 0 && now - entry.lastSeen > idleMs) void closeSession(id, entry);
    },
    Math.min(60_000, Math.max(10, Math.floor(idleMs / 2))),
  );
  sweep.unref();

  return new Promise((resolve, reject) => {
    const http = nodeServe(
      {
        fetch,
        port: options.port,
        hostname,
        // The limits `serve()` from quiver-agents/server sets: a slow client cannot hold a
        // request open for long. Responses (a call's event stream) are not bounded.
        serverOptions: { headersTimeout: 10_000, requestTimeout: 30_000, connectionsCheckingInterval: 1_000 },
      },
      (info: AddressInfo) => {
        const host = info.family === "IPv6" ? `[${info.address}]` : info.address;
        let closing: Promise<void> | undefined;
        resolve({
          url: `http://${host}:${info.port}${path}`,
          port: info.port,
          hostname,
          close: () => {
            closing ??= (async () => {
              clearInterval(sweep);
              const stopped = new Promise<void>((done) => http.close(() => done()));
              await Promise.all([...sessions].map(([id, entry]) => closeSession(id, entry)));
              (http as { closeAllConnections?: () => void }).closeAllConnections?.();
              await stopped;
              onClosed();
            })();
            return closing;
          },
        });
      },
    );
    http.maxConnections = 2_000;
    http.once("error", (error) => {
      clearInterval(sweep);
      reject(error);
    });
  });
}

function refusal(error: HttpError): Response {
  const headers: Record<string, string> = { "cache-control": "no-store" };
  if (error.status === 401) headers["www-authenticate"] = "Bearer";
  return Response.json(
    { error: { code: error.code, message: error.message } },
    { status: error.status, headers },
  );
}

/** A JSON-RPC error the SDK's client reads (its session handling looks for 404). */
function rpcError(status: number, message: string): Response {
  return Response.json(
    { jsonrpc: "2.0", error: { code: -32000, message }, id: null },
    { status, headers: { "cache-control": "no-store" } },
  );
}

function remoteAddressOf(env: unknown): string | undefined {
  const incoming = (env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming;
  return incoming?.socket?.remoteAddress;
}
