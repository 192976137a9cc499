import type { RunEvent } from "./events.js";

/**
 * The handle's buffer: the run pushes, one consumer pulls. Unread events wait here (the run
 * never waits for a slow reader); a `for await` that breaks early just stops reading.
 */
export class EventQueue {
  #items: RunEvent[] = [];
  #head = 0;
  #waiter: ((result: IteratorResult<RunEvent>) => void) | undefined;
  #failWaiter: ((error: unknown) => void) | undefined;
  #ended = false;
  #error: unknown;
  #hasError = false;
  /** Consumers that stop reading let the run drop events instead of buffering them forever. */
  #detached = false;
  #onPull: (() => void) | undefined;

  push(event: RunEvent): void {
    if (this.#ended || this.#detached) return;
    if (this.#waiter) {
      const resolve = this.#waiter;
      this.#waiter = this.#failWaiter = undefined;
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
  }

  /** Called each time the consumer asks for the next event (approval decisions hook in here). */
  onPull(listener: (() => void) | undefined): void {
    this.#onPull = listener;
  }

  /** How many events are buffered and unread. */
  get backlog(): number {
    return this.#items.length - this.#head;
  }

  next(): Promise<IteratorResult<RunEvent>> {
    this.#onPull?.();
    if (this.#head < this.#items.length) {
      const value = this.#items[this.#head]!;
      this.#items[this.#head++] = undefined as unknown as RunEvent;
      // Compact occasionally so a long run's buffer does not keep every event alive.
      if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
        this.#items = this.#items.slice(this.#head);
        this.#head = 0;
      }
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
  }
}
