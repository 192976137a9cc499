import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { ElicitRequest, ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { isAborted, raceAbort, sleep } from "../../abort.js";
import type { RunContext } from "../../contract/run-context.js";
import { UserError } from "../../errors.js";
import type { JSONSchema } from "../../model/types.js";
import { compileJsonSchema } from "../../tool/ajv.js";
import {
  DEFAULT_MAX_RESULT_BYTES,
  DEFAULT_TIMEOUT_MS,
  isStdioServer,
  type McpServerConfig,
  type McpServerOptions,
} from "./config.js";
import { type HttpTransport, httpTransport } from "./http-transport.js";
import { ProcessTransport } from "./process-transport.js";
import { loadSdk, loadStdio } from "./sdk.js";

/** One live connection to the server; replaced by a new one after it drops. */
export type Session = {
  readonly id: number;
  readonly client: Client;
  readonly process?: ProcessTransport;
  readonly http?: HttpTransport;
  /** The server announces `notifications/tools/list_changed`. */
  readonly announcesChanges: boolean;
  dead: boolean;
  probing?: boolean;
};

/** Waits before each connection attempt after the first: 0, then 250 ms, then 1 s. */
const RECONNECT_DELAYS_MS = [0, 250, 1_000];
/** How long a liveness probe after a broken HTTP stream may take. */
const PROBE_TIMEOUT_MS = 5_000;
/** How much later than our own bound the SDK's handshake timeout fires (so it never does). */
const SDK_TIMEOUT_SLACK_MS = 60_000;
/** The client name and version the server sees in `initialize`. */
const CLIENT_INFO = { name: "quiver-agents", version: "0.1.0" };

export class HostClosed extends Error {
  override name = "HostClosed";
}

export type ConnectionEvents = {
  /** The server said its tool list changed. */
  onToolsChanged(session: Session): void;
  /** A session other than the first one is up. */
  onReconnected(session: Session): void;
};

/**
 * The connection to one MCP server: opened on first use, dropped when the transport fails,
 * and opened again — with backoff — when the next call needs it. Every wait is bounded by
 * `timeoutMs` or the caller's signal.
 */
export class Connection {
  readonly label: string;
  readonly #config: McpServerConfig;
  readonly #options: McpServerOptions;
  readonly #events: ConnectionEvents;
  readonly #timeoutMs: number;
  readonly #inFlight = new Set<RunContext>();
  readonly #closing = new AbortController();
  #session: Session | undefined;
  #connecting: Promise<Session> | undefined;
  #sessions = 0;

  constructor(config: McpServerConfig, options: McpServerOptions, events: ConnectionEvents) {
    this.#config = config;
    this.#options = options;
    this.#events = events;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.label =
      options.name ??
      options.prefix ??
      (isStdioServer(config)
        ? `"${[config.command, ...(config.args ?? [])].join(" ")}"`
        : new URL(config.url).origin);
  }

  get timeoutMs(): number {
    return this.#timeoutMs;
  }

  get closed(): boolean {
    return this.#closing.signal.aborted;
  }

  /** The live session, if any (no connecting). */
  get current(): Session | undefined {
    return this.#session && !this.#session.dead ? this.#session : undefined;
  }

  /**
   * The live session, connecting (or reconnecting, with backoff) when there is none. All
   * connection attempts together end by `deadline` (a `Date.now()` value; default
   * `timeoutMs` from now), so a caller can share one budget between connecting and its own
   * requests.
   */
  async session(signal?: AbortSignal, deadline = Date.now() + this.#timeoutMs): Promise<Session> {
    if (this.closed) throw new HostClosed(`MCP server ${this.label} is closed`);
    const current = this.current;
    if (current) return current;
    this.#connecting ??= this.#connectWithBackoff(deadline).finally(() => {
      this.#connecting = undefined;
    });
    if (!signal) return await this.#connecting;
    const outcome = await raceAbort(this.#connecting, signal);
    if (isAborted(outcome)) throw signal.reason ?? new Error("aborted");
    return outcome;
  }

  /** Marks `session` as gone so the next call reconnects; closes what is left of it. */
  drop(session: Session): void {
    if (session.dead) return;
    session.dead = true;
    if (this.#session === session) this.#session = undefined;
    session.client.close().catch(() => {});
  }

  /** Records a call in progress, so an elicitation request can be tied to its run. */
  track(ctx: RunContext): () => void {
    this.#inFlight.add(ctx);
    return () => this.#inFlight.delete(ctx);
  }

  /** Ends the session (and the server process) and refuses further use. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.#closing.abort(new HostClosed(`MCP server ${this.label} is closed`));
    // A connection still being made is closed as soon as it is up (or has failed).
    const pending = this.#connecting?.catch(() => undefined);
    const sessions = [this.#session, await pending].filter((s): s is Session => s !== undefined);
    this.#session = undefined;
    await Promise.all(sessions.map((s) => this.#end(s)));
  }

  async #end(session: Session): Promise<void> {
    session.dead = true;
    // Ending an HTTP session tells the server to free it; a server that is gone must not
    // hold up close(), so the request gets a second at most.
    if (session.http?.sessionId) {
      await Promise.race([session.http.terminateSession().catch(() => {}), sleep(1_000)]);
    }
    await session.client.close().catch(() => {});
  }

  async #connectWithBackoff(deadline: number): Promise<Session> {
    let lastError: unknown;
    let attempts = 0;
    for (const delay of RECONNECT_DELAYS_MS) {
      // No attempt starts that could not finish in time: the bound is the whole connection.
      if (attempts > 0 && Date.now() + delay >= deadline) break;
      if (delay > 0) await sleep(delay, this.#closing.signal);
      const remaining = deadline - Date.now();
      if (remaining <= 0) break;
      attempts++;
      try {
        const session = await this.#connectOnce(deadline);
        if (this.closed) {
          await this.#end(session);
          throw new HostClosed(`MCP server ${this.label} is closed`);
        }
        this.#session = session;
        if (session.id > 1) this.#events.onReconnected(session);
        return session;
      } catch (error) {
        if (error instanceof UserError || error instanceof HostClosed) throw error;
        lastError = error;
      }
    }
    const message = lastError instanceof Error ? lastError.message : String(lastError);
    throw new Error(
      `could not connect to MCP server ${this.label} (${attempts} attempt${attempts === 1 ? "" : "s"} within ${this.#timeoutMs} ms): ${message}`,
      { cause: lastError },
    );
  }

  async #connectOnce(deadline: number): Promise<Session> {
    const sdk = await loadSdk();
    const config = this.#config;
    const maxBytes = this.#options.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES;
    const child = isStdioServer(config)
      ? new ProcessTransport(config, await loadStdio(), maxBytes)
      : undefined;
    const http = isStdioServer(config) ? undefined : await httpTransport(config, maxBytes);
    const transport = child ?? http!;
    // Elicitation is always declared so that a server can ask; without a handler it is
    // declined, which a server must handle (see onElicitation).
    const client = new sdk.Client(CLIENT_INFO, { capabilities: { elicitation: { form: {} } } });
    const id = ++this.#sessions;
    const partial: { session?: Session } = {};
    client.setRequestHandler(sdk.types.ElicitRequestSchema, (request, extra) =>
      this.#elicit(request, extra.signal),
    );
    client.setNotificationHandler(sdk.types.ToolListChangedNotificationSchema, () => {
      if (partial.session && !partial.session.dead) this.#events.onToolsChanged(partial.session);
    });
    client.onclose = () => {
      if (partial.session) this.drop(partial.session);
    };
    client.onerror = (error) => {
      if (partial.session) this.#onTransportError(partial.session, error);
    };
    // One budget for the whole handshake: starting the transport, `initialize`, and the
    // `initialized` notification (an HTTP POST that a server could leave hanging).
    // Counted from here, after the SDK and the transport have loaded: the deadline holds.
    const timeoutMs = Math.max(1, deadline - Date.now());
    const budget = AbortSignal.any([this.#closing.signal, AbortSignal.timeout(timeoutMs)]);
    try {
      // The MCP spec: `initialize` must never be cancelled. The SDK cancels a request whose
      // signal fires, even long after it was answered (it keeps its listener), or whose own
      // timeout passes: it gets neither. The race below bounds the wait; on timeout or close
      // the client is closed, which cancels nothing.
      const connected = client.connect(transport, { timeout: timeoutMs + SDK_TIMEOUT_SLACK_MS });
      const outcome = await raceAbort(connected, budget);
      if (isAborted(outcome)) {
        connected.catch(() => {});
        throw this.#closing.signal.aborted
          ? new HostClosed(`MCP server ${this.label} is closed`)
          : new Error("the server did not complete the MCP handshake in time");
      }
    } catch (error) {
      await client.close().catch(() => {});
      throw this.#connectFailure(error, child);
    }
    deferResponses(transport);
    const session: Session = {
      id,
      client,
      announcesChanges: client.getServerCapabilities()?.tools?.listChanged === true,
      dead: false,
      ...(child ? { process: child } : {}),
      ...(http ? { http } : {}),
    };
    partial.session = session;
    return session;
  }

  #connectFailure(error: unknown, process: ProcessTransport | undefined): Error {
    if (error instanceof UserError || error instanceof HostClosed) return error;
    const message = error instanceof Error ? error.message : String(error);
    if (!process) return new Error(message, { cause: error });
    const exit = process.exitDescription ? `; the process ${process.exitDescription}` : "";
    const stderr = process.stderrTail ? `; its stderr ends with:\n${process.stderrTail.slice(-500)}` : "";
    return new Error(`${message}${exit}${stderr}`, { cause: error });
  }

  /**
   * The HTTP transport reports a broken event stream as an error, not a close, and keeps
   * waiting for answers that will never come. A quick ping tells a dead server from a blip;
   * a dead one is dropped, which fails its calls at once instead of at their timeout.
   */
  #onTransportError(session: Session, error: Error): void {
    if (!session.http || session.dead || session.probing) return;
    if (!/SSE stream disconnected|reconnection attempts|Failed to reconnect/i.test(error.message)) return;
    session.probing = true;
    session.client
      .ping({ timeout: Math.min(this.#timeoutMs, PROBE_TIMEOUT_MS) })
      .then(
        () => {},
        () => this.drop(session),
      )
      .finally(() => {
        session.probing = false;
      });
  }

  async #elicit(request: ElicitRequest, signal: AbortSignal): Promise<ElicitResult> {
    const handler = this.#options.onElicitation;
    const params = request.params;
    if (!handler || params.mode === "url" || !("requestedSchema" in params)) return { action: "decline" };
    const ctx = this.#inFlight.size === 1 ? [...this.#inFlight][0] : undefined;
    try {
      const answer = await handler(
        {
          message: params.message,
          mode: "form",
          requestedSchema: params.requestedSchema as Record<string, unknown>,
        },
        { ...(ctx ? { ctx } : {}), server: this.label, signal },
      );
      if (answer?.action === "accept") {
        const content = answer.content ?? {};
        // An answer the server did not ask for is not sent: failing closed means declining.
        const valid = compileJsonSchema(params.requestedSchema as JSONSchema)(content);
        return valid ? { action: "accept", content } : { action: "decline" };
      }
      if (answer?.action === "cancel") return { action: "cancel" };
      return { action: "decline" };
    } catch {
      // Fail closed: a handler that breaks declines, it never accepts.
      return { action: "decline" };
    }
  }
}

/**
 * The SDK hands notifications to their handlers a microtask late but settles a request as
 * soon as its response arrives, so the progress notification a server sends right before
 * its answer would find its handler gone and be lost. Delivering responses a microtask late
 * as well restores the order the server sent them in.
 */
function deferResponses(transport: Transport): void {
  const deliver = transport.onmessage?.bind(transport);
  if (!deliver) return;
  transport.onmessage = (message, extra) => {
    if ("method" in message) deliver(message, extra);
    else queueMicrotask(() => deliver(message, extra));
  };
}
