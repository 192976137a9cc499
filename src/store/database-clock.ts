/**
 * What a PostgresStore knows of its database's clock, so that an append can carry a deadline the
 * database itself enforces: an append that commits on its own (no `COMMIT` round trip after it)
 * must not commit once the store has given up on it — a server that froze and thawed would
 * otherwise store events after the store reported them lost.
 *
 * A reading of the database's clock answered at local time `t` was taken before `t`, so
 * `reading - t` never exceeds the true offset: a deadline computed from it is never later than
 * the moment the store gives up. The local clock is `performance.now()` (monotonic: a wall-clock
 * step here changes nothing). What can still move is the offset itself (the two clocks drift
 * apart, or the database is a new server after a failover), hence a margin that grows with the
 * reading's age, a limit on that age, and `forget()` whenever a statement fails or the pool loses
 * an idle connection (a failover ends every connection to the old server).
 */

/** Drift the margin allows for, per ms since the reading: 1,000 ppm, ten times what NTP permits. */
const DRIFT_PER_MS = 0.001;
/** A reading older than this is not used (the next append takes a fresh one). */
const MAX_AGE_MS = 60_000;
/**
 * Always kept: the database reads its clock to the ms (floored), and an append finishes
 * its commit after that reading.
 */
const BASE_MARGIN_MS = 2;

export class DatabaseClock {
  /** Database ms minus `performance.now()`, at most the true offset; NaN before any reading. */
  #offset = Number.NaN;
  #readAt = 0;
  /** How long the reading's statement took: how much earlier than needed its deadlines are. */
  #slack = 0;

  /**
   * A reading `databaseMs` of the database's clock, from a statement sent at `sentAt`
   * (`performance.now()`) and answered just now.
   */
  observe(databaseMs: number, sentAt: number): void {
    const now = performance.now();
    if (!Number.isFinite(databaseMs)) return;
    this.#offset = databaseMs - now;
    this.#readAt = now;
    this.#slack = now - sentAt;
  }

  /** Drops the reading (a connection failed: the next one may reach another server). */
  forget(): void {
    this.#offset = Number.NaN;
  }

  /**
   * The latest time on the database's clock (epoch ms) at which a statement sent now may still
   * commit if the store gives up on it `withinMs` from now; undefined when no reading is recent
   * and tight enough to leave at least half of `withinMs` to the statement.
   *
   * @example
   * const deadline = clock.deadline(10_000); // then: … WHERE now <= deadline, checked last
   */
  deadline(withinMs: number): number | undefined {
    if (Number.isNaN(this.#offset)) return undefined;
    const now = performance.now();
    const age = now - this.#readAt;
    if (age > MAX_AGE_MS) return undefined;
    const margin = BASE_MARGIN_MS + age * DRIFT_PER_MS;
    if (margin + this.#slack > withinMs / 2) return undefined;
    return Math.floor(this.#offset + now + withinMs - margin);
  }
}

/** One clock per pool: every store on a pool reads the same server. */
const clocks = new WeakMap<object, DatabaseClock>();

/**
 * The clock of the database behind `pool`, shared by every store that uses it, forgotten
 * whenever the pool reports an idle connection lost (its `error` event; a statement's own
 * failure is the store's to report). One listener per pool, however many stores come and go on
 * it: a store made per request and never closed leaks nothing.
 *
 * @example
 * const clock = databaseClockOf(pool); // the same object for every store on `pool`
 */
export function databaseClockOf(pool: { on?(event: "error", listener: () => void): unknown }): DatabaseClock {
  let clock = clocks.get(pool);
  if (clock === undefined) {
    const made = new DatabaseClock();
    pool.on?.("error", () => made.forget());
    clocks.set(pool, made);
    clock = made;
  }
  return clock;
}
