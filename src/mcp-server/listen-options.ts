import type { ServerAuth } from "../server/auth.js";

/** Where and how `listen()` serves streamable HTTP. */
export type McpListenOptions = {
  /** 0 picks a free port. */
  port: number;
  /** Default "127.0.0.1". Anything but loopback needs `auth`. */
  hostname?: string;
  /** The endpoint's path. Default "/mcp". */
  path?: string;
  /**
   * A bearer token (one user), or a function naming the user of a request (`null` refuses it),
   * as `createServer`'s `auth`. Without it only loopback requests are answered.
   */
  auth?: ServerAuth;
  /** A session with no request and no call running for this long is closed. Default 1,800,000 (30 minutes). */
  sessionIdleMs?: number;
  /**
   * Most sessions open at once, all users together. Default 1,000. Past it an `initialize`
   * closes the oldest idle session of the same user to make room, or gets a 503.
   */
  maxSessions?: number;
  /** Most sessions one user (or, without `auth`, every local client) has open at once. Default 100; past it, as above. */
  maxSessionsPerUser?: number;
};

/** A listening MCP endpoint. */
export type McpListening = {
  /** The endpoint, e.g. `http://127.0.0.1:3001/mcp`. */
  url: string;
  port: number;
  hostname: string;
  /** Stops listening and closes every session (their calls are cancelled) once they have ended. */
  close(): Promise<void>;
};
