import { Stopper } from "../../abort.js";

/**
 * How a run is stopped: its `Stopper` (cancel, a store failure, a deadline), the stop of its
 * model requests (which a steering message may interrupt on its own), and what must be released
 * when it ends (timers, host watches).
 */
export class RunControl {
  /**
   * The run's stop: `abort(reason)` stops it, waits race it with one Set entry each, and its
   * `signal` (an AbortController) is made only when something reads it — a run nobody cancels
   * and no tool or model asks the signal of never pays for one.
   */
  readonly stopper = new Stopper();
  /** False under `Runner.run()`: nobody can answer an approval, so "ask" denies at once. */
  hasChannel = true;
  /** True while a model turn streams (an interrupt only aborts that). */
  modelStreaming = false;
  /** True once `close()` ran. */
  closed = false;
  #model: { stopper: Stopper; unlink: () => void } | undefined;
  readonly #closers: Array<() => void> = [];

  /** The run's signal (made on first read: see `stopper`). */
  get signal(): AbortSignal {
    return this.stopper.signal;
  }

  /** Stops the run (cancel, a store failure, a deadline): as `AbortController.abort(reason)`. */
  abort(reason?: unknown): void {
    this.stopper.abort(reason);
  }

  /**
   * The stop of model requests (their `signal`): the run's own, plus interrupts from
   * `inject(…, { interrupt })`. One stopper serves every turn until an interrupt uses it up —
   * none per turn — and `Runner.run()` runs, which cannot be interrupted, use the run's as it is.
   */
  modelStopper(): Stopper {
    if (!this.hasChannel) return this.stopper;
    if (!this.#model) {
      const stopper = new Stopper();
      const run = this.stopper;
      const onAbort = () => stopper.abort(run.reason);
      if (run.aborted) stopper.abort(run.reason);
      else run.watch(onAbort);
      this.#model = { stopper, unlink: () => run.unwatch(onAbort) };
      this.onClose(() => this.#model?.unlink());
    }
    return this.#model.stopper;
  }

  /** Aborts the model turn that is streaming, if one is (a steering message with `interrupt`). */
  interruptModel(reason: unknown): void {
    if (!this.modelStreaming || !this.#model) return;
    const { stopper, unlink } = this.#model;
    this.#model = undefined;
    unlink();
    stopper.abort(reason);
  }

  /** Runs `fn` when the run stops (host watches, timers). */
  onClose(fn: () => void): void {
    this.#closers.push(fn);
  }

  /** Releases timers and watches; called once the run has stopped. */
  close(): void {
    this.closed = true;
    for (const fn of this.#closers.splice(0)) fn();
  }
}
