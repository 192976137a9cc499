import type { ToolHostChange } from "./tool-host.js";

/**
 * Most changes one `watch()` iterator holds before the oldest are dropped. A watcher only
 * needs to learn that something changed (it re-lists), so losing old entries of a reader that
 * stopped reading loses nothing, and a forgotten iterator cannot grow without bound.
 */
const MAX_QUEUED = 1024;

/**
 * Fans a host's tool changes out to every live `watch()` iterator. Each iterator is
 * subscribed when `watch()` returns (not on its first `next()`), so a change made right
 * after the call is never missed; it ends when its signal aborts, when its reader stops
 * (`break`), or when the feed is closed.
 */
export class ChangeFeed {
  readonly #subscribers = new Set<Subscription>();
  #closed = false;

  /** Delivers `change` to every current watcher. */
  emit(change: ToolHostChange): void {
    for (const subscription of this.#subscribers) subscription.push(change);
  }

  /** A new watcher's iterable; already ended when `signal` is aborted or the feed is closed. */
  watch(signal?: AbortSignal): AsyncIterableIterator<ToolHostChange> {
    const subscription = new Subscription(() => this.#subscribers.delete(subscription), signal);
    if (this.#closed || signal?.aborted) subscription.end();
    else this.#subscribers.add(subscription);
    return subscription;
  }

  /** Ends every watcher; later `watch()` calls return an ended iterable. */
  close(): void {
    this.#closed = true;
    for (const subscription of [...this.#subscribers]) subscription.end();
  }

  /** How many watchers are live. */
  get size(): number {
    return this.#subscribers.size;
  }
}

class Subscription implements AsyncIterableIterator<ToolHostChange> {
  readonly #queue: ToolHostChange[] = [];
  readonly #unsubscribe: () => void;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort = () => this.end();
  #wake: (() => void) | undefined;
  #ended = false;

  constructor(unsubscribe: () => void, signal: AbortSignal | undefined) {
    this.#unsubscribe = unsubscribe;
    this.#signal = signal;
    signal?.addEventListener("abort", this.#onAbort, { once: true });
  }

  push(change: ToolHostChange): void {
    if (this.#ended) return;
    if (this.#queue.length >= MAX_QUEUED) this.#queue.shift();
    this.#queue.push(change);
    this.#wake?.();
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#unsubscribe();
    this.#signal?.removeEventListener("abort", this.#onAbort);
    this.#wake?.();
  }

  async next(): Promise<IteratorResult<ToolHostChange>> {
    for (;;) {
      const change = this.#queue.shift();
      if (change) return { done: false, value: change };
      if (this.#ended) return { done: true, value: undefined };
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      this.#wake = undefined;
    }
  }

  async return(): Promise<IteratorResult<ToolHostChange>> {
    this.#queue.length = 0;
    this.end();
    return { done: true, value: undefined };
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
