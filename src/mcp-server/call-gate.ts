type Waiter = { alone: boolean; enter: () => void };

/**
 * The barrier rule of one connection's calls, as the engine applies it within a turn: a call to
 * a `parallel: false` tool waits for the calls in flight, runs alone, and the calls after it
 * wait for it. Other calls run together. First come, first served: a waiting barrier holds back
 * the calls that arrive after it.
 */
export class CallGate {
  #running = 0;
  #alone = false;
  readonly #queue: Waiter[] = [];

  /** Resolves with the function that lets the call out once it may run; rejects when `signal` aborts first. */
  enter(alone: boolean, signal: AbortSignal): Promise<() => void> {
    if (this.#queue.length === 0 && this.#mayRun(alone)) return Promise.resolve(this.#admit(alone));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        alone,
        enter: () => {
          signal.removeEventListener("abort", onAbort);
          resolve(this.#admit(alone));
        },
      };
      const onAbort = () => {
        const i = this.#queue.indexOf(waiter);
        if (i >= 0) this.#queue.splice(i, 1);
        this.#wake();
        reject(signal.reason);
      };
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      signal.addEventListener("abort", onAbort, { once: true });
      this.#queue.push(waiter);
    });
  }

  #mayRun(alone: boolean): boolean {
    return !this.#alone && (!alone || this.#running === 0);
  }

  #admit(alone: boolean): () => void {
    this.#running++;
    if (alone) this.#alone = true;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.#running--;
      if (alone) this.#alone = false;
      this.#wake();
    };
  }

  #wake(): void {
    while (this.#queue.length > 0 && this.#mayRun(this.#queue[0]!.alone)) this.#queue.shift()!.enter();
  }
}
