import type { RunEvent } from "../contract/events.js";
import { RunCancelled, UserError } from "../errors.js";
import type { Message } from "../model/types.js";
import { assertSteeringMessage } from "./config/run-input.js";
import type { ActiveRun } from "./state/active-run.js";
import type { Approvals } from "./state/approval-channel.js";
import type { EventQueue } from "./state/event-queue.js";
import type { RunResult } from "./state/result.js";

/**
 * A running agent: iterate it for events, await `result()` for the outcome, `cancel()` to stop,
 * `inject()` / `followUp()` to steer it. Returned before any event is emitted; events are
 * buffered until read.
 *
 * @example
 * const handle = Runner.stream(agent, "Summarise the report");
 * for await (const ev of handle) if (ev.type === "text_delta") process.stdout.write(ev.delta);
 * const { output } = await handle.result();
 */
export class RunHandle<Output = string> implements AsyncIterable<RunEvent> {
  readonly runId: string;
  /** Answer approvals from outside the event loop: `approve(callId)`, `reject(callId, reason?)`, `release({ decision })`, `pending`. */
  readonly approvals: Approvals;
  readonly #queue: EventQueue;
  readonly #result: Promise<RunResult<Output>>;
  readonly #run: ActiveRun;
  #iterated = false;
  #settled = false;

  /** @internal Created by `Runner.stream()`. */
  constructor(run: ActiveRun, queue: EventQueue, result: Promise<RunResult<Output>>) {
    this.runId = run.runId;
    this.approvals = run.approvals;
    this.#run = run;
    this.#queue = queue;
    this.#result = result;
    // A caller that only iterates (or only cancels) must not see an unhandled rejection.
    result.then(
      () => {
        this.#settled = true;
      },
      () => {
        this.#settled = true;
      },
    );
  }

  /** The run's outcome; rejects with the error after `run_failed`. */
  result(): Promise<RunResult<Output>> {
    return this.#result;
  }

  /** Stops the run: running calls are abandoned and get `cancelled` results; it resolves with `stopReason: "cancelled"`. */
  cancel(reason = "cancelled by the caller"): void {
    if (!this.#run.control.stopper.aborted) this.#run.control.abort(new RunCancelled(reason));
  }

  /** True once `cancel()` was called or the run's signal aborted. */
  get cancelled(): boolean {
    return this.#run.control.stopper.aborted;
  }

  /**
   * Steers the run with a new user message. Calls already running finish; requested calls that
   * have not started are skipped; the message goes in before the next model request. A model
   * turn that is streaming completes first, unless `{ interrupt: true }` aborts it.
   *
   * @example
   * handle.inject("Actually, only look at the 2024 numbers.", { interrupt: true });
   */
  inject(message: string | Message, options: { interrupt?: boolean } = {}): void {
    this.#assertRunning("inject");
    assertSteeringMessage(message, this.#run.options.maxAttachmentBytes);
    this.#run.mailbox.send(toMessage(message));
    if (options.interrupt) this.#run.control.interruptModel(new Error("interrupted by a new user message"));
  }

  /** Queues a user message for when the run would otherwise stop: it then goes on with it. */
  followUp(message: string | Message): void {
    this.#assertRunning("followUp");
    assertSteeringMessage(message, this.#run.options.maxAttachmentBytes);
    this.#run.mailbox.followUp(toMessage(message));
  }

  #assertRunning(what: string): void {
    if (this.#settled || this.#run.mailbox.closed)
      throw new UserError(
        `cannot ${what}() into run ${this.runId}: it has ended; start a new run with its messages`,
      );
  }

  [Symbol.asyncIterator](): AsyncIterator<RunEvent> {
    if (this.#iterated)
      throw new UserError("a RunHandle can be iterated once; keep one `for await` loop per handle");
    this.#iterated = true;
    const queue = this.#queue;
    queue.startReading();
    return {
      next: () => queue.next(),
      // `break` stops reading, not the run: use cancel() to stop the run.
      return: async () => {
        queue.detach();
        return { value: undefined, done: true };
      },
    };
  }
}

function toMessage(message: string | Message): Message {
  return typeof message === "string" ? { role: "user", content: message } : message;
}
