/** A counting semaphore whose waits can be abandoned through an AbortSignal. */
export class Semaphore {
  #free: number;
  readonly #waiting: Array<() => void> = [];

  constructor(permits: number) {
    this.#free = permits;
  }

  /** Resolves with a release function once a permit is free; rejects if `signal` aborts first. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve(this.#releaser());
    }
    return new Promise((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve(this.#releaser());
      };
      const onAbort = () => {
        const i = this.#waiting.indexOf(grant);
        if (i >= 0) this.#waiting.splice(i, 1);
        reject(signal?.reason);
      };
      if (signal?.aborted) return reject(signal.reason);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(grant);
    });
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free++;
    };
  }
}

const perTool = new WeakMap<object, Semaphore>();

/** The process-wide semaphore of a tool with a `concurrency` limit (shared by every run). */
export function toolSemaphore(tool: object, permits: number): Semaphore {
  let semaphore = perTool.get(tool);
  if (!semaphore) {
    semaphore = new Semaphore(permits);
    perTool.set(tool, semaphore);
  }
  return semaphore;
}
