import type { RunContext } from "../../contract/run-context.js";
import { UserError } from "../../errors.js";

/** An MCP server Quiver starts as a child process and talks to over stdin/stdout. */
export type McpStdioServer = {
  command: string;
  args?: string[];
  /**
   * Added to a minimal inherited environment (HOME, LOGNAME, PATH, SHELL, TERM, USER): a
   * third-party server does not see your API keys unless you pass them here.
   */
  env?: Record<string, string>;
  cwd?: string;
  /**
   * The server's stderr. `"pipe"` (default) keeps its last lines for error messages (a
   * server that dies says why); `"inherit"` shows it on your stderr; `"ignore"` drops it.
   */
  stderr?: "pipe" | "inherit" | "ignore";
};

/** An MCP server reached over streamable HTTP. */
export type McpHttpServer = {
  url: string | URL;
  /** Sent with every request (an `Authorization` header, for instance). */
  headers?: Record<string, string>;
};

export type McpServerConfig = McpStdioServer | McpHttpServer;

/** What a server's `elicitation/create` request asks of the user. */
export type McpElicitation = {
  /** The server's question. */
  message: string;
  /** `"form"`: answer with `content` matching `requestedSchema`. */
  mode: "form";
  requestedSchema: Record<string, unknown>;
};

/** The answer to an elicitation. `content` only with `"accept"`. */
export type McpElicitationAnswer = {
  action: "accept" | "decline" | "cancel";
  content?: Record<string, string | number | boolean | string[]>;
};

/**
 * Answers a server's elicitation request. `ctx` is the run context of the tool call in
 * progress on this server when there is exactly one (the request then almost surely belongs
 * to it), otherwise undefined. `signal` aborts when the server gives up on the request.
 */
export type McpElicitationHandler = (
  request: McpElicitation,
  context: { ctx?: RunContext; server: string; signal: AbortSignal },
) => McpElicitationAnswer | Promise<McpElicitationAnswer>;

/** Which of a server's tools to offer, by the server's own tool names (before any prefix). */
export type McpToolFilter = readonly string[] | ((name: string) => boolean);

/** Decides per call whether an MCP tool call needs approval. `tool` is the server's own name. */
export type McpApprovalPredicate = (
  tool: string,
  args: Record<string, unknown>,
  ctx: RunContext,
) => boolean | Promise<boolean>;

export interface McpServerOptions {
  /**
   * Names this server's tools `prefix__name`. Give every server a prefix when an agent uses
   * several: two tools with the same name are a `UserError` at run start.
   */
  prefix?: string;
  /** A name for messages and fence sources. Default: the prefix, else the server's own name. */
  name?: string;
  /**
   * `true` for every tool, a list of the server's tool names, or a predicate per call. It
   * is never bypassed by a permission mode.
   */
  needsApproval?: boolean | readonly string[] | McpApprovalPredicate;
  /**
   * Whether the server's tool annotations (`readOnlyHint`, `destructiveHint`,
   * `idempotentHint`) may relax a guard: `true` for every tool, or a list or predicate of the
   * server's tool names. Default: none — annotations are the server's word, so every tool
   * counts as destructive (it asks for approval) and as unsafe to send twice. Trust only a
   * server you control or vet.
   */
  trustAnnotations?: boolean | McpToolFilter;
  /**
   * Bound in ms (default 60,000) on connecting and listing together — starting the process
   * or reaching the URL, `initialize`, and every page of `tools/list`, reconnection attempts
   * included — and, separately, on each call. A call's timer restarts at each progress
   * notification: a long job that reports progress is alive.
   */
  timeoutMs?: number;
  /**
   * Largest message accepted from the server, in bytes (default 16 MiB). A larger result is
   * dropped unread as it arrives and its call fails with a `host_error` saying so; the call
   * is not sent again, and the connection stays up.
   */
  maxResultBytes?: number;
  include?: McpToolFilter;
  exclude?: McpToolFilter;
  /**
   * Wrap every text result (and error text) between fence markers with `fence()`, and tell
   * the model what the markers mean in each tool's description. Default false.
   */
  fence?: boolean;
  /** Mark results as third-party content (taints the run for destructive tools). Default true. */
  untrustedOutput?: boolean;
  /** Answers the server's elicitation requests. Without it every request is declined. */
  onElicitation?: McpElicitationHandler;
}

export const DEFAULT_TIMEOUT_MS = 60_000;
export { DEFAULT_MAX_RESULT_BYTES } from "./oversize.js";

const PREFIX_PATTERN = /^[a-zA-Z0-9_-]{1,40}$/;

/** Checks a config and options up front, where a mistake is cheap to find. */
export function checkConfig(config: McpServerConfig, options: McpServerOptions): void {
  const isStdio = typeof (config as McpStdioServer)?.command === "string";
  const isHttp =
    typeof (config as McpHttpServer)?.url === "string" || (config as McpHttpServer)?.url instanceof URL;
  if (isStdio === isHttp) {
    throw new UserError(
      "mcpServer() takes { command, args?, env?, cwd? } for a local server or { url, headers? } for a remote one",
    );
  }
  if (isHttp) {
    let url: URL;
    try {
      url = new URL((config as McpHttpServer).url);
    } catch {
      throw new UserError(
        `mcpServer(): ${JSON.stringify(String((config as McpHttpServer).url))} is not a URL`,
      );
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new UserError(`mcpServer(): the URL must be http(s), got ${url.protocol}`);
    }
  } else if ((config as McpStdioServer).command.trim() === "") {
    throw new UserError("mcpServer(): command is empty");
  }
  if (options.prefix !== undefined && !PREFIX_PATTERN.test(options.prefix)) {
    throw new UserError(
      `mcpServer(): invalid prefix ${JSON.stringify(options.prefix)}: use 1-40 letters, digits, "_" or "-"`,
    );
  }
  if (
    options.maxResultBytes !== undefined &&
    !(Number.isSafeInteger(options.maxResultBytes) && options.maxResultBytes >= 1024)
  ) {
    throw new UserError(
      `mcpServer(): maxResultBytes must be a whole number of bytes, at least 1024, got ${options.maxResultBytes}`,
    );
  }
  if (options.timeoutMs !== undefined && !(options.timeoutMs > 0)) {
    throw new UserError(
      `mcpServer(): timeoutMs must be a positive number of milliseconds, got ${options.timeoutMs}`,
    );
  }
}

export function isStdioServer(config: McpServerConfig): config is McpStdioServer {
  return typeof (config as McpStdioServer).command === "string";
}

/** Whether `filter` selects `name` (an absent filter selects nothing). */
export function matches(filter: McpToolFilter | undefined, name: string): boolean {
  if (filter === undefined) return false;
  return typeof filter === "function" ? filter(name) : filter.includes(name);
}
