import type { TracerLike } from "../../contract/tracer.js";
import type { RunStore } from "../../store/types.js";
import type { Budget } from "./budget.js";

/** What `Runner.run()` and `Runner.stream()` accept besides the agent and input. */
export interface RunOptions<Deps = unknown> {
  /** Your dependencies (database handles, clients), reachable as `ctx.deps` in every tool. */
  deps?: Deps;
  /**
   * The run's shared state to start from (`ctx.state`, replaced by tools with `ctx.setState`): a
   * JSON value. Without it a run in a stored session starts from the state its session's latest
   * run ended with. `result.state` is what it ended with.
   */
  state?: unknown;
  /**
   * The conversation this run belongs to: with a `store`, its input is appended to the
   * transcript of the session's latest run. Default: the run's own, `session_<runId>`.
   */
  sessionId?: string;
  /** The user the run acts for (`ctx.userId`, events, stored runs). Default "anonymous". */
  userId?: string;
  /** Model turns across every agent of the run. Default 50. */
  maxTurns?: number;
  /** Further limits; exceeding them stops the run with `stopReason: "budget"`. */
  budget?: Budget;
  /** Aborting it cancels the run (`stopReason: "cancelled"`). */
  signal?: AbortSignal;
  /** Use this id instead of a fresh one. */
  runId?: string;
  /**
   * Persist the run: every event is appended here before anyone sees it, so the run can be
   * resumed after a crash (`Runner.resume`), approvals can wait across restarts, and a
   * `sessionId` continues its conversation.
   */
  store?: RunStore;
  /** How long this process's claim on the run lasts without renewal. Default 30,000. */
  leaseTtlMs?: number;
  /**
   * How long the run waits for a store that stopped answering (a database restarting, a full
   * disk) before it fails with `store_unavailable`, counted from the append that went
   * unanswered; its appends are retried meanwhile. An append that hangs ends at the store's own
   * timeout (`PostgresStore`'s `timeoutMs`), so a frozen database fails the run after the longer
   * of the two. Nothing reaches a reader before it is stored, and the run stays resumable.
   * Default 20,000.
   */
  storeWaitMs?: number;
  /**
   * An OpenTelemetry `Tracer` (needs `@opentelemetry/api`): the run emits GenAI spans
   * (`invoke_agent`, `chat`, `execute_tool`). Default: the one `instrument()` from
   * "quiver-agents/otel" set, if any; `false` turns tracing off for this run.
   */
  tracer?: TracerLike | false;
  /** Record prompts, answers, tool arguments and results on spans. Default false (they may hold personal data). */
  captureContent?: boolean;
  /**
   * The largest image, document or recording the input may carry, in decoded bytes: a larger
   * one is a `UserError` before anything is stored or sent. Default 20 MB (20,971,520).
   * Parts a tool returns are capped by the agent's `maxImageBytes` instead.
   */
  maxAttachmentBytes?: number;
}

/** `maxTurns` when a run is given none. */
export const DEFAULT_MAX_TURNS = 50;
