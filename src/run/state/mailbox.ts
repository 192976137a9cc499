import type { RunMailbox } from "../../contract/run-context.js";
import type { Message } from "../../model/types.js";
import type { RunEvents } from "./run-events.js";

/** How a queued message is delivered: `inject` before the next model request, `followUp` when the run would stop. */
export type QueuedDelivery = "inject" | "followUp";
/** A queued message as its run's log stored it (`message_queued`, at `seq`). */
export type QueuedMessage = { message: Message; delivery: QueuedDelivery; seq: number };

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

  /**
   * The seq of the `message_queued` event that stored each queued message: its `message` event
   * names it when the message is delivered, so the log says which queued message went in.
   */
  readonly #queuedSeq = new Map<Message, number>();
  /** Where a queued message is stored (its `message_queued` event), once the run's log may take events. */
  #events: RunEvents | undefined;

  /** True once the run has ended (or emitted its end): a message sent now would never be read. */
  closed = false;

  /** The run is over: `inject()` and `followUp()` are refused from now on. */
  close(): void {
    this.closed = true;
  }

  /** A message for the run (`handle.inject`): queued for the model, and handed to tools waiting for one. */
  send(message: Message): void {
    this.inbox.push(message);
    if (this.#events) this.#record(message, "inject");
    for (const wake of this.#waiters.splice(0)) wake(message);
  }

  /** A message for when the run would otherwise stop (`handle.followUp`). */
  followUp(message: Message): void {
    this.followUps.push(message);
    if (this.#events) this.#record(message, "followUp");
  }

  /**
   * From now on every queued message is stored as it arrives; those queued before (the run had
   * not emitted `run_started` or `run_resumed` yet, and its log takes nothing before that) are
   * stored now.
   */
  recordTo(events: RunEvents): void {
    this.#events = events;
    for (const message of this.inbox) if (!this.#queuedSeq.has(message)) this.#record(message, "inject");
    for (const message of this.followUps)
      if (!this.#queuedSeq.has(message)) this.#record(message, "followUp");
  }

  #record(message: Message, delivery: QueuedDelivery): void {
    const queued = this.#events!.emit({
      type: "message_queued",
      message,
      delivery,
      runId: "",
      seq: 0,
      at: 0,
      agent: "",
    });
    this.#queuedSeq.set(message, queued.seq);
  }

  /** Messages a stored run had queued and not delivered when it stopped: queued again, as stored. */
  restore(queued: readonly QueuedMessage[]): void {
    for (const { message, delivery, seq } of queued) {
      (delivery === "inject" ? this.inbox : this.followUps).push(message);
      this.#queuedSeq.set(message, seq);
    }
  }

  /** The run would stop: its follow-ups become the next request's messages. */
  promoteFollowUps(): void {
    this.inbox.push(...this.followUps.splice(0));
  }

  /** Takes the inbox for the next model request: each message with the seq that stored it, if stored. */
  takeInbox(): Array<{ message: Message; queuedSeq: number | undefined }> {
    return this.inbox.splice(0).map((message) => {
      const queuedSeq = this.#queuedSeq.get(message);
      this.#queuedSeq.delete(message);
      return { message, queuedSeq };
    });
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
