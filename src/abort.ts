export const ABORTED: unique symbol = Symbol("aborted");
export type Aborted = typeof ABORTED;
export const isAborted = (value: unknown): value is Aborted => value === ABORTED;

/**
 * Waits for `promise` or for `signal` to abort, whichever is first. The run uses this so that
 * cancelling never waits on a tool or model that ignores its signal; the abandoned promise's
 * rejection is swallowed so it cannot crash the process later.
 */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | Aborted> {
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.resolve(ABORTED);
  }
  return new Promise<T | Aborted>((resolve, reject) => {
    const onAbort = () => {
      promise.catch(() => {});
      resolve(ABORTED);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/**
 * Settles with `work`, or rejects with the signal's reason as soon as it aborts, whichever comes
 * first; the abandoned work's rejection is caught so it cannot surface later.
 *
 * @example
 * await untilAborted(plugin.setup(ctx), AbortSignal.timeout(30_000));
 */
export async function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  const settled = await raceAbort(work, signal);
  if (isAborted(settled)) throw signal.reason;
  return settled;
}

/** `setTimeout` as a promise that rejects when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Races promises against one signal with a single listener for the signal's whole life: each
 * wait costs a Set entry, not an `addEventListener` (slow on Node's EventTarget) nor a reaction
 * that piles up on a never-settling promise. When the signal aborts, every pending race
 * resolves to the `Aborted` marker; the losing promise's rejection is swallowed.
 *
 * Without a signal to follow, a stopper is its own source (`abort()`), and its `signal` — an
 * AbortController, the largest fixed cost of a run that nobody cancels — is made only when
 * something reads it.
 */
export class Stopper {
  #signal: AbortSignal | undefined;
  #controller: AbortController | undefined;
  #reason: unknown;
  /** In registration order. An array: a Set reallocates its table as it empties and fills, once per call. */
  readonly #waiters: Array<() => void> = [];
  /** `signal.aborted`, as a plain field: AbortSignal's getter is slow on Node's EventTarget. */
  aborted = false;

  constructor(signal?: AbortSignal) {
    if (!signal) return;
    this.#signal = signal;
    if (signal.aborted) this.aborted = true;
    else signal.addEventListener("abort", () => this.#fire(), { once: true });
  }

  /** The signal this stopper follows, or (made now, on first read) the one it owns. */
  get signal(): AbortSignal {
    if (!this.#signal) {
      const controller = new AbortController();
      this.#controller = controller;
      this.#signal = controller.signal;
      if (this.aborted) controller.abort(this.#reason);
      // First listener, as a followed signal's: waits end before the signal's other listeners run.
      else controller.signal.addEventListener("abort", () => this.#fire(), { once: true });
    }
    return this.#signal;
  }

  /** `signal.reason`, without making the signal. */
  get reason(): unknown {
    return this.#signal ? this.#signal.reason : this.#reason;
  }

  /** Stops an owned stopper (as `AbortController.abort`); a following one stops with its signal. */
  abort(reason?: unknown): void {
    if (this.aborted) return;
    if (this.#controller) {
      this.#controller.abort(reason);
      return;
    }
    if (this.#signal) throw new Error("a Stopper that follows a signal stops with that signal");
    this.#reason =
      reason === undefined ? new DOMException("This operation was aborted", "AbortError") : reason;
    this.#fire();
  }

  #fire(): void {
    this.aborted = true;
    // One at a time from the live list: a waiter removed by an earlier one is not called (as a Set would).
    const waiters = this.#waiters;
    while (waiters.length > 0) waiters.shift()!();
  }

  /**
   * Waits for whoever `register` hands the wake-up function to, or for the signal: one promise,
   * where `race(new Promise(register))` would take two.
   */
  wait(register: (wake: () => void) => void): Promise<undefined | Aborted> {
    if (this.aborted) return Promise.resolve(ABORTED);
    return new Promise<undefined | Aborted>((resolve) => {
      const stop = () => resolve(ABORTED);
      this.#waiters.push(stop);
      register(() => {
        this.unwatch(stop);
        resolve(undefined);
      });
    });
  }

  /**
   * Calls `stop` once when the signal aborts, unless `unwatch(stop)` came first. For waits that
   * build their own promise; check `aborted` before watching.
   */
  watch(stop: () => void): void {
    if (!this.#waiters.includes(stop)) this.#waiters.push(stop);
  }

  unwatch(stop: () => void): void {
    const waiters = this.#waiters;
    const index = waiters.lastIndexOf(stop);
    if (index < 0) return;
    for (let i = index + 1; i < waiters.length; i++) waiters[i - 1] = waiters[i]!;
    waiters.pop();
  }

  race<T>(promise: Promise<T>): Promise<T | Aborted> {
    if (this.aborted) {
      promise.catch(() => {});
      return Promise.resolve(ABORTED);
    }
    return new Promise<T | Aborted>((resolve, reject) => {
      const stop = () => {
        promise.catch(() => {});
        resolve(ABORTED);
      };
      this.#waiters.push(stop);
      promise.then(
        (value) => {
          this.unwatch(stop);
          resolve(value);
        },
        (error) => {
          this.unwatch(stop);
          reject(error);
        },
      );
    });
  }
}

/**
 * A signal that aborts after `ms` with a `TimeoutError`, like `AbortSignal.timeout`, except that
 * its timer keeps the process alive until `clear()`: `AbortSignal.timeout`'s does not, so a wait
 * bounded by it on something that never settles (and holds no handle) let the process exit with
 * the run unfinished instead of timing out. Call `clear()` once the wait is over.
 *
 * @example
 * const deadline = timeoutSignal(5_000);
 * try { await untilAborted(check(), deadline.signal); } finally { deadline.clear(); }
 */
export function timeoutSignal(ms: number): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException(`timed out after ${ms} ms`, "TimeoutError")),
    ms,
  );
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}
