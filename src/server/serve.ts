import type { AddressInfo } from "node:net";
import { type Http2Bindings, type HttpBindings, serve as nodeServe } from "@hono/node-server";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { UserError } from "../index.js";
import { isLoopback } from "./auth.js";
import type { QuiverServer } from "./create-server.js";
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
  /** Stops accepting connections, ends open streams and cancels the runs the server drives. */
  close(): Promise<void>;
};

/**
 * Listens with Node's HTTP server. Refuses to listen beyond loopback without `auth`.
 *
 * @example
 * const serving = await serve(createServer({ agent, auth: process.env.QUIVER_TOKEN }), { port: 8080, hostname: "0.0.0.0" });
 * process.on("SIGINT", () => void serving.close());
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
          close: () =>
            new Promise<void>((done) => {
              server.close();
              http.close(() => done());
              (http as { closeAllConnections?: () => void }).closeAllConnections?.();
            }),
        });
      },
    );
    // Counted by Node at accept: a connection beyond the cap is closed before a byte of it is
    // read. A 503 would need its request read first, which is what a slow client holds back.
    http.maxConnections = limits.maxConnections;
    http.once("error", reject);
  });
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
