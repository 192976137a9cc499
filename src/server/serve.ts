import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { type Http2Bindings, type HttpBindings, serve as nodeServe } from "@hono/node-server";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { UserError } from "../index.js";
import { isLoopback } from "./auth.js";
import { type CloseOptions, closeTimeout, type QuiverServer } from "./create-server.js";
import { allowDirect } from "./direct-stream.js";

export type ServeOptions = {
  /** 0 picks a free port. */
  port: number;
  /** Default "127.0.0.1". Anything but loopback needs the server's `auth`. */
  hostname?: string;
  /**
   * How long a client may take to send a request's headers, from its first byte (or from
   * connecting), in ms. Default 10,000. Past it the client gets `408` and the connection closes.
   */
  headersTimeoutMs?: number;
  /**
   * How long a client may take to send a whole request, headers and body, in ms. Default 30,000;
   * at least `headersTimeoutMs`. Past it: `408`, connection closed. The response is not bounded:
   * an event stream stays open for as long as its run goes on.
   */
  requestTimeoutMs?: number;
  /**
   * Open connections at most (default 2,000). One more is closed as soon as it is accepted,
   * before anything is read from it.
   */
  maxConnections?: number;
};

/** Defaults for the limits above; each far below Node's own (60 s, 300 s, no cap). */
const LIMITS = { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, maxConnections: 2_000 };

/** A listening server. */
export type Serving = {
  url: string;
  port: number;
  hostname: string;
  /**
   * Shuts down in order: stops accepting connections, cancels the runs the server drives and
   * waits until each has stored its end, lets every open stream send its last events and end,
   * then closes the connections that remain. All of it within `timeoutMs` (default 10,000;
   * `Infinity` waits for the runs as long as they take), and the streams get at most 5 s after
   * the runs ended; past that the connections still open are cut.
   */
  close(options?: CloseOptions): Promise<void>;
};

/**
 * Listens with Node's HTTP server. Refuses to listen beyond loopback without `auth`.
 *
 * @example
 * const serving = await serve(createServer({ agent, auth: process.env.QUIVER_TOKEN }), { port: 8080, hostname: "0.0.0.0" });
 * process.once("SIGTERM", async () => {
 *   await serving.close(); // the runs cancelled, their ends stored and sent to their streams
 *   process.exit(0);
 * });
 */
export function serve(server: QuiverServer, options: ServeOptions): Promise<Serving> {
  const hostname = options.hostname ?? "127.0.0.1";
  if (!isLoopback(hostname) && !server.hasAuth)
    throw new UserError(
      `refusing to listen on ${hostname} without auth: anyone who can reach it could run the agent. ` +
        "Pass { auth: token } (or a function) to createServer, or listen on 127.0.0.1",
    );
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65_535)
    throw new UserError(`port must be an integer from 0 to 65535, got ${options.port}`);
  const limits = connectionLimits(options);
  const serverOptions = {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    // Node looks for expired requests every 30 s by default, so a 10 s timeout would really be
    // 10 to 40 s; checking more often is a walk over the connections still sending a request.
    connectionsCheckingInterval: Math.min(1_000, Math.max(10, Math.floor(limits.headersTimeoutMs / 4))),
  };
  // Responses not yet sent in full: a shutdown lets them finish before it closes their connections.
  const responses = new Set<ServerResponse>();
  return new Promise((resolve, reject) => {
    const http = nodeServe(
      {
        // Its event streams go to Node's response directly (see direct-stream.ts).
        fetch: (request: Request, env: HttpBindings | Http2Bindings) => {
          // serve() listens with HTTP/1.1 only: its responses are Node's ServerResponse.
          if ("writeHead" in env.outgoing && !("stream" in env.outgoing))
            allowDirect(env, {
              outgoing: env.outgoing as HttpBindings["outgoing"],
              sent: RESPONSE_ALREADY_SENT,
            });
          return server.fetch(request, env);
        },
        port: options.port,
        hostname,
        serverOptions,
      },
      (info: AddressInfo) => {
        const host = info.family === "IPv6" ? `[${info.address}]` : info.address;
        resolve({
          url: `http://${host}:${info.port}`,
          port: info.port,
          hostname,
          close: async (closing = {}) =>
            shutDown(server, http as Server, responses, closeTimeout(closing.timeoutMs)),
        });
      },
    );
    // Counted by Node at accept: a connection beyond the cap is closed before a byte of it is
    // read. A 503 would need its request read first, which is what a slow client holds back.
    http.maxConnections = limits.maxConnections;
    http.on("request", (_request: IncomingMessage, response: ServerResponse) => {
      responses.add(response);
      response.once("close", () => responses.delete(response));
    });
    http.once("error", reject);
  });
}

/** At most this long for open streams to send their last events once the runs have ended. */
const STREAMS_GRACE_MS = 5_000;

/**
 * Stops listening, has the server end its runs, waits (within `timeoutMs` in all) for the
 * responses in progress — event streams sending a run's last events — to finish, then closes
 * every connection left, idle keep-alive ones included, so the process can exit.
 */
async function shutDown(
  server: QuiverServer,
  http: Server,
  responses: Set<ServerResponse>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const closed = new Promise<void>((done) => http.close(() => done()));
  await server.close(undefined, { timeoutMs });
  // Waiting on the runs may be unbounded; on a reader that stopped reading it is not.
  const until = Math.min(deadline, Date.now() + STREAMS_GRACE_MS);
  while (responses.size > 0 && Date.now() < until) {
    http.closeIdleConnections();
    await sleep(Math.min(20, Math.max(1, until - Date.now())));
  }
  http.closeAllConnections();
  await closed;
}

function connectionLimits(options: ServeOptions): typeof LIMITS {
  const limits = { ...LIMITS };
  for (const name of Object.keys(LIMITS) as Array<keyof typeof LIMITS>) {
    const value = options[name];
    if (value === undefined) continue;
    if (!Number.isInteger(value) || value < 1)
      throw new UserError(`${name} must be a positive integer, got ${value}`);
    limits[name] = value;
  }
  if (limits.headersTimeoutMs > limits.requestTimeoutMs)
    throw new UserError(
      `headersTimeoutMs (${limits.headersTimeoutMs}) must not be more than requestTimeoutMs (${limits.requestTimeoutMs}): the headers are part of the request`,
    );
  return limits;
}
