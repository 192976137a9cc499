import type { RunMailbox } from "../../contract/run-context.js";
import type { Message } from "../../model/types.js";

/**
 * Messages sent to a running agent: `handle.inject()` (before its next model request) and
 * `handle.followUp()` (after it would otherwise stop). Tools read the same queue through
 * `ctx.mailbox` while they work — one channel, not two: a message a tool has seen still reaches
 * the model, and one the model has seen is no longer pending. A child run (an agent used as a
 * tool) reads its own mailbox and every ancestor's.
 */
export class Mailbox {
  /** Messages `handle.inject()` queued for before the next model request. */
  readonly inbox: Message[] = [];
  /** Messages `handle.followUp()` queued for after the run would otherwise stop. */
  readonly followUps: Message[] = [];
  readonly #parent: Mailbox | undefined;
  /** Tools waiting for the next message (`ctx.mailbox.next()`), here or in a child run. */
  readonly #waiters: Array<(message: Message) => void> = [];
  #view: RunMailbox | undefined;

  constructor(parent?: Mailbox) {
    this.#parent = parent;
  }

  /** A message for the run (`handle.inject`): queued for the model, and handed to tools waiting for one. */
  send(message: Message): void {
    this.inbox.push(message);
    for (const wake of this.#waiters.splice(0)) wake(message);
  }

  /** What a tool's `ctx.mailbox` shows: this run's pending messages and its ancestors', oldest first. */
  view(): RunMailbox {
    this.#view ??= {
      get messages(): readonly Message[] {
        return mailbox.#pending();
      },
      next: (options) => this.#next(options),
    };
    const mailbox = this;
    return this.#view;
  }

  #pending(): Message[] {
    const above = this.#parent ? this.#parent.#pending() : [];
    return above.length ? [...above, ...this.inbox] : [...this.inbox];
  }

  #next(options: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<Message | undefined> {
    const { signal, timeoutMs } = options;
    if (signal?.aborted) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const boxes: Mailbox[] = [];
      for (let box: Mailbox | undefined = this; box; box = box.#parent) boxes.push(box);
      let timer: NodeJS.Timeout | undefined;
      const done = (message: Message | undefined) => {
        for (const box of boxes) {
          const at = box.#waiters.indexOf(wake);
          if (at >= 0) box.#waiters.splice(at, 1);
        }
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        resolve(message);
      };
      const wake = (message: Message) => done(message);
      const onAbort = () => done(undefined);
      for (const box of boxes) box.#waiters.push(wake);
      signal?.addEventListener("abort", onAbort, { once: true });
      if (timeoutMs !== undefined) timer = setTimeout(() => done(undefined), timeoutMs);
    });
  }
}
