import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { raceAbort } from "../../abort.js";
import { fence } from "../../builtin-tools/fence.js";
import type { RunContext } from "../../contract/run-context.js";
import { ToolError, UserError } from "../../errors.js";
import { nestedDeeperThan } from "../../json-depth.js";
import type { JSONSchema } from "../../model/types.js";
import { compileJsonSchema } from "../../tool/ajv.js";
import { ChangeFeed } from "../change-feed.js";
import type { HostedTool, ToolHost, ToolHostChange } from "../tool-host.js";
import { checkConfig, type McpServerConfig, type McpServerOptions } from "./config.js";
import { Connection, type Session } from "./connection.js";
import { NotDelivered } from "./delivery.js";
import { buildListing, diffListings, type ListedTool, type Listing } from "./listing.js";
import { oversizeOf } from "./oversize.js";
import { cleanPeerLine, cleanPeerText } from "./peer-text.js";
import { progressReporter } from "./progress.js";
import { toToolOutput } from "./results.js";
import { loadSdk } from "./sdk.js";

/** How many pages of `tools/list` are read before giving up on a server that never stops. */
const MAX_LIST_PAGES = 100;
/** Output-schema validators, by the schema's JSON (each distinct schema is compiled once). */
const outputValidators = new Map<string, ReturnType<typeof compileJsonSchema> | Error>();
const MAX_OUTPUT_VALIDATORS = 1_000;
/** Deepest structured result accepted (deeper JSON overflows the stack of what reads it). */
const MAX_RESULT_DEPTH = 1_000;
/**
 * The least time between two listings a server's change notifications cause. The first
 * change after a quiet spell is listed at once; a server that keeps announcing changes is
 * listed at most this often, however many notifications it sends.
 */
const RELIST_GAP_MS = 500;
/** How many calls refused for a too-large result are remembered, so a retry is refused too. */
const MAX_REFUSED = 256;
/** Longest server-written text (an error message, a stderr tail) quoted in a failure when not fenced. */
const MAX_PEER_ERROR_CHARS = 2_000;

/** A failure of the host, not the tool; `retryable: false` when sending the call again cannot help. */
class McpHostFailure extends Error {
  override name = "McpHostFailure";
  readonly retryable: boolean;
  constructor(message: string, options: { cause: unknown; retryable?: boolean }) {
    super(message, { cause: options.cause });
    this.retryable = options.retryable ?? true;
  }
}

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
  /** Lists again after change notifications, coalescing them, until the listing is current. */
  #announcing: Promise<void> | undefined;
  readonly #closing = new AbortController();
  /** Calls (by idempotency key) whose result was too large: a retry of one fails the same way, unsent. */
  readonly #refused = new Map<string, Error>();

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
   * never announces changes is asked every time. A tool whose definition is broken is a
   * `UserError` naming it, or — when `warn` is given (the runner gives it when it lists
   * again mid-run) — left out, with `warn` told why.
   */
  async listTools(signal?: AbortSignal, warn?: (message: string) => void): Promise<HostedTool[]> {
    const listing = await this.#currentListing(signal);
    if (listing.problems.length > 0) {
      if (!warn) throw new UserError(listing.problems[0]!);
      for (const problem of listing.problems) warn(problem);
    }
    if (warn) for (const notice of listing.notices) warn(notice);
    return listing.tools;
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
    const key = ctx.idempotencyKey;
    const refused = key === undefined ? undefined : this.#refused.get(key);
    if (refused) throw refused;
    const generation = this.#generation;
    const untrack = this.#connection.track(ctx);
    try {
      let result: CallToolResult;
      try {
        result = await this.#callWithReconnect(mcpName, hosted, args, ctx);
      } catch (error) {
        if (error instanceof McpHostFailure && !error.retryable && key !== undefined) {
          if (this.#refused.size >= MAX_REFUSED) this.#refused.delete(this.#refused.keys().next().value!);
          this.#refused.set(key, error);
        }
        throw error;
      }
      // A tool that changes the tool list (the server announces it before answering) returns
      // only once the new list is known, so the very next model request offers it.
      if (this.#generation !== generation) await raceAbort(this.#listedAfter(generation), ctx.signal);
      this.#checkStructured(result, listed);
      return toToolOutput(result, {
        fence: this.#options.fence === true,
        source: `MCP server ${this.name}, tool ${cleanPeerLine(mcpName)}`,
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
    this.#closing.abort();
    this.#changes.close();
    await this.#connection.close();
  }

  async #callWithReconnect(
    mcpName: string,
    hosted: HostedTool,
    args: unknown,
    ctx: RunContext,
  ): Promise<CallToolResult> {
    const progress = progressReporter(ctx);
    for (let attempt = 1; ; attempt++) {
      const session = await this.#connection.session(ctx.signal);
      try {
        const result = (await session.client.callTool(
          { name: mcpName, arguments: args as Record<string, unknown> },
          undefined,
          {
            signal: ctx.signal,
            timeout: this.#connection.timeoutMs,
            resetTimeoutOnProgress: true,
            onprogress: progress.report,
          },
        )) as CallToolResult;
        progress.flush();
        return result;
      } catch (error) {
        if (ctx.signal.aborted) progress.stop();
        else progress.flush();
        if (ctx.signal.aborted) throw error;
        const oversize = oversizeOf(error);
        if (oversize) throw this.#tooLarge(error, mcpName, oversize.bytes, oversize.limit);
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
    const tool = cleanPeerLine(mcpName);
    // Whatever an error says may come from the server (a JSON-RPC error's message, its
    // stderr): it is peer text, fenced like a result when results are.
    const detail = this.#peerText(error instanceof Error ? error.message : String(error));
    if (notDelivered) {
      return new McpHostFailure(`MCP server ${this.name} could not be reached for ${tool}: ${detail}`, {
        cause: error,
      });
    }
    if (lost) {
      const exit = session.process?.exitDescription;
      return new McpHostFailure(
        `MCP server ${this.name} went away during the call to ${tool}${exit ? ` (its process ${exit})` : ""}; ` +
          "the call may or may not have taken effect. The next call reconnects.",
        { cause: error },
      );
    }
    const code = (error as { code?: unknown }).code;
    if (code === -32001) {
      return new McpHostFailure(
        `MCP server ${this.name} did not answer the call to ${tool} within ${this.#connection.timeoutMs} ms`,
        { cause: error },
      );
    }
    return new McpHostFailure(`MCP server ${this.name} failed the call to ${tool}: ${detail}`, {
      cause: error,
    });
  }

  /**
   * A tool with an `outputSchema` must answer with structured content that matches it (the
   * MCP spec: clients should validate). Checked here for every listed tool, on any page. Any
   * structured content must also be of a depth the rest of the process can read.
   */
  #checkStructured(result: CallToolResult, listed: ListedTool): void {
    const tool = cleanPeerLine(listed.mcpName);
    // Before anything recursive (validation, JSON for the model, the run's events) reads it.
    if (nestedDeeperThan(result.structuredContent, MAX_RESULT_DEPTH)) {
      throw new McpHostFailure(
        `MCP server ${this.name} answered the call to ${tool} with structured content nested more than ${MAX_RESULT_DEPTH} levels deep; the call ran on the server`,
        { cause: undefined },
      );
    }
    const schema = listed.outputSchema;
    if (!schema || result.isError) return;
    if (result.structuredContent === undefined || result.structuredContent === null) {
      throw new McpHostFailure(
        `MCP server ${this.name} answered the call to ${tool} without structured content, though the tool has an output schema`,
        { cause: undefined },
      );
    }
    const validate = outputValidator(schema);
    if (validate instanceof Error) {
      throw new McpHostFailure(
        `MCP server ${this.name}: the output schema of ${tool} is invalid (${cleanPeerLine(validate.message, 300)}); its result cannot be checked`,
        { cause: validate },
      );
    }
    if (!validate(result.structuredContent)) {
      const why = (validate.errors ?? [])
        .slice(0, 3)
        .map((e) => `${e.instancePath || "/"} ${e.message ?? "is invalid"}`)
        .join("; ");
      throw new McpHostFailure(
        `MCP server ${this.name} answered the call to ${tool} with structured content that does not match the tool's output schema (${cleanPeerLine(why, 500)}); the call ran on the server`,
        { cause: undefined },
      );
    }
  }

  #tooLarge(error: unknown, mcpName: string, bytes: number, limit: number): Error {
    return new McpHostFailure(
      `MCP server ${this.name} answered the call to ${cleanPeerLine(mcpName)} with a result too large to accept ` +
        `(more than ${limit} bytes; ${bytes} arrived before it was dropped). The call ran on the server and is ` +
        "not sent again: ask for less (a smaller range, a page, a filter), or raise maxResultBytes.",
      { cause: error, retryable: false },
    );
  }

  /** Server-written text for a failure message: fenced when results are, else cleaned and bounded. */
  #peerText(text: string): string {
    if (this.#options.fence === true) {
      // Cut before fencing: the runner's own cut of long messages would drop the END marker.
      const cut = text.length > MAX_PEER_ERROR_CHARS ? `${text.slice(0, MAX_PEER_ERROR_CHARS)}…` : text;
      return `\n${fence(cut, { source: `MCP server ${this.name}` })}`;
    }
    return cleanPeerText(text, MAX_PEER_ERROR_CHARS);
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
    // Connecting, initialising and every page share one budget.
    const deadline = Date.now() + this.#connection.timeoutMs;
    const session = await this.#connection.session(undefined, deadline);
    const { types } = await loadSdk();
    const tools: unknown[] = [];
    let cursor: string | undefined;
    for (let page = 0; ; page++) {
      if (page === MAX_LIST_PAGES) {
        throw new Error(
          `MCP server ${this.name} listed more than ${MAX_LIST_PAGES} pages of tools and was still going; ` +
            "leave tools out on the server's side",
        );
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw new Error(
          `MCP server ${this.name} did not finish listing its tools within ${this.#connection.timeoutMs} ms`,
        );
      }
      // Not `client.listTools()`: the SDK rejects the whole answer for one malformed tool, and
      // keeps only the last page's output schemas. Read loosely here, checked tool by tool.
      const answer = await session.client
        .request(
          { method: "tools/list", ...(cursor ? { params: { cursor } } : {}) },
          types.PaginatedResultSchema,
          { timeout: remaining },
        )
        .catch((error: unknown) => {
          throw this.#listFailure(error);
        });
      const entries = (answer as { tools?: unknown }).tools;
      if (!Array.isArray(entries)) {
        throw new Error(`MCP server ${this.name} answered tools/list without a list of tools`);
      }
      tools.push(...entries);
      cursor = answer.nextCursor;
      if (!cursor) break;
    }
    const previous = this.#listing;
    const listing: CurrentListing = {
      ...buildListing(
        tools,
        this.#options,
        this.name,
        (entry) => types.ToolSchema.safeParse(entry),
        previous,
      ),
      session,
      generation,
    };
    this.#listing = listing;
    if (previous) for (const change of diffListings(previous, listing)) this.#changes.emit(change);
    return listing;
  }

  #listFailure(error: unknown): Error {
    const oversize = oversizeOf(error);
    if (oversize) {
      return new Error(
        `MCP server ${this.name}'s tool list is larger than ${oversize.limit} bytes; ` +
          "raise maxResultBytes, or leave tools out on the server's side",
        { cause: error },
      );
    }
    if ((error as { code?: unknown } | null)?.code === -32001) {
      return new Error(
        `MCP server ${this.name} did not answer tools/list within ${this.#connection.timeoutMs} ms`,
        { cause: error },
      );
    }
    const message = error instanceof Error ? error.message : String(error);
    return new Error(
      `MCP server ${this.name} failed to list its tools: ${cleanPeerText(message, MAX_PEER_ERROR_CHARS)}`,
      {
        cause: error,
      },
    );
  }

  /**
   * Waits for a listing that started after change `generation + 1` was announced: the one in
   * flight when it qualifies, else one more. A call waits for one listing at most.
   */
  async #listedAfter(generation: number): Promise<void> {
    try {
      if ((await this.#relist()).generation > generation) return;
      await this.#relist();
    } catch {
      // The server went away; the call's result stands, and the next listing reconnects.
    }
  }

  /**
   * A change notification marks the listing stale and starts one listing; notifications
   * that arrive meanwhile are coalesced into at most one more, `RELIST_GAP_MS` later. A
   * server flooding notifications costs one listing per gap, not one per notification.
   */
  #toolsChanged(): void {
    this.#generation++;
    if (this.#announcing || this.#closing.signal.aborted) return;
    this.#announcing = this.#announce().finally(() => {
      this.#announcing = undefined;
    });
  }

  async #announce(): Promise<void> {
    for (let first = true; this.#listing?.generation !== this.#generation; first = false) {
      if (!first && !(await pause(RELIST_GAP_MS, this.#closing.signal))) return;
      try {
        // Listing turns the bare "something changed" into added/removed/updated events.
        await this.#relist();
      } catch {
        // The server went away; the next listing or call reconnects and lists again.
        return;
      }
    }
  }
}

/** Waits `ms` without holding the process open; false when `signal` aborts first. */
function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (value: boolean) => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      resolve(value);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    timer.unref?.();
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** The validator of an output schema, or the error compiling it; compiled once per distinct schema. */
function outputValidator(schema: JSONSchema): ReturnType<typeof compileJsonSchema> | Error {
  const key = JSON.stringify(schema);
  let validator = outputValidators.get(key);
  if (validator === undefined) {
    try {
      validator = compileJsonSchema(schema);
    } catch (error) {
      validator = error instanceof Error ? error : new Error(String(error));
    }
    if (outputValidators.size >= MAX_OUTPUT_VALIDATORS) outputValidators.clear();
    outputValidators.set(key, validator);
  }
  return validator;
}
