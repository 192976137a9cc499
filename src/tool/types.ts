import type { Guardrails } from "../contract/guardrails.js";
import type { CallDescription, PermissionDecision } from "../contract/permissions.js";
import type { RunContext } from "../contract/run-context.js";
import type { ContentBlock } from "../model/types.js";

/**
 * What `execute` may return. Strings pass through; `{ content, details }` sends `content`
 * blocks to the model and `details` only to observers; anything else is rendered as JSON.
 */
export type ToolOutput = { content: ContentBlock[]; details?: unknown };

/** Wraps one attempt of a call: call `invoke(args, ctx)` to go on, or answer without it. */
export type ToolPolicy<Args = any> = (
  invoke: (args: Args, ctx: RunContext<any>) => Promise<unknown>,
  args: Args,
  ctx: RunContext<any>,
) => Promise<unknown>;

/**
 * Turns a successful raw result into what the model reads. On `tool()` it is typed by what
 * `execute` returns (put it after `execute` in the object literal so TypeScript infers that first).
 *
 * @example
 * tool({ name: "orders", parameters: z.object({}), execute: async () => [{ id: "A1" }],
 *   resultRenderer: (orders) => orders.map((o) => o.id).join("\n") });
 */
export type ResultRenderer<Value = unknown> = (
  value: Value,
  ctx: RunContext<any>,
) => string | ContentBlock[] | ToolOutput;

/** The wait between a tool's attempts: `initialMs`, times `factor` per retry, capped at `maxMs`. */
export type RetryBackoff = {
  /** Milliseconds before the first retry. Default 200. */
  initialMs?: number;
  /** Each further wait is this many times the previous one. Default 2. */
  factor?: number;
  /** The longest wait, in milliseconds. Default 5,000. */
  maxMs?: number;
  /** Wait a random time between half and all of the delay, so many runs do not retry in lockstep. Default true. */
  jitter?: boolean;
};

/** Decides whether a call needs a human's approval, from its validated arguments. */
export type ApprovalPredicate<Args = any> = (args: Args, ctx: RunContext<any>) => boolean | Promise<boolean>;

/** Every option a tool may carry besides its name, description, parameters and body. */
export interface ToolOptions<Args = any, Result = unknown> {
  /** OpenAI strict mode: closed objects, every property required, optional ones nullable. Default off. */
  strict?: boolean;
  /** `false` makes the call a barrier: in-flight calls finish first, it runs alone. Default true. */
  parallel?: boolean;
  /** Attempts after the first. Default: the agent's `defaultToolRetries` (0). */
  retries?: number;
  /** The wait between attempts. Default `{ initialMs: 200, factor: 2, maxMs: 5000, jitter: true }`. */
  retryBackoff?: RetryBackoff;
  /** Milliseconds per attempt; aborts `ctx.signal`. Default: the agent's `defaultToolTimeoutMs` (none). */
  timeoutMs?: number;
  /** Cap on the rendered text, in characters (head + tail kept). Default: the agent's `maxToolOutputChars` (200,000). */
  maxOutputChars?: number;
  /** Turns a successful value into what the model reads. Default: the agent's `toolResultRenderer`, then JSON. */
  resultRenderer?: ResultRenderer<Result>;
  /** A call waits for a person's approval: always (`true`), or when the predicate says so. Never bypassed by a permission mode. */
  needsApproval?: boolean | ApprovalPredicate<Args>;
  /** Wrappers around one attempt (caching, rate limits, fakes). First = outermost. */
  policies?: ToolPolicy<Args>[];
  /** It changes or deletes something: the default permission mode asks before it runs. */
  destructive?: boolean;
  /** It only reads (the opposite of `destructive`): a hint for permissions and MCP clients. */
  readOnly?: boolean;
  /** Safe to run again after a crash mid-call (a resumed run runs it again instead of reporting it `interrupted`). */
  idempotent?: boolean;
  /** Its output is third-party text (web pages, MCP servers): once it enters a run, destructive calls ask. */
  untrustedOutput?: boolean;
  /** A successful call ends the run (`stopReason: "ends_turn"`). */
  endsTurn?: boolean;
  /**
   * The tool's own permission rule for a call's arguments (the workspace shell's command
   * prefixes, the edit tools' protected paths): `deny` refuses in every mode, `allow` stands in
   * for the person a destructive call would ask, `ask` sends the call to one — even where
   * `acceptEdits` would pass it. `undefined` leaves the decision to the permission mode.
   */
  permissionRule?: (args: Args) => PermissionDecision | undefined;
  /** What an approval prompt shows about a call besides the reason: a line, and e.g. a diff (`details`). */
  describeCall?: (args: Args, ctx: RunContext<any>) => CallDescription | Promise<CallDescription>;
  /** A file-edit tool: `acceptEdits` lets it run without asking, unless its `permissionRule` asks. */
  editsFiles?: boolean;
  /** At most this many calls of this tool run at once, across every run in the process (rate-limited APIs). */
  concurrency?: number;
  /** A human-readable name for UIs. */
  label?: string;
  /** `"worker"` runs `execute` on a worker thread that a timeout or cancel really kills. Default `"inline"`. */
  isolate?: "inline" | "worker";
  /**
   * Checks around each call: `input` before it runs (it sees the validated arguments), `output`
   * after it succeeds (it sees the result). A trip is an error result the model reads
   * (`kind: "guardrail"`): the call does not run, or its result is withheld.
   */
  guardrails?: Guardrails;
}
