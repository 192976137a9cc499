import type { Stopper } from "../../abort.js";
import type { RunContext, RunMailbox } from "../../contract/run-context.js";
import type { Message, ToolCall, Usage } from "../../model/types.js";
import { type ChildRunRequest, START_CHILD_RUN } from "../config/agent.js";
import type { ActiveRun } from "../state/active-run.js";

/**
 * The context of one attempt of one call. Its `signal` is created only when a tool reads it —
 * most tools never do, and an AbortController plus its listeners is the largest fixed cost of
 * a call. A timeout or a stop that happens before it is read still shows: the signal is born
 * aborted.
 */
export class CallContext implements RunContext<any> {
  readonly runId: string;
  readonly parentRunId?: string;
  readonly parentCallId?: string;
  readonly path: readonly string[];
  readonly sessionId: string;
  readonly userId: string;
  readonly deps: any;
  readonly agent: string;
  readonly turn: number;
  readonly transcript: readonly Message[];
  readonly usage: Readonly<Usage>;
  readonly toolCallId: string;
  readonly attempt: number;
  readonly idempotencyKey: string;
  readonly #run: ActiveRun;
  /** The call's stop (the run's, or the call's own under `cancelSiblingsOnError`). */
  readonly #call: Stopper;
  #controller: AbortController | undefined;
  #abortedWith: unknown;
  #aborted = false;
  #unlink: (() => void) | undefined;

  readonly #toolCall: ToolCall;

  constructor(run: ActiveRun, callStop: Stopper, call: ToolCall, attempt: number, turn: number) {
    this.#run = run;
    this.#toolCall = call;
    this.#call = callStop;
    this.runId = run.runId;
    if (run.parent) {
      this.parentRunId = run.parent.run.runId;
      this.parentCallId = run.parent.callId;
    }
    this.path = run.path;
    this.sessionId = run.contextSessionId;
    this.userId = run.contextUserId;
    this.deps = run.deps;
    this.agent = run.agent.name;
    this.turn = turn;
    this.transcript = run.transcript;
    this.usage = run.usage;
    this.toolCallId = call.id;
    this.attempt = attempt;
    this.idempotencyKey = `${run.runId}:${call.id}`;
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      const controller = new AbortController();
      this.#controller = controller;
      if (this.#aborted) controller.abort(this.#abortedWith);
      else if (this.#call.aborted) controller.abort(this.#call.reason);
      else {
        const call = this.#call;
        const onAbort = () => controller.abort(call.reason);
        call.watch(onAbort);
        this.#unlink = () => call.unwatch(onAbort);
      }
    }
    return this.#controller.signal;
  }

  /** Aborts this attempt (a timeout). */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#abortedWith = reason;
    this.#controller?.abort(reason);
  }

  /** The attempt is over: stop following the call's signal. */
  release(): void {
    this.#unlink?.();
    this.#unlink = undefined;
  }

  /** Starts a child run for this call (an agent used as a tool), when the run knows how. */
  get [START_CHILD_RUN](): ((request: ChildRunRequest) => Promise<string>) | undefined {
    const run = this.#run;
    const childRuns = run.childRuns;
    return childRuns && ((request) => childRuns(run, request, this));
  }

  /** The run's mailbox, as the tool reads it (see `RunMailbox`). */
  get mailbox(): RunMailbox {
    return this.#run.mailbox.view();
  }

  get state(): unknown {
    return this.#run.state.value;
  }

  setState(next: unknown): void {
    this.#run.setState(next, this.#toolCall);
  }

  update(partial: unknown): void {
    if (this.#aborted || this.#call.aborted) return;
    this.#run.events.emit({ type: "tool_call_update", call: this.#toolCall, partial });
  }
}
