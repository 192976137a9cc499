import { RunCancelled, UserError } from "../errors.js";
import type { Approvals } from "./approvals.js";
import type { EventQueue } from "./event-queue.js";
import type { RunEvent } from "./events.js";
import type { RunResult } from "./result.js";

/**
 * A running agent: iterate it for events, await `result()` for the outcome, `cancel()` to stop.
 * Returned before any event is emitted; events are buffered until read.
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
  readonly #controller: AbortController;
  #iterated = false;

  /** @internal Created by `Runner.stream()`. */
  constructor(
    runId: string,
    queue: EventQueue,
    result: Promise<RunResult<Output>>,
    controller: AbortController,
    approvals: Approvals,
  ) {
    this.runId = runId;
    this.approvals = approvals;
    this.#queue = queue;
    this.#controller = controller;
    this.#result = result;
    // A caller that only iterates (or only cancels) must not see an unhandled rejection.
    result.catch(() => {});
  }

  /** The run's outcome; rejects with the error after `run_failed`. */
  result(): Promise<RunResult<Output>> {
    return this.#result;
  }

  /** Stops the run: running calls are abandoned and get `cancelled` results; it resolves with `stopReason: "cancelled"`. */
  cancel(reason = "cancelled by the caller"): void {
    if (!this.#controller.signal.aborted) this.#controller.abort(new RunCancelled(reason));
  }

  /** True once `cancel()` was called or the run's signal aborted. */
  get cancelled(): boolean {
    return this.#controller.signal.aborted;
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
