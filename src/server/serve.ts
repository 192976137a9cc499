import type { AddressInfo } from "node:net";
import { serve as nodeServe } from "@hono/node-server";
import { UserError } from "../index.js";
import { isLoopback } from "./auth.js";
import type { QuiverServer } from "./create-server.js";

export type ServeOptions = {
  /** 0 picks a free port. */
  port: number;
  /** Default "127.0.0.1". Anything but loopback needs the server's `auth`. */
  hostname?: string;
};

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
  return new Promise((resolve, reject) => {
    const http = nodeServe({ fetch: server.fetch, port: options.port, hostname }, (info: AddressInfo) => {
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
    });
    http.once("error", reject);
  });
}
