import dns from "node:dns";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import type { Duplex } from "node:stream";
import type { AddressPolicy } from "./address-policy.js";

/** The shape of `dns.lookup` as `net.connect` calls it. Inject one to test or to use split-horizon DNS. */
export type LookupFunction = (
  hostname: string,
  options: dns.LookupOptions,
  callback: (
    error: NodeJS.ErrnoException | null,
    address: string | dns.LookupAddress[],
    family?: number,
  ) => void,
) => void;

export interface GuardedAgentOptions {
  policy: AddressPolicy;
  /** DNS resolution; `dns.lookup` by default. */
  lookup?: LookupFunction | undefined;
  /** A connection (TCP, and TLS for https) that takes longer than this fails. */
  connectTimeoutMs: number;
  /** An idle pooled connection is closed after this long (sooner when the server says so). Default 4,000 ms. */
  idleTimeoutMs?: number;
}

/** One keep-alive pool per scheme, both guarded. */
export interface GuardedAgents {
  http: http.Agent;
  https: https.Agent;
  /** Closes every pooled and open connection. */
  destroy(): void;
}

type Connect = (options: net.NetConnectOpts & Record<string, unknown>) => Duplex;
type Callback = (error: Error | null, socket?: Duplex) => void;

/**
 * A pair of `node:http` / `node:https` keep-alive agents that check every connection they
 * open, at connect time: an IP literal before the socket is created, a host name through the
 * DNS answer the socket will actually use. Checking the answer that is used (rather than
 * resolving once to validate and again to connect) is what closes DNS rebinding, and
 * checking literals closes the hole a lookup hook alone leaves (`net.connect` never calls
 * it for an address).
 *
 * @example
 * const agents = createGuardedAgents({ policy: new AddressPolicy(), connectTimeoutMs: 10_000 });
 * http.get("http://example.com/", { agent: agents.http }, (res) => res.resume());
 * agents.destroy();
 */
export function createGuardedAgents(options: GuardedAgentOptions): GuardedAgents {
  const { policy, connectTimeoutMs } = options;
  const resolve: LookupFunction = options.lookup ?? (dns.lookup as unknown as LookupFunction);

  const guardedLookup: LookupFunction = (hostname, lookupOptions, callback) => {
    resolve(hostname, { ...lookupOptions, all: true }, (error, result) => {
      if (error) return callback(error, "");
      const addresses: dns.LookupAddress[] = Array.isArray(result)
        ? result
        : [{ address: result, family: net.isIP(result) }];
      if (addresses.length === 0) return callback(notFound(hostname), "");
      try {
        // Every answer is checked, not only the first: the socket may try them all.
        for (const { address } of addresses) policy.check(hostname, address);
      } catch (blocked) {
        return callback(blocked as NodeJS.ErrnoException, "");
      }
      if (lookupOptions.all) return callback(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };

  /** Checks, then connects with the guarded lookup and a deadline; `undefined` after a refusal. */
  const guard = (
    connectOptions: Record<string, unknown>,
    callback: Callback,
    connect: Connect,
    connectedEvent: "connect" | "secureConnect",
  ): Duplex | undefined => {
    // (`path` is the request's path here; the agent sets it to `socketPath` when there is one.)
    if (connectOptions.socketPath !== undefined) {
      callback(new Error("the guarded agent connects to network hosts only, not to local sockets"));
      return undefined;
    }
    const host = String(connectOptions.host ?? "localhost").replace(/^\[|\]$/g, "");
    if (net.isIP(host)) {
      try {
        policy.check(host, host);
      } catch (blocked) {
        callback(blocked as Error);
        return undefined;
      }
    }
    const socket = connect({ ...connectOptions, host, lookup: guardedLookup } as never);
    const timer = setTimeout(() => {
      const error: NodeJS.ErrnoException = new Error(
        `connect ETIMEDOUT ${host}:${String(connectOptions.port)} (no connection within ${connectTimeoutMs.toLocaleString("en-US")} ms)`,
      );
      error.code = "ETIMEDOUT";
      socket.destroy(error);
    }, connectTimeoutMs);
    const done = () => clearTimeout(timer);
    socket.once(connectedEvent, done);
    socket.once("close", done);
    return socket;
  };

  const agentOptions: http.AgentOptions = {
    keepAlive: true,
    // Free sockets close after this (Node's agent shortens it to a server's Keep-Alive hint).
    timeout: options.idleTimeoutMs ?? 4_000,
    scheduling: "lifo",
  };

  class GuardedHttpAgent extends http.Agent {
    override createConnection(
      connectOptions: Record<string, unknown>,
      callback: Callback,
    ): Duplex | undefined {
      return guard(connectOptions, callback, net.createConnection as Connect, "connect");
    }
  }

  class GuardedHttpsAgent extends https.Agent {
    override createConnection(
      connectOptions: Record<string, unknown>,
      callback: Callback,
    ): Duplex | undefined {
      // https.Agent's own createConnection adds TLS session reuse around tls.connect.
      const tlsConnect: Connect = (o) => super.createConnection(o as never) as unknown as Duplex;
      return guard(connectOptions, callback, tlsConnect, "secureConnect");
    }
  }

  const agents = {
    http: new GuardedHttpAgent(agentOptions) as http.Agent,
    https: new GuardedHttpsAgent(agentOptions) as https.Agent,
    destroy() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
  return agents;
}

function notFound(hostname: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
  error.code = "ENOTFOUND";
  return error;
}
