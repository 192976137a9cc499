import type { RunEvent } from "./events.js";

/**
 * The handle's buffer: the run pushes, one consumer pulls. Unread events wait here (the run
 * never waits for a slow reader); a `for await` that breaks early just stops reading.
 *
 * It also tells the run when the consumer has moved past an event — asked for the next one
 * after receiving it — which is how an `approval_required` event's `approve()` is known to
 * have been called (or not) "before the consumer pulled the next event".
 */
export class EventQueue {
  #items: RunEvent[] = [];
  #head = 0;
  #waiter: ((result: IteratorResult<RunEvent>) => void) | undefined;
  #failWaiter: ((error: unknown) => void) | undefined;
  #ended = false;
  #error: unknown;
  #hasError = false;
  #reading = false;
  /** Consumers that stop reading let the run drop events instead of buffering them forever. */
  #detached = false;
  /** Events of child runs share this queue, so order is counted here, not by their `seq`. */
  #pushed = 0;
  #ordinals = new WeakMap<RunEvent, number>();
  #delivered = 0;
  #passWaiters: Array<{ ordinal: number; resolve: () => void }> = [];

  push(event: RunEvent): void {
    if (this.#ended || this.#detached) return;
    this.#ordinals.set(event, ++this.#pushed);
    if (this.#waiter) {
      const resolve = this.#waiter;
      this.#waiter = this.#failWaiter = undefined;
      this.#delivered = this.#pushed;
      resolve({ value: event, done: false });
      return;
    }
    this.#items.push(event);
  }

  /** No more events; a pending or later `next()` ends (or throws `error`, once the buffer is read). */
  end(error?: unknown, failed = false): void {
    if (this.#ended) return;
    this.#ended = true;
    if (failed) {
      this.#hasError = true;
      this.#error = error;
    }
    if (this.#waiter && this.#head >= this.#items.length) {
      const resolve = this.#waiter;
      const reject = this.#failWaiter!;
      this.#waiter = this.#failWaiter = undefined;
      if (this.#hasError) reject(this.#error);
      else resolve({ value: undefined, done: true });
    }
    this.#releasePassWaiters(Number.POSITIVE_INFINITY);
  }

  /** True while a consumer iterates (and has not broken out of its loop). */
  get reading(): boolean {
    return this.#reading && !this.#detached;
  }

  startReading(): void {
    this.#reading = true;
  }

  /**
   * Resolves once the consumer asks for the event after `event` (or stops reading). Resolves at
   * once when nobody is reading.
   */
  whenPassed(event: RunEvent): Promise<void> {
    if (!this.reading || this.#ended) return Promise.resolve();
    const ordinal = this.#ordinals.get(event);
    if (ordinal === undefined || ordinal <= this.#delivered - 1) return Promise.resolve();
    return new Promise((resolve) => this.#passWaiters.push({ ordinal, resolve }));
  }

  #releasePassWaiters(upTo: number): void {
    if (this.#passWaiters.length === 0) return;
    const still: Array<{ ordinal: number; resolve: () => void }> = [];
    for (const waiter of this.#passWaiters) {
      if (waiter.ordinal <= upTo) waiter.resolve();
      else still.push(waiter);
    }
    this.#passWaiters = still;
  }

  next(): Promise<IteratorResult<RunEvent>> {
    this.#releasePassWaiters(this.#delivered);
    if (this.#head < this.#items.length) {
      const value = this.#items[this.#head]!;
      this.#items[this.#head++] = undefined as unknown as RunEvent;
      // Compact occasionally so a long run's buffer does not keep every event alive.
      if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
        this.#items = this.#items.slice(this.#head);
        this.#head = 0;
      }
      this.#delivered = this.#ordinals.get(value) ?? this.#delivered;
      return Promise.resolve({ value, done: false });
    }
    if (this.#ended) {
      return this.#hasError ? Promise.reject(this.#error) : Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve, reject) => {
      this.#waiter = resolve;
      this.#failWaiter = reject;
    });
  }

  /** The consumer is gone: drop what is buffered and anything pushed later. */
  detach(): void {
    this.#detached = true;
    this.#items = [];
    this.#head = 0;
    this.#releasePassWaiters(Number.POSITIVE_INFINITY);
  }
}
