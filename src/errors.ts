/**
 * The errors Quiver throws or turns into tool results. Each says what happened, to what,
 * and (through `hint`) what to do.
 */

/** Why a call failed, as the model, the events and `ToolCallRecord.error.kind` report it. */
export type ToolErrorKind =
  | "invalid_arguments"
  | "unknown_tool"
  | "malformed_json"
  | "tool_error"
  | "timeout"
  | "cancelled"
  | "denied"
  | "skipped"
  | "interrupted"
  | "budget"
  | "truncated_arguments"
  | "renderer_error"
  | "host_error"
  | "guardrail";

/** A mistake in how Quiver is used (bad tool name, clashing tools, missing key). Fails the run. */
export class UserError extends Error {
  override name = "UserError";
}

/**
 * Throw from a tool to shape the message the model sees: `Tool error: <message>\nHint: <hint>`.
 * It is retried like any error (the tool's `retries`) unless `retry: false` says trying again
 * cannot help (no such order, a refused request).
 *
 * @example
 * throw new ToolError("order A12 not found", { hint: "ids look like A123", retry: false });
 */
export class ToolError extends Error {
  override name = "ToolError";
  /** What the model should do about it, sent as `Hint: <hint>` after the message. */
  readonly hint?: string;
  /** `false`: not retried, whatever the tool's `retries`. */
  readonly retry?: boolean;
  constructor(message: string, options: { hint?: string; retry?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    if (options.hint !== undefined) this.hint = options.hint;
    if (options.retry !== undefined) this.retry = options.retry;
  }
}

/** One problem with a tool's arguments: where (`path`, dotted) and what. */
export type ArgumentIssue = { path: string; message: string };

/** The arguments did not match the tool's schema. Never retried; the tool never runs. */
export class InvalidToolArguments extends ToolError {
  override name = "InvalidToolArguments";
  /** Every argument that did not match, as the model is told. */
  readonly issues: ArgumentIssue[];
  constructor(toolName: string, issues: ArgumentIssue[]) {
    super(formatInvalidArguments(toolName, issues), {
      hint: "Fix the listed arguments to match the tool's schema and call it again.",
    });
    this.issues = issues;
  }
}

const MAX_ISSUE_LINES = 10;

function formatInvalidArguments(toolName: string, issues: ArgumentIssue[]): string {
  const lines = issues.slice(0, MAX_ISSUE_LINES).map((i) => `- ${i.path || "(root)"}: ${i.message}`);
  const more = issues.length > MAX_ISSUE_LINES ? `\n(${issues.length - MAX_ISSUE_LINES} more)` : "";
  return `invalid arguments for ${toolName}:\n${lines.join("\n")}${more}`;
}

/** The run was cancelled. Thrown inside a tool, it ends the whole run (`stopReason: "cancelled"`). */
export class RunCancelled extends Error {
  override name = "RunCancelled";
  constructor(reason = "run cancelled") {
    super(reason);
  }
}

/** A budget ran out. `runId` names the run whose budget it was. */
export class BudgetExceeded extends Error {
  override name = "BudgetExceeded";
  readonly runId: string;
  /** The `Budget` field that ran out (`maxTurns`, `maxCostUsd`…). */
  readonly limit: string;
  constructor(runId: string, limit: string, message?: string) {
    super(message ?? `budget exceeded: ${limit}`);
    this.runId = runId;
    this.limit = limit;
  }
}

/** A model provider failed. `retryable` says whether trying again may help. */
export class ProviderError extends Error {
  override name = "ProviderError";
  /** The HTTP status, when the API answered with one. */
  readonly status?: number;
  /** The provider's name (`openai`, `anthropic`, a compatible server's `name`…). */
  readonly provider: string;
  /** The provider's own error type (`rate_limit_error`, `invalid_request_error`…). */
  readonly type?: string;
  /**
   * The API's error code, when its error body has one besides the type: OpenAI's
   * `model_not_found`, `context_length_exceeded`, `insufficient_quota`… (match on it instead of
   * the message).
   */
  readonly code?: string;
  readonly retryable: boolean;
  constructor(
    message: string,
    options: {
      provider: string;
      status?: number;
      type?: string;
      code?: string;
      retryable?: boolean;
      cause?: unknown;
    },
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.provider = options.provider;
    if (options.status !== undefined) this.status = options.status;
    if (options.type !== undefined) this.type = options.type;
    if (options.code !== undefined) this.code = options.code;
    this.retryable = options.retryable ?? false;
  }
}
