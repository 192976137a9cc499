import type { RunEvent } from "../../contract/events.js";

type PassWaiter = { event: RunEvent; delivered: boolean; resolve: () => void };

/**
 * The handle's buffer: the run pushes, one consumer pulls. Unread events wait here (the run
 * never waits for a slow reader); a `for await` that breaks early just stops reading.
 *
 * It also tells the run when the consumer has moved past an event — asked for the next one
 * after receiving it — which is how an `approval_required` event's `approve()` is known to
 * have been called (or not) "before the consumer pulled the next event". Those waits are rare,
 * so they cost nothing per event unless one is pending.
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
  #lastDelivered: RunEvent | undefined;
  #passWaiters: PassWaiter[] = [];

  push(event: RunEvent): void {
    if (this.#ended || this.#detached) return;
    if (this.#waiter) {
      const resolve = this.#waiter;
      this.#waiter = this.#failWaiter = undefined;
      this.#deliver(event);
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
    this.#releaseAll();
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
   * once when nobody is reading or the consumer is already past it.
   */
  whenPassed(event: RunEvent): Promise<void> {
    if (!this.reading || this.#ended) return Promise.resolve();
    const delivered = this.#lastDelivered === event;
    // Handed out and the consumer already waits for the next one: it has passed it. (With a
    // store, events reach the queue only once stored, so this is often true by the time asked.)
    if (delivered && this.#waiter) return Promise.resolve();
    if (!delivered && !this.#items.includes(event, this.#head)) {
      // Neither buffered nor the one just handed out: it went by earlier.
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#passWaiters.push({ event, delivered, resolve }));
  }

  #deliver(event: RunEvent): void {
    this.#lastDelivered = event;
    if (this.#passWaiters.length === 0) return;
    for (const waiter of this.#passWaiters) if (waiter.event === event) waiter.delivered = true;
  }

  /** The consumer asked for more: whoever waited for it to pass a delivered event is released. */
  #releaseDelivered(): void {
    if (this.#passWaiters.length === 0) return;
    const still: PassWaiter[] = [];
    for (const waiter of this.#passWaiters) {
      if (waiter.delivered) waiter.resolve();
      else still.push(waiter);
    }
    this.#passWaiters = still;
  }

  #releaseAll(): void {
    const waiters = this.#passWaiters;
    this.#passWaiters = [];
    for (const waiter of waiters) waiter.resolve();
  }

  next(): Promise<IteratorResult<RunEvent>> {
    this.#releaseDelivered();
    if (this.#head < this.#items.length) {
      const value = this.#items[this.#head]!;
      this.#items[this.#head++] = undefined as unknown as RunEvent;
      if (this.#head === this.#items.length) {
        // Drained (the usual case: a reader keeps up): start over at the front.
        this.#items.length = 0;
        this.#head = 0;
      } else if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
        // A slow reader: compact now and then so the buffer does not keep every event alive.
        this.#items = this.#items.slice(this.#head);
        this.#head = 0;
      }
      this.#deliver(value);
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

  /** Events pushed now go nowhere: `Runner.run()` has no reader, or the reader stopped. */
  get dropping(): boolean {
    return this.#detached;
  }

  /** The consumer is gone: drop what is buffered and anything pushed later. */
  detach(): void {
    this.#detached = true;
    this.#items = [];
    this.#head = 0;
    this.#releaseAll();
  }
}
