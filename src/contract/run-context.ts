import type { Message, Usage } from "../model/types.js";

/**
 * The live, per-run handle a tool receives as `execute`'s second argument and can read
 * anywhere inside its call with `getRunContext()`. One object per call attempt.
 */
export interface RunContext<Deps = unknown> {
  /** The id of the run this call belongs to. */
  readonly runId: string;
  /** In a child run (an agent used as a tool): the id of the run that started it. */
  readonly parentRunId?: string;
  /** In a child run: the id of the parent run's call that started it. */
  readonly parentCallId?: string;
  /** Names of the agents from the root run down to this one (`["root", "researcher"]`). */
  readonly path: readonly string[];
  /**
   * The conversation this run belongs to: the `sessionId` it was given, else one of its own
   * (`session_<runId>`, the same after a resume). Always set inside a run.
   */
  readonly sessionId: string;
  /** The user the run acts for: the `userId` it was given, else `"anonymous"`. Always set inside a run. */
  readonly userId: string;
  /**
   * Your dependencies (`Runner.run(agent, input, { deps })`): `unknown` until you say their
   * type, e.g. `execute: (args, ctx: RunContext<Deps>) => …` or `getRunContext<Deps>()`.
   */
  readonly deps: Deps;
  /** The name of the agent running this call. */
  readonly agent: string;
  /** The turn number (1-based) whose model response requested this call. */
  readonly turn: number;
  /** The transcript so far. Read-only: the runner owns it. */
  readonly transcript: readonly Message[];
  /** The run's usage so far. */
  readonly usage: Readonly<Usage>;
  /** Aborted when this attempt times out or the run is cancelled. Pass it to fetch and friends. */
  readonly signal: AbortSignal;
  /** The call's id, unique within the run. */
  readonly toolCallId: string;
  /** 1 for the first attempt, 2 for the first retry… */
  readonly attempt: number;
  /** `runId:toolCallId`: stable across retries and resumes, for exactly-once side effects. */
  readonly idempotencyKey: string;
  /** Report progress; observers see it as a `tool_call_update` event. */
  update(partial: unknown): void;
  /** Messages sent to the run while it works (`handle.inject`, a parent run's): read them, or wait for the next. */
  readonly mailbox: RunMailbox;
  /**
   * The run's shared state: a JSON value the caller started it with (`RunOptions.state`, or what
   * its session ended with; an AG-UI client's `state`), read and replaced by tools. Frozen: change
   * it with `setState`. Child runs (agents as tools) share their root run's.
   */
  readonly state: unknown;
  /**
   * Replaces the shared state with `next` — or, when `next` is a function, with what it returns
   * given the current state (safe beside the turn's other calls) — as plain JSON (a Date becomes
   * its ISO string); observers see a `state_updated` event with it whole.
   */
  setState(next: unknown): void;
}

/**
 * Messages sent to a running agent — by its caller (`handle.inject()`, the server's
 * `/api/runs/:id/inject`), or to a run above it — that a tool can read while it works. It is the
 * steering queue itself: the model still reads each message before its next request, after which
 * it is no longer pending here.
 *
 * @example
 * execute: async ({ query }, ctx) => {
 *   for (const page of pages(query)) {
 *     if (ctx.mailbox.messages.some((m) => m.content === "stop")) return "stopped early, as asked";
 *     await crawl(page);
 *   }
 * }
 */
export interface RunMailbox {
  /** Messages that arrived and the model has not read yet, oldest first (a run's ancestors' included). */
  readonly messages: readonly Message[];
  /** The next message to arrive; `undefined` if `signal` aborts or `timeoutMs` passes first. */
  next(options?: { signal?: AbortSignal; timeoutMs?: number }): Promise<Message | undefined>;
}
