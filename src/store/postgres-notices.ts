/**
 * The notices a `PostgresStore` sends its listeners (`eventsChannel`), sent after each append
 * commits rather than inside it.
 *
 * PostgreSQL serialises every committing transaction that called `pg_notify`, cluster-wide, on
 * one lock held until its commit is flushed (and confirmed by synchronous replicas). A notice
 * inside the append made every durable append of every process queue behind that lock: appends
 * could never share a WAL flush, and one slow commit anywhere (a lagging synchronous replica)
 * stalled them all. Sent afterwards, appends commit together, and the notices of the appends
 * that committed meanwhile go out in one statement, at most one per `intervalMs`: a run that
 * appends every few hundred microseconds does not pay a second transaction per append, and a
 * listener hears of it at most that much later.
 *
 * A run's last notice (its log ended: completed, failed or parked) goes out at once, with what
 * is queued, or right after the send in flight: that is the one a web tier waiting for the
 * run's result, or a page showing it, is waiting on. Runs end far less often than they append.
 *
 * Notices stay hints, sent in commit order, each after its rows can be read. One lost (the
 * process dies between a commit and its notice, or the database refuses it) costs a listener
 * one fallback poll: listeners read the log, never the notice.
 */
export class PostgresNotices {
  #queue: string[] = [];
  #sending: Promise<void> | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #lastSent = Number.NEGATIVE_INFINITY;
  /** A notice that must not wait out the interval is queued behind the send in flight. */
  #urgent = false;

  /**
   * `send(payloads)` sends them all in one statement; its failure is ignored (hints).
   * `intervalMs`: the least time between two sends' starts.
   */
  constructor(
    private readonly send: (payloads: string[]) => Promise<unknown>,
    private readonly intervalMs = NOTICE_INTERVAL_MS,
  ) {}

  /**
   * Queues one notice: sent at once when nothing was sent in the last `intervalMs`, else with the
   * next batch. An `urgent` one (a run's log ended) does not wait out the interval: it goes now,
   * with everything queued before it, or as soon as the send in flight is done.
   */
  add(payload: string, urgent = false): void {
    this.#queue.push(payload);
    if (urgent) {
      if (this.#sending !== undefined) this.#urgent = true;
      else this.#sendNow();
      return;
    }
    if (this.#sending === undefined && this.#timer === undefined) this.#next();
  }

  /** Sends what is queued without waiting out the interval; resolves when every notice added so far has gone (or failed). */
  async flush(): Promise<void> {
    while (this.#sending !== undefined || this.#queue.length > 0) {
      if (this.#sending !== undefined) {
        await this.#sending;
        continue;
      }
      this.#sendNow();
    }
  }

  #sendNow(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#sending = this.#send();
  }

  #next(): void {
    const wait = this.#lastSent + this.intervalMs - performance.now();
    if (wait <= 0) this.#sendNow();
    else this.#timer = setTimeout(() => this.#sendNow(), wait);
  }

  async #send(): Promise<void> {
    const batch = this.#queue;
    this.#queue = [];
    this.#lastSent = performance.now();
    try {
      await this.send(batch);
    } catch {}
    this.#sending = undefined;
    if (this.#queue.length === 0) return;
    if (this.#urgent) {
      this.#urgent = false;
      this.#sendNow();
    } else if (this.#timer === undefined) this.#next();
  }
}

/** How often a store sends its listeners a batch of notices, at most. */
export const NOTICE_INTERVAL_MS = 25;
