import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { raceAbort } from "../../abort.js";
import { ToolError } from "../../errors.js";
import type { RunContext } from "../../run/context.js";
import { ChangeFeed } from "../change-feed.js";
import type { HostedTool, ToolHost, ToolHostChange } from "../tool-host.js";
import { checkConfig, type McpServerConfig, type McpServerOptions } from "./config.js";
import { Connection, type Session } from "./connection.js";
import { NotDelivered } from "./delivery.js";
import { buildListing, diffListings, type Listing } from "./listing.js";
import { toToolOutput } from "./results.js";

/** How many pages of `tools/list` are read before giving up on a server that never stops. */
const MAX_LIST_PAGES = 100;

type CurrentListing = Listing & { session: Session; generation: number };

/**
 * A `ToolHost` over one MCP server, made by `mcpServer()` (see there). Besides the `ToolHost`
 * methods it has `close()`, `name` and, for a stdio server, the `pid` of its process.
 *
 * @example
 * const memory: McpToolHost = mcpServer({ command: "npx", args: ["-y", "@modelcontextprotocol/server-memory"] });
 * console.log((await memory.listTools()).map((t) => t.name), memory.pid);
 * await memory.close();
 */
export class McpToolHost implements ToolHost {
  readonly #options: McpServerOptions;
  readonly #connection: Connection;
  readonly #changes = new ChangeFeed();
  #listing: CurrentListing | undefined;
  #listingInFlight: Promise<CurrentListing> | undefined;
  /** Bumped by every list_changed notification; a listing older than it is stale. */
  #generation = 0;
  /** The listing a list_changed notification started, until it is done. */
  #announced: Promise<unknown> | undefined;

  constructor(config: McpServerConfig, options: McpServerOptions = {}) {
    checkConfig(config, options);
    this.#options = options;
    this.#connection = new Connection(config, options, {
      onToolsChanged: () => this.#toolsChanged(),
      onReconnected: () => {
        // A restarted server may offer different tools: find out, for anyone watching.
        if (this.#changes.size > 0) this.#toolsChanged();
      },
    });
  }

  /** The name used in messages: `options.name`, else the prefix, else the command or origin. */
  get name(): string {
    return this.#connection.label;
  }

  /** The server process id while a stdio server runs (for monitoring, and tests). */
  get pid(): number | undefined {
    return this.#connection.current?.process?.pid;
  }

  /**
   * The server's tools, as the runner offers them. Connects on first use. A listing is
   * reused while the server announces changes and has not announced one; a server that
   * never announces changes is asked every time.
   */
  async listTools(signal?: AbortSignal): Promise<HostedTool[]> {
    return (await this.#currentListing(signal)).tools;
  }

  async call(name: string, args: unknown, ctx: RunContext): Promise<unknown> {
    let listed = this.#listing?.byName.get(name);
    if (!listed) listed = (await this.#relist(ctx.signal)).byName.get(name);
    if (!listed) {
      throw new ToolError(`MCP server ${this.name} has no tool named "${name}" (any more)`, {
        hint: "Use one of the tools currently offered.",
      });
    }
    const { mcpName, hosted } = listed;
    const untrack = this.#connection.track(ctx);
    try {
      const result = await this.#callWithReconnect(mcpName, hosted, args, ctx);
      // A tool that changes the tool list (the server announces it before answering) returns
      // only once watchers have heard of the change, so the very next model request offers
      // the new list.
      if (this.#announced) await raceAbort(this.#announced, ctx.signal);
      return toToolOutput(result, {
        fence: this.#options.fence === true,
        source: `MCP server ${this.name}, tool ${mcpName}`,
      });
    } finally {
      untrack();
    }
  }

  /**
   * The server's tool changes as `{ kind, name }` (model-facing names), from its
   * `notifications/tools/list_changed` and from reconnecting to a server whose tools
   * differ. For a server that does not announce changes the iterable ends at once, and the
   * runner falls back to listing before every model request.
   */
  watch(signal?: AbortSignal): AsyncIterableIterator<ToolHostChange> {
    const changes = this.#changes.watch(signal);
    this.#connection.session(signal).then(
      (session) => {
        if (!session.announcesChanges) void changes.return?.();
      },
      () => {
        // Not reachable yet: keep watching; a later listing or call reconnects.
      },
    );
    return changes;
  }

  /**
   * Ends the session: a stdio server's process (and anything it started) is terminated, an
   * HTTP session is deleted. Watchers end; later calls fail. Safe to call more than once.
   */
  async close(): Promise<void> {
    this.#changes.close();
    await this.#connection.close();
  }

  async #callWithReconnect(
    mcpName: string,
    hosted: HostedTool,
    args: unknown,
    ctx: RunContext,
  ): Promise<CallToolResult> {
    for (let attempt = 1; ; attempt++) {
      const session = await this.#connection.session(ctx.signal);
      try {
        return (await session.client.callTool(
          { name: mcpName, arguments: args as Record<string, unknown> },
          undefined,
          {
            signal: ctx.signal,
            timeout: this.#connection.timeoutMs,
            resetTimeoutOnProgress: true,
            onprogress: ({ progress, total, message }) => {
              ctx.update({
                progress,
                ...(total !== undefined ? { total } : {}),
                ...(message ? { message } : {}),
              });
            },
          },
        )) as CallToolResult;
      } catch (error) {
        if (ctx.signal.aborted) throw error;
        const notDelivered = error instanceof NotDelivered;
        // `dead` is set by the transport's close before pending calls are rejected.
        const lost = notDelivered || session.dead;
        if (lost) this.#connection.drop(session);
        // Sending again is safe only if the server never saw the call, or if running it
        // twice does no harm.
        const safeToRepeat =
          notDelivered || (lost && (hosted.readOnly === true || hosted.idempotent === true));
        if (attempt === 1 && safeToRepeat && !this.#connection.closed) continue;
        throw this.#callFailure(error, mcpName, session, lost, notDelivered);
      }
    }
  }

  #callFailure(
    error: unknown,
    mcpName: string,
    session: Session,
    lost: boolean,
    notDelivered: boolean,
  ): Error {
    const detail = error instanceof Error ? error.message : String(error);
    if (notDelivered) {
      return new Error(`MCP server ${this.name} could not be reached for ${mcpName}: ${detail}`, {
        cause: error,
      });
    }
    if (lost) {
      const exit = session.process?.exitDescription;
      return new Error(
        `MCP server ${this.name} went away during the call to ${mcpName}${exit ? ` (its process ${exit})` : ""}; ` +
          "the call may or may not have taken effect. The next call reconnects.",
        { cause: error },
      );
    }
    const code = (error as { code?: unknown }).code;
    if (code === -32001) {
      return new Error(
        `MCP server ${this.name} did not answer the call to ${mcpName} within ${this.#connection.timeoutMs} ms`,
        {
          cause: error,
        },
      );
    }
    return new Error(`MCP server ${this.name} failed the call to ${mcpName}: ${detail}`, { cause: error });
  }

  async #currentListing(signal?: AbortSignal): Promise<CurrentListing> {
    const listing = this.#listing;
    const fresh =
      listing !== undefined &&
      listing.generation === this.#generation &&
      listing.session.announcesChanges &&
      listing.session === this.#connection.current;
    return fresh ? listing : await this.#relist(signal);
  }

  /** Lists again (one request at a time) and tells watchers what changed. */
  #relist(signal?: AbortSignal): Promise<CurrentListing> {
    if (!this.#listingInFlight) {
      this.#listingInFlight = this.#listOnce().finally(() => {
        this.#listingInFlight = undefined;
      });
    }
    const inFlight = this.#listingInFlight;
    if (!signal) return inFlight;
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const onAbort = () => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      inFlight.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
    });
  }

  async #listOnce(): Promise<CurrentListing> {
    const generation = this.#generation;
    const session = await this.#connection.session();
    const tools = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const answer = await session.client.listTools(cursor ? { cursor } : undefined, {
        timeout: this.#connection.timeoutMs,
      });
      tools.push(...answer.tools);
      cursor = answer.nextCursor;
      if (!cursor) break;
    }
    const previous = this.#listing;
    const listing: CurrentListing = {
      ...buildListing(tools, this.#options, this.name, previous),
      session,
      generation,
    };
    this.#listing = listing;
    if (previous) for (const change of diffListings(previous, listing)) this.#changes.emit(change);
    return listing;
  }

  #toolsChanged(): void {
    this.#generation++;
    // Listing now turns the bare "something changed" into added/removed/updated events.
    const announced = this.#relist().catch(() => {
      // The server went away; the next listing or call reconnects and lists again.
    });
    this.#announced = announced;
    void announced.finally(() => {
      if (this.#announced === announced) this.#announced = undefined;
    });
  }
}
