import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import type { RunEvent } from "../contract/events.js";
import { UserError } from "../errors.js";
import {
  checkAfterSeq,
  checkArtifact,
  checkLeaseFree,
  checkLeaseHeld,
  checkLeaseRequest,
  checkRunId,
  closedStore,
  decodeEvents,
  encodeEvents,
  failureKindOf,
  filterEnds,
  filterStatuses,
  referencedPayloads,
  storeFailure,
  summarize,
  withPayloads,
} from "./log-rules.js";
import { loadOptionalPackage, optionalPackagePath } from "./optional-package.js";
import { payloadOwner, payloadOwners, sessionPayloads } from "./payloads.js";
import {
  type EventRow,
  type LeaseRow,
  RUN_COLUMNS,
  RUN_UPDATE,
  type RunRow,
  runRowValues,
  runsWithLeases,
  type SessionRow,
  toLease,
  toRunSummary,
  toSessionSummary,
  toStoredEvent,
} from "./sql-rows.js";
import { SqliteCheckpointer } from "./sqlite-checkpointer.js";
import { descriptorsOf, SqliteFileGuard } from "./sqlite-file-guard.js";
import { isTransientFailure } from "./transient.js";
import {
  APPENDS_IN_CALL_ORDER,
  type Lease,
  type RunFilter,
  type RunStore,
  type RunSummary,
  type SessionSummary,
  StoreError,
} from "./types.js";

export type SqliteStoreOptions = {
  /** The database file, created (with its directories) if missing. Default `.quiver/quiver.db`; `":memory:"` for a private in-memory database. */
  path?: string;
  /**
   * How hard each commit waits for the disk. `"normal"` (the default) survives a crash of the
   * process — a kill -9, an out-of-memory kill, an uncaught exception: a committed event is
   * in the operating system's hands and is there when the run is resumed. `"full"` also
   * survives a crash of the machine or a power loss: every commit waits for the disk (an
   * fsync), so a `tool_call_started` stored before a call ran is still there after a reboot.
   * In `"normal"` a power loss can lose the last commits (never the file's integrity), so a
   * call that ran just before it may run again on resume. See docs/durability.md.
   */
  synchronous?: "full" | "normal";
  /**
   * How long an operation waits, in all, for another connection's write transaction (the
   * `quiver` command, a backup, another worker on the file) before it fails with a retryable
   * `StoreError`. Default 5,000 ms. The wait never holds up the event loop: each attempt waits
   * at most 20 ms for the lock, and the next is made on a timer, so other runs, timers, HTTP
   * and `cancel()` go on meanwhile. Opening a new file (creating or migrating its tables) waits
   * for the lock synchronously, in the constructor.
   */
  busyTimeoutMs?: number;
};

const DEFAULT_PATH = ".quiver/quiver.db";

/**
 * How long one attempt waits for the write lock inside SQLite (its busy handler sleeps on the
 * event loop's thread). Long enough for another process's commit (well under a millisecond) to
 * end, short enough that no timer, request or `cancel()` notices; a lock held longer is waited
 * for on a timer (`LOCK_PAUSE_MAX_MS`), up to `busyTimeoutMs` in all.
 */
const LOCK_STEP_MS = 20;
/** The longest pause between two attempts at the write lock: how late a freed lock may be noticed. */
const LOCK_PAUSE_MAX_MS = 100;

/**
 * The version of the tables below, kept in SQLite's `user_version`: an older file is migrated
 * when opened, a newer one is refused, not misread.
 *
 * - 1: events keyed by `(run_id, seq)` in a WITHOUT ROWID table.
 * - 2: events keyed by one integer, `run_key << 32 | seq`, `run_key` being the run's row in
 *   `quiver_runs`. A run's appends then land at the end of its key range, and a whole
 *   sequential run at the right edge of the table, where SQLite appends by adding a page: most
 *   commits write one page. A composite key split and rebalanced three leaves and their parent
 *   on most commits (about 6 pages), and kept whole event bodies in the tree's inner pages.
 *   Leases are a WITHOUT ROWID table (one page per lease write, not a row and its index).
 *   Later, runs gained a nullable `failure_kind`, added in place when a file is opened
 *   (`addFailureKind`): still version 2, since an older Quiver reads and writes such a file.
 */
const TABLES_VERSION = 2;

/** A run's events take the keys `run_key << 32 | seq`: seq stays below 2^32, and run_key below 2^31 (positive keys). */
const MAX_SEQ = 2 ** 32 - 1;
const MAX_RUN_KEY = 2 ** 31 - 1;

/**
 * An append leaves the runs row as it is unless the run's status or identity changes, or its
 * last_seq would fall this many events behind: readers find the rest from the events
 * themselves (RUNS_NOW), reading at most this many rows per run to do it.
 */
const SUMMARY_LAG = 128;

/**
 * The runs rows as they are now: last_seq and updated_at take in the events stored after the
 * row was last written (the row's status and identity are always current). A body that is
 * not JSON does not count; reading the log reports it.
 */
const RUNS_NOW = `(SELECT r.run_key, r.run_id, r.session_id, r.parent_run_id, r.agent, r.started_at, r.status, r.failure_kind,
    coalesce((SELECT e.event_key & 4294967295 FROM quiver_events e
      WHERE e.event_key > (r.run_key << 32) + r.last_seq AND e.event_key < ((r.run_key + 1) << 32)
      ORDER BY e.event_key DESC LIMIT 1), r.last_seq) AS last_seq,
    max(r.updated_at, coalesce((SELECT max(json_extract(e.body, '$.at')) FROM quiver_events e
      WHERE e.event_key > (r.run_key << 32) + r.last_seq AND e.event_key < ((r.run_key + 1) << 32)
        AND json_valid(e.body)), 0)) AS updated_at
  FROM quiver_runs r)`;

/**
 * The runs a `RunFilter` matches (its ends aside), as a condition on `r` (see `listRuns`): of
 * one session, or of any. Two statements, not `@session IS NULL OR …`: SQLite does not use the
 * session's index for that, and would scan and sort every run of the file.
 */
function matchingRuns(ofSession: boolean): string {
  return `${ofSession ? "r.session_id = @session" : "1"}
  AND (@statuses IS NULL OR r.status IN (SELECT value FROM json_each(@statuses)))
  AND (@top = 0 OR r.parent_run_id IS NULL)`;
}

/** The runs a `RunFilter` matches, oldest first; with `ends`, only the first `@first` and last `@last`. */
function listedRuns(ofSession: boolean, ends: boolean): string {
  const matching = matchingRuns(ofSession);
  const which = ends
    ? `r.run_id IN (
         SELECT run_id FROM (SELECT r.run_id FROM quiver_runs r WHERE ${matching}
           ORDER BY r.started_at, r.run_key LIMIT @first)
         UNION ALL
         SELECT run_id FROM (SELECT r.run_id FROM quiver_runs r WHERE ${matching}
           ORDER BY r.started_at DESC, r.run_key DESC LIMIT @last))`
    : matching;
  return `${runsWithLeases(RUNS_NOW, "quiver_leases")} WHERE ${which} ORDER BY r.started_at, r.run_key`;
}

const TABLES = `
CREATE TABLE IF NOT EXISTS quiver_runs (
  run_key INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE, session_id TEXT, parent_run_id TEXT, agent TEXT NOT NULL,
  started_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, last_seq INTEGER NOT NULL, status TEXT NOT NULL,
  failure_kind TEXT);
CREATE INDEX IF NOT EXISTS quiver_runs_by_session ON quiver_runs (session_id, started_at);
CREATE TABLE IF NOT EXISTS quiver_events (event_key INTEGER PRIMARY KEY, version INTEGER NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS quiver_leases (
  run_id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS quiver_artifacts (
  run_id TEXT NOT NULL, key TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY (run_id, key));
`;

/** The runs columns of version 1 (and of version 2 before `failure_kind`). */
const V1_RUN_COLUMNS = "run_id, session_id, parent_run_id, agent, started_at, updated_at, last_seq, status";

/** Version 1's runs, events and leases, moved into version 2's tables (artifacts did not change). */
const FROM_VERSION_1 = `
ALTER TABLE quiver_runs RENAME TO quiver_runs_v1;
ALTER TABLE quiver_events RENAME TO quiver_events_v1;
ALTER TABLE quiver_leases RENAME TO quiver_leases_v1;
DROP INDEX quiver_runs_by_session;
${TABLES}
INSERT INTO quiver_runs (${V1_RUN_COLUMNS}) SELECT ${V1_RUN_COLUMNS} FROM quiver_runs_v1 ORDER BY started_at, run_id;
INSERT INTO quiver_events (event_key, version, body)
  SELECT (r.run_key << 32) + e.seq, e.version, e.body
  FROM quiver_events_v1 e JOIN quiver_runs r ON r.run_id = e.run_id ORDER BY r.run_key, e.seq;
INSERT INTO quiver_leases (run_id, owner, expires_at) SELECT run_id, owner, expires_at FROM quiver_leases_v1;
DROP TABLE quiver_leases_v1;
`;

/**
 * The embedded default `RunStore`: one SQLite file (better-sqlite3, WAL mode), shared safely
 * by every process on the machine. Writes run in `BEGIN IMMEDIATE` transactions, so two
 * processes can never both take a run's lease or both append the same seq. Appends and lease
 * writes made before the event loop comes round share one transaction (group commit).
 *
 * better-sqlite3 is an optional peer dependency (`npm install better-sqlite3@12`), loaded when
 * the first `SqliteStore` is constructed.
 *
 * @example
 * const store = new SqliteStore({ path: ".quiver/quiver.db" });
 * const lease = await store.acquireLease(runId, `worker-${process.pid}`, 30_000);
 * await store.append(lease, events);
 * await store.close();
 */
export class SqliteStore implements RunStore {
  /** The database file this store opened. */
  readonly path: string;
  readonly #db: BetterSqlite3.Database;
  readonly #sql: ReturnType<typeof prepare>;
  /** Checkpoints the WAL on a worker thread (absent for an in-memory database). */
  readonly #checkpointer: SqliteCheckpointer | undefined;
  /** Notices the file being deleted, replaced or overwritten under the store (absent in memory). */
  readonly #guard: SqliteFileGuard | undefined;
  /**
   * Set once the file is found deleted, replaced or damaged: every operation fails with it from
   * then on, so that nothing is written into a file nobody will read again.
   */
  #broken: StoreError | undefined;
  /** Appends queue in call order and commit in that order (see `append`). */
  readonly [APPENDS_IN_CALL_ORDER] = true;
  /** How long, in all, an operation waits for another connection's write lock (`busyTimeoutMs`). */
  readonly #busyTimeoutMs: number;

  constructor(options: SqliteStoreOptions = {}) {
    this.path = options.path ?? DEFAULT_PATH;
    const { synchronous = "normal" } = options;
    // A misspelt "full" must not quietly give the weaker promise.
    if (synchronous !== "normal" && synchronous !== "full") {
      throw new UserError(
        `SqliteStore: synchronous must be "normal" or "full" (got ${JSON.stringify(synchronous)}); see docs/durability.md`,
      );
    }
    const Database = loadOptionalPackage<typeof BetterSqlite3>(
      "better-sqlite3",
      "SqliteStore",
      "npm install better-sqlite3@12",
    );
    const busyTimeoutMs = options.busyTimeoutMs ?? 5_000;
    if (typeof busyTimeoutMs !== "number" || !(busyTimeoutMs >= 0)) {
      throw new UserError(
        `SqliteStore: busyTimeoutMs must be a number of milliseconds, 0 or more (got ${String(busyTimeoutMs)})`,
      );
    }
    this.#busyTimeoutMs = busyTimeoutMs;
    const inMemory = this.path === ":memory:" || this.path === "";
    // Absolute: the process may change directory while the store is open.
    const before = inMemory ? undefined : descriptorsOf(resolve(this.path));
    this.#db = open(Database, this.path, busyTimeoutMs);
    const level = synchronous === "full" ? "FULL" : "NORMAL";
    let wal: boolean;
    try {
      // An in-memory database has no WAL: it stays in "memory" mode.
      wal = this.#db.pragma("journal_mode = WAL", { simple: true }) === "wal";
      this.#db.pragma(`synchronous = ${level}`);
      createTables(this.#db, this.path);
      // From now on a lock held longer than a moment is waited for on a timer (see #commitPending).
      this.#db.pragma(`busy_timeout = ${Math.min(LOCK_STEP_MS, Math.floor(busyTimeoutMs))}`);
      this.#sql = prepare(this.#db);
      this.#guard = before && new SqliteFileGuard(resolve(this.path), before);
    } catch (error) {
      this.#db.close();
      throw storeFailure(`opening the SQLite store at ${this.path}`, undefined, error);
    }
    this.#checkpointer = wal
      ? new SqliteCheckpointer({
          // Absolute: the worker starts later, and the process may have changed directory by then.
          path: resolve(this.path),
          driver: optionalPackagePath("better-sqlite3"),
          synchronous: level,
          busyTimeoutMs,
        })
      : undefined;
  }

  /**
   * Appends are committed in groups: every append made before the event loop comes round
   * (a run's appends not yet committed, other runs' appends) shares one transaction, and each
   * append's promise resolves once that transaction has committed. One commit costs about as
   * much as one row, so a hundred concurrent runs pay for one commit, not a hundred.
   */
  append(lease: Lease, events: readonly RunEvent[]): Promise<void> {
    return this.#enqueue({ action: "appending events", runId: lease?.runId, lease, events }) as Promise<void>;
  }

  /** Writes waiting for the next group commit, in the order they were made. */
  #pending: PendingWrite[] = [];
  #committing: NodeJS.Immediate | undefined;

  /** Queues a write for the next group commit (lease writes go there too, so they do not break a group up). */
  #enqueue(write: Omit<PendingWrite, "resolve" | "reject" | "lockedUntil">): Promise<unknown> {
    try {
      if (this.#closing) throw closedStore("SqliteStore");
      if (this.#broken) throw this.#broken;
      // Other writes checked their run id (if they have one) before they came here.
      if (write.body === undefined) checkRunId(write.runId);
    } catch (error) {
      return Promise.reject(error);
    }
    this.#enqueued++;
    return new Promise((resolve, reject) => {
      // Every field written, in one order: one shape for every kind of write (a spread made
      // two, and copying them was most of an append's own cost).
      this.#pending.push({
        action: write.action,
        runId: write.runId,
        lease: write.lease,
        events: write.events,
        body: write.body,
        lockedUntil: 0,
        resolve,
        reject,
      });
      // setImmediate, not a microtask: it runs once the runs now going have stopped to wait for
      // their stores, so their writes are all pending by then.
      this.#committing ??= setImmediate(this.#commitPending);
    });
  }

  /**
   * Commits every pending write in one transaction. Each runs in a savepoint of its own, so
   * one that is refused (a lost lease, a gap in seq) fails alone; a commit that fails (a full
   * disk, a lock held too long) fails every write of the group.
   */
  readonly #commitPending = (): void => {
    clearImmediate(this.#committing);
    this.#committing = undefined;
    // Writes wait for another connection's lock: the timer tries again, these writes with them.
    if (this.#lockWait !== undefined) return;
    const group = this.#pending;
    if (group.length === 0) return;
    this.#pending = [];
    const broken = this.#fileBroken();
    if (broken) {
      for (const write of group) write.reject(broken);
      this.#settle(group.length);
      return;
    }
    const attemptedAt = Date.now();
    let outcomes: Outcome[];
    try {
      outcomes =
        group.length === 1
          ? [{ ok: true, value: this.#sql.transaction.immediate(() => this.#apply(group[0]!)) }]
          : (this.#appendedTogether(group) ??
            (this.#sql.transaction.immediate(() => this.#applyGroup(group)) as Outcome[]));
    } catch (error) {
      if (isBusy(error)) {
        this.#waitForLock(group, attemptedAt, error);
        return;
      }
      const damaged = this.#damaged(error);
      for (const write of group) write.reject(damaged ?? storeFailure(write.action, write.runId, error));
      this.#settle(group.length);
      return;
    }
    this.#lockPause = LOCK_STEP_MS;
    this.#checkpointer?.committed();
    for (let i = 0; i < group.length; i++) {
      const write = group[i]!;
      const outcome = outcomes[i]!;
      if (outcome.ok) write.resolve(outcome.value);
      else write.reject(storeFailure(write.action, write.runId, outcome.error));
    }
    this.#settle(group.length);
  };

  /** Set while writes wait for another connection's write lock: the timer that tries again. */
  #lockWait: NodeJS.Timeout | undefined;
  /** The pause before the next attempt at the lock: doubles up to LOCK_PAUSE_MAX_MS. */
  #lockPause = LOCK_STEP_MS;

  /**
   * Another connection holds the write lock (SQLite waited LOCK_STEP_MS for it). Each write of
   * the group has `busyTimeoutMs` from its first attempt: those whose time is up fail
   * (retryably: the lock is someone else's, not a fault of the data), and the others go back to
   * the head of the queue, to be tried again on a timer, joined by the writes made meanwhile.
   * Writes run out of time in call order (a later one was first tried no sooner), so the failed
   * ones are the oldest, and the rest still commit in call order.
   */
  #waitForLock(group: PendingWrite[], attemptedAt: number, error: unknown): void {
    const now = Date.now();
    let expired = 0;
    for (const write of group) {
      if (write.lockedUntil === 0) write.lockedUntil = attemptedAt + this.#busyTimeoutMs;
      if (write.lockedUntil <= now) expired++;
    }
    for (let i = 0; i < expired; i++) {
      const write = group[i]!;
      write.reject(lockTimedOut(write, now - (write.lockedUntil - this.#busyTimeoutMs), error));
    }
    this.#settle(expired);
    if (expired === group.length) return;
    const waiting = expired === 0 ? group : group.slice(expired);
    // (Nothing can have been queued during the attempt, which ran without yielding.)
    this.#pending = this.#pending.length === 0 ? waiting : waiting.concat(this.#pending);
    const pause = Math.max(1, Math.min(this.#lockPause, this.#pending[0]!.lockedUntil - now));
    this.#lockPause = Math.min(this.#lockPause * 2, LOCK_PAUSE_MAX_MS);
    // Not unref'd: the writes' callers are waiting for it, as they would for the commit itself.
    this.#lockWait = setTimeout(() => {
      this.#lockWait = undefined;
      this.#commitPending();
    }, pause);
  }

  /** Writes made so far, and writes settled (committed, refused or failed); they settle in call order. */
  #enqueued = 0;
  #settled = 0;
  /** Reads (and `close`) waiting for the writes made before them to settle. */
  #settleWaiters: Array<{ until: number; resolve: () => void }> = [];

  #settle(count: number): void {
    this.#settled += count;
    if (this.#settleWaiters.length === 0) return;
    const waiters = this.#settleWaiters;
    this.#settleWaiters = [];
    for (const waiter of waiters) {
      if (this.#settled >= waiter.until) waiter.resolve();
      else this.#settleWaiters.push(waiter);
    }
  }

  /**
   * Commits the writes made so far, now if the lock is free; resolves once they have settled.
   * Without a wait for another connection's lock (almost always) it commits at once and
   * returns undefined, so a read pays no await.
   */
  #settleWritesSoFar(): Promise<void> | undefined {
    this.#commitPending();
    const until = this.#enqueued;
    if (this.#settled >= until) return undefined;
    return new Promise((resolve) => this.#settleWaiters.push({ until, resolve }));
  }

  /**
   * The common group of a run going alone: its appends of the last few ticks, all under one
   * lease. They are stored as one append, without the savepoints `#applyGroup` needs to tell
   * their outcomes apart (two statements fewer per commit); if that is refused (the whole
   * transaction is rolled back), the group is tried again the careful way, so each append
   * still gets its own outcome.
   */
  #appendedTogether(group: readonly PendingWrite[]): Outcome[] | undefined {
    const lease = group[0]!.lease;
    if (lease === undefined) return undefined;
    for (const write of group) if (write.body !== undefined || write.lease !== lease) return undefined;
    try {
      this.#sql.transaction.immediate(() =>
        this.#appendRows({ lease, events: group.flatMap((write) => write.events!) }),
      );
    } catch (error) {
      // A full disk, a lock held too long, a damaged file: the group fails, as it would the
      // careful way (and trying again would only wait as long again, or write on in vain).
      if (isTransientFailure(error) || isDamage(error)) throw error;
      return undefined;
    }
    return group.map(() => APPENDED);
  }

  #apply(write: PendingWrite): unknown {
    return write.body !== undefined ? write.body() : this.#appendRows(write as AppendRows);
  }

  /**
   * The writes of a group, each in a savepoint, in order. A run's appends under one lease are
   * stored together (one lease check, one summary update) until another write to that run
   * comes between them; only if that is refused is each tried alone, for its own outcome.
   */
  #applyGroup(group: readonly PendingWrite[]): Outcome[] {
    const attempt = (body: () => unknown): Outcome => {
      try {
        return { ok: true, value: this.#sql.transaction(body) };
      } catch (error) {
        // An error that ended the whole transaction (SQLite rolls back on a full disk or an
        // I/O fault) fails the group: nothing of it was stored. So does a damaged file, whose
        // next write could only spread the damage.
        if (!this.#db.inTransaction || isDamage(error)) throw error;
        return { ok: false, error };
      }
    };
    type Unit = { lease: Lease; indexes: number[] };
    const steps: Array<number | Unit> = [];
    const open = new Map<Lease, Unit>();
    for (let i = 0; i < group.length; i++) {
      const write = group[i]!;
      if (write.body === undefined) {
        const unit = open.get(write.lease!);
        if (unit) unit.indexes.push(i);
        else {
          const fresh = { lease: write.lease!, indexes: [i] };
          open.set(write.lease!, fresh);
          steps.push(fresh);
        }
      } else {
        for (const lease of open.keys()) if (lease.runId === write.runId) open.delete(lease);
        steps.push(i);
      }
    }
    const outcomes: Outcome[] = new Array(group.length);
    for (const step of steps) {
      if (typeof step === "number") {
        outcomes[step] = attempt(() => this.#apply(group[step]!));
        continue;
      }
      const { lease, indexes } = step;
      const together =
        indexes.length === 1
          ? undefined
          : attempt(() => this.#appendRows({ lease, events: indexes.flatMap((i) => group[i]!.events!) }));
      for (const i of indexes) {
        outcomes[i] = together?.ok ? together : attempt(() => this.#apply(group[i]!));
      }
    }
    return outcomes;
  }

  /** One append's statements, inside the group's transaction. */
  readonly #appendRows = ({ lease, events }: AppendRows): void => {
    const runId = lease.runId;
    // One statement reads the lease, the runs row and where the log ends.
    const head = this.#sql.appendHead.get(runId) as AppendHead;
    // The clock is read inside the transaction: the lease must still be live once the write
    // lock is ours, however long another process made us wait for it.
    checkLeaseHeld(lease, toLease(runId, head.owner === null ? undefined : (head as LeaseRow)), Date.now());
    if (events.length === 0) return;
    const row = head.run_key === null ? undefined : (head as unknown as KeyedRunRow);
    const stored = row && toRunSummary(row);
    const lastSeq = row === undefined ? 0 : Math.max(Number(row.last_seq), head.tail_seq ?? 0);
    const { rows, payloads } = encodeEvents(runId, lastSeq, events);
    if (lastSeq + rows.length > MAX_SEQ) {
      throw new StoreError(`run ${runId}: a SQLite store keeps at most ${MAX_SEQ} events per run`, { runId });
    }
    const summary = summarize(runId, stored && { ...stored, lastSeq }, events);
    // Payloads first, in the same transaction: a stored row never refers to a missing one.
    const owner = payloadOwner(runId, summary.sessionId);
    for (const payload of payloads) this.#sql.putPayload.run(owner, payload.key, payload.text);
    let runKey: number;
    const sameRun =
      stored !== undefined &&
      stored.agent === summary.agent &&
      stored.startedAt === summary.startedAt &&
      stored.sessionId === summary.sessionId &&
      stored.parentRunId === summary.parentRunId;
    if (
      sameRun &&
      stored.status === summary.status &&
      stored.failureKind === summary.failureKind &&
      summary.lastSeq - stored.lastSeq < SUMMARY_LAG
    ) {
      // The runs row is left as it is: its page would be one more written per commit. Readers
      // add the events stored after its last_seq (see RUNS_NOW).
      runKey = row!.run_key;
    } else {
      if (stored !== undefined && lastSeq > stored.lastSeq) {
        // The events since the row was last written count towards updated_at too.
        const tail = this.#sql.tailUpdatedAt.get(row!.run_key, stored.lastSeq, row!.run_key) as {
          at: number | null;
        };
        summary.updatedAt = Math.max(summary.updatedAt, tail.at ?? 0);
      }
      if (sameRun) {
        // Only what an append changes: rewriting the indexed columns would dirty the session
        // index's page too.
        this.#sql.advanceRun.run(
          summary.updatedAt,
          summary.lastSeq,
          summary.status,
          summary.failureKind ?? null,
          runId,
        );
        runKey = row!.run_key;
      } else {
        runKey = (this.#sql.upsertRun.get(...runRowValues(summary)) as { run_key: number }).run_key;
        if (runKey > MAX_RUN_KEY) {
          throw new StoreError(
            `the SQLite store at ${this.path} is full: it keeps at most ${MAX_RUN_KEY} runs`,
            {
              runId,
            },
          );
        }
      }
    }
    for (const event of rows) this.#sql.insertEvent.run(runKey, event.seq, event.version, event.body);
  };

  async read(runId: string, afterSeq?: number): Promise<RunEvent[]> {
    const after = checkAfterSeq(runId, afterSeq);
    // One read transaction: the rows and the summary's lastSeq come from the same snapshot,
    // so an append committing in between cannot look like a missing row.
    // The payloads the rows refer to come from the same snapshot too.
    return this.#snapshot("reading events", runId, () => {
      // Where the log ends (not the whole summary: its updatedAt may need the tail's bodies parsed).
      const head = this.#sql.appendHead.get(runId) as AppendHead;
      if (head.run_key === null) return decodeEvents(runId, after, 0, []);
      const lastSeq = Math.max(Number(head.last_seq), head.tail_seq ?? 0);
      const rows = (
        this.#sql.readEvents.all(head.run_key, Math.min(after, MAX_SEQ), head.run_key) as EventRow[]
      ).map(toStoredEvent);
      const events = decodeEvents(runId, after, lastSeq, rows);
      const texts = new Map<string, string>();
      const owners = payloadOwners(runId, (head as { session_id?: string | null }).session_id ?? undefined);
      const known = new Map<string, unknown>();
      for (const key of referencedPayloads(events, known)) {
        for (const owner of owners) {
          const row = this.#sql.getArtifact.get(owner, key) as { text: string } | undefined;
          if (row === undefined) continue;
          texts.set(key, row.text);
          break;
        }
      }
      return withPayloads(runId, events, texts, known);
    });
  }

  async acquireLease(runId: string, owner: string, ttlMs: number): Promise<Lease> {
    checkLeaseRequest(runId, owner, ttlMs);
    return this.#enqueue({
      action: "acquiring the lease",
      runId,
      body: () => {
        const now = Date.now();
        checkLeaseFree(runId, owner, this.#lease(runId), now);
        this.#sql.putLease.run(runId, owner, now + ttlMs);
        return { runId, owner, expiresAt: now + ttlMs, stored: this.#sql.hasRun.get(runId) !== undefined };
      },
    }) as Promise<Lease>;
  }

  async renewLease(lease: Lease, ttlMs: number): Promise<Lease> {
    checkLeaseRequest(lease.runId, lease.owner, ttlMs);
    return this.#enqueue({
      action: "renewing the lease",
      runId: lease.runId,
      body: () => {
        const now = Date.now();
        checkLeaseHeld(lease, this.#lease(lease.runId), now);
        this.#sql.putLease.run(lease.runId, lease.owner, now + ttlMs);
        return { runId: lease.runId, owner: lease.owner, expiresAt: now + ttlMs };
      },
    }) as Promise<Lease>;
  }

  async releaseLease(lease: Lease): Promise<void> {
    // Only the owner's own lease is deleted: one taken over by another process stays theirs.
    await this.#enqueue({
      action: "releasing the lease",
      runId: lease.runId,
      body: () => void this.#sql.deleteLease.run(lease.runId, lease.owner),
    });
  }

  async getRun(runId: string): Promise<RunSummary | undefined> {
    return this.#snapshot("reading the run", runId, () => {
      const row = this.#sql.getRunWithLease.get(runId) as RunRow | undefined;
      return row && toRunSummary(row);
    });
  }

  async listRuns(filter: RunFilter = {}): Promise<RunSummary[]> {
    const statuses = filterStatuses(filter);
    const ends = filterEnds(filter);
    return this.#snapshot("listing runs", undefined, () => {
      const match = {
        ...(filter.sessionId !== undefined && { session: filter.sessionId }),
        statuses: statuses === undefined ? null : JSON.stringify([...statuses]),
        top: filter.topLevel ? 1 : 0,
        ...ends,
      };
      const sql = this.#sql;
      const statement =
        filter.sessionId === undefined
          ? ends
            ? sql.listRunEnds
            : sql.listRuns
          : ends
            ? sql.listSessionRunEnds
            : sql.listSessionRuns;
      return (statement.all(match) as RunRow[]).map(toRunSummary);
    });
  }

  async listSessions(): Promise<SessionSummary[]> {
    return this.#snapshot("listing sessions", undefined, () =>
      (this.#sql.listSessions.all() as SessionRow[]).map(toSessionSummary),
    );
  }

  async clearSession(sessionId: string): Promise<void> {
    // Queued behind the appends made before it, as the caller made them.
    await this.#enqueue({
      action: "clearing the session",
      runId: undefined,
      body: () => {
        const { runKeys, deleteEvents, payloads, others } = this.#sql.clearSession;
        for (const { run_key } of runKeys.all(sessionId) as Array<{ run_key: number }>)
          deleteEvents.run(run_key, run_key);
        payloads.run(sessionPayloads(sessionId));
        for (const statement of others) statement.run(sessionId);
      },
    });
  }

  async putArtifact(runId: string, key: string, text: string): Promise<void> {
    checkArtifact(runId, key, text);
    await this.#enqueue({
      action: "storing an artifact",
      runId,
      body: () => void this.#sql.putArtifact.run(runId, key, text),
    });
  }

  async getArtifact(runId: string, key: string): Promise<string | undefined> {
    return this.#snapshot("reading an artifact", runId, () => {
      const row = this.#sql.getArtifact.get(runId, key) as { text: string } | undefined;
      return row?.text;
    });
  }

  close(): Promise<void> {
    if (this.#closing) return this.#closing;
    // Appends already made are committed, not dropped (waiting for another connection's lock
    // as long as they would have).
    const settled = this.#settleWritesSoFar();
    this.#closing = (async () => {
      await settled;
      // The worker's connection first: the last connection to close checkpoints the whole WAL.
      await this.#checkpointer?.close();
      this.#db.close();
    })();
    return this.#closing;
  }

  /** Set once `close` is called: the store takes no more writes or reads. */
  #closing: Promise<void> | undefined;

  #lease(runId: string): Lease | undefined {
    return toLease(runId, this.#sql.getLease.get(runId) as LeaseRow | undefined);
  }

  /**
   * Runs `body` in a read transaction (one consistent snapshot in WAL mode). A read never waits
   * for another connection's write lock, but it does wait for this store's writes made before
   * it, which may (and then it is async).
   */
  #snapshot<T>(action: string, runId: string | undefined, body: () => T): T | Promise<T> {
    if (this.#closing) throw closedStore("SqliteStore");
    // A read sees every append made before it (not those made while it waited for them).
    const settled = this.#settleWritesSoFar();
    if (settled === undefined) return this.#read(action, runId, body);
    return settled.then(() => {
      if (this.#closing) throw closedStore("SqliteStore");
      return this.#read(action, runId, body);
    });
  }

  #read<T>(action: string, runId: string | undefined, body: () => T): T | Promise<T> {
    // Nor does a read answer from a file that is gone: its runs would not be there tomorrow.
    const broken = this.#fileBroken();
    if (broken) throw broken;
    try {
      return this.#sql.transaction.deferred(body) as T;
    } catch (error) {
      // A read is kept from the file only for a moment (another connection rebuilding the
      // shared index after a crash); it is tried again, within busyTimeoutMs, off the event loop.
      if (isBusy(error)) return this.#readAgain(action, runId, body, error);
      throw this.#damaged(error) ?? storeFailure(action, runId, error);
    }
  }

  async #readAgain<T>(action: string, runId: string | undefined, body: () => T, first: unknown): Promise<T> {
    const since = Date.now();
    let error = first;
    for (let pause = LOCK_STEP_MS; Date.now() - since < this.#busyTimeoutMs; ) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(pause, this.#busyTimeoutMs)));
      pause = Math.min(pause * 2, LOCK_PAUSE_MAX_MS);
      if (this.#closing) throw closedStore("SqliteStore");
      try {
        return this.#sql.transaction.deferred(body) as T;
      } catch (again) {
        if (!isBusy(again)) throw this.#damaged(again) ?? storeFailure(action, runId, again);
        error = again;
      }
    }
    throw storeFailure(action, runId, error);
  }

  /**
   * The error every operation fails with once the file is gone or damaged, checked before each
   * commit and read: a stat of the path and a read of the header (see SqliteFileGuard).
   */
  #fileBroken(): StoreError | undefined {
    this.#broken ??= this.#guard?.check();
    return this.#broken;
  }

  /** For an error SQLite reports when it reads a damaged page: the store's own, naming the file, and sticky. */
  #damaged(error: unknown): StoreError | undefined {
    if (!isDamage(error)) return undefined;
    this.#broken ??= new StoreError(
      `the SQLite store at ${this.#guard === undefined ? this.path : resolve(this.path)} is damaged: ${(error as Error).message} ` +
        `(${(error as { code: string }).code}); nothing more is stored in it. Stop every process using the file and ` +
        "restore it from a backup (the sqlite3 shell's .recover command may save what is left)",
      { cause: error, retryable: false },
    );
    return this.#broken;
  }
}

/** SQLite's code for a lock another connection holds (`SQLITE_BUSY`, and its extended `SQLITE_BUSY_…` codes). */
function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && code.startsWith("SQLITE_BUSY");
}

/** A write that waited `busyTimeoutMs` for another connection's lock: retryable, as the lock is not the data's fault. */
function lockTimedOut(write: PendingWrite, waitedMs: number, error: unknown): StoreError {
  const subject = write.runId === undefined ? "" : ` for run ${write.runId}`;
  return new StoreError(
    `${write.action}${subject} failed: the database is locked by another connection (waited ${waitedMs} ms, ` +
      "busyTimeoutMs); try again once it lets go",
    { ...(write.runId !== undefined && { runId: write.runId }), cause: error, retryable: true },
  );
}

/** SQLite's codes for a file that is not, or no longer, a sound database. */
function isDamage(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^SQLITE_(CORRUPT|NOTADB)/.test(code);
}

function open(Database: typeof BetterSqlite3, path: string, timeout: number): BetterSqlite3.Database {
  if (path !== ":memory:") mkdirSync(dirname(resolve(path)), { recursive: true });
  try {
    return new Database(path, { timeout });
  } catch (error) {
    const message = (error as Error).message;
    // A native module built for another Node version fails here, not at require time.
    if (/bindings|NODE_MODULE_VERSION|compiled against|invalid ELF/i.test(message)) {
      throw new UserError(
        `SqliteStore could not load better-sqlite3's native module (${message}); run \`npm rebuild better-sqlite3\` ` +
          "or reinstall it with `npm install better-sqlite3@12`",
        { cause: error },
      );
    }
    throw storeFailure(`opening the SQLite store at ${path}`, undefined, error);
  }
}

function createTables(db: BetterSqlite3.Database, path: string): void {
  // A file that is up to date needs no write: opening it does not wait for another process's
  // write lock (a run committing, a `quiver` command) on the event loop.
  if (db.pragma("user_version", { simple: true }) === TABLES_VERSION && hasFailureKind(db)) return;
  // Read under the write lock: two processes opening an old file at once migrate it once.
  db.transaction(() => {
    const version = db.pragma("user_version", { simple: true }) as number;
    if (version > TABLES_VERSION) {
      throw new StoreError(
        `the SQLite store at ${path} was created by a newer Quiver (tables version ${version}, this one knows ${TABLES_VERSION}); upgrade Quiver to open it`,
      );
    }
    if (version === 1) {
      migrateFromVersion1(db, path);
      summarizeFailures(db);
    } else {
      db.exec(TABLES);
      if (addFailureKind(db)) summarizeFailures(db);
    }
    if (version !== TABLES_VERSION) db.pragma(`user_version = ${TABLES_VERSION}`);
  }).immediate();
}

/**
 * Gives runs tables made before runs had a `failure_kind` the column; true if it was missing.
 * The tables version stays 2: the column is nullable and an older Quiver that shares the file
 * goes on reading and writing its rows (it names the columns it writes).
 */
function addFailureKind(db: BetterSqlite3.Database): boolean {
  if (hasFailureKind(db)) return false;
  db.exec("ALTER TABLE quiver_runs ADD COLUMN failure_kind TEXT");
  return true;
}

function hasFailureKind(db: BetterSqlite3.Database): boolean {
  const columns = db.pragma("table_info(quiver_runs)") as Array<{ name: string }>;
  return columns.some((column) => column.name === "failure_kind");
}

/**
 * Runs whose log ends with `run_failed` get status `failed` and its kind, so that their summary
 * says what their log says: an older Quiver kept a run stopped by its store (`store_unavailable`)
 * `running`. `Runner.recover` resumes such a run either way.
 */
function summarizeFailures(db: BetterSqlite3.Database): void {
  const ends = db
    .prepare(
      `SELECT r.run_id, (SELECT e.body FROM quiver_events e
         WHERE e.event_key > (r.run_key << 32) AND e.event_key < ((r.run_key + 1) << 32)
         ORDER BY e.event_key DESC LIMIT 1) AS body
       FROM quiver_runs r WHERE r.status IN ('running', 'failed') AND body LIKE '%"run_failed"%'`,
    )
    .all() as Array<{ run_id: string; body: string }>;
  const fail = db.prepare("UPDATE quiver_runs SET status = 'failed', failure_kind = ? WHERE run_id = ?");
  for (const { run_id, body } of ends) {
    // LIKE only narrows the rows down; failureKindOf decides.
    const kind = failureKindOf(body);
    if (kind !== undefined) fail.run(kind, run_id);
  }
}

/** Moves a version 1 file's rows into version 2's tables, inside the caller's transaction. */
function migrateFromVersion1(db: BetterSqlite3.Database, path: string): void {
  const count = (table: string) =>
    (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
  db.exec(FROM_VERSION_1);
  // Every event row belongs to a runs row (both are written in one transaction); one that
  // does not would be dropped by the join, so the file is refused instead and left as it was.
  const [before, after] = [count("quiver_events_v1"), count("quiver_events")];
  if (before !== after) {
    throw new StoreError(
      `the SQLite store at ${path} (tables version 1) has ${before - after} event rows of runs it has no summary for; it was left unchanged`,
    );
  }
  db.exec("DROP TABLE quiver_events_v1; DROP TABLE quiver_runs_v1;");
}

/** What one append stores. */
type AppendRows = { lease: Lease; events: readonly RunEvent[] };

/** A write waiting for the next group commit: an append (`lease`, `events`) or any other (`body`). */
type PendingWrite = {
  action: string;
  /** Undefined only for a write of no one run (`clearSession`). */
  runId: string | undefined;
  lease?: Lease;
  events?: readonly RunEvent[];
  body?: () => unknown;
  /** Until when (epoch ms) the write may wait for another connection's lock; 0 until it first met one. */
  lockedUntil: number;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
};

/** A runs row with its key, which numbers its events. */
type KeyedRunRow = RunRow & { run_key: number };

/** `appendHead`'s row: the lease's columns and the runs row's, null where there is none. */
type AppendHead = {
  owner: string | null;
  expires_at: number | null;
  run_key: number | null;
  last_seq: number | null;
  tail_seq: number | null;
};

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };
const APPENDED: Outcome = { ok: true, value: undefined };

function prepare(db: BetterSqlite3.Database) {
  const inSession = "SELECT run_id FROM quiver_runs WHERE session_id = ?";
  return {
    // Made once: better-sqlite3 builds a wrapper per `transaction()` call. Called inside
    // another transaction, it runs `body` in a savepoint.
    transaction: db.transaction((body: () => unknown) => body()),
    insertEvent: db.prepare(
      "INSERT INTO quiver_events (event_key, version, body) VALUES ((? << 32) + ?, ?, ?)",
    ),
    // What an append needs to know, in one statement: the run's lease, its runs row (all null
    // for a new run) and the last seq stored after that row's last_seq.
    appendHead: db.prepare(
      `SELECT l.owner, l.expires_at, r.*,
         (SELECT e.event_key & 4294967295 FROM quiver_events e
          WHERE e.event_key > (r.run_key << 32) + r.last_seq AND e.event_key < ((r.run_key + 1) << 32)
          ORDER BY e.event_key DESC LIMIT 1) AS tail_seq
       FROM (SELECT ? AS id) k
       LEFT JOIN quiver_leases l ON l.run_id = k.id LEFT JOIN quiver_runs r ON r.run_id = k.id`,
    ),
    tailUpdatedAt: db.prepare(
      `SELECT max(json_extract(body, '$.at')) AS at FROM quiver_events
       WHERE event_key > (? << 32) + ? AND event_key < ((? + 1) << 32) AND json_valid(body)`,
    ),
    // A run's events are the keys run_key << 32 + 1 … run_key << 32 + 2^32 - 1, in seq order.
    readEvents: db.prepare(
      `SELECT event_key & 4294967295 AS seq, version, body FROM quiver_events
       WHERE event_key > (? << 32) + ? AND event_key < ((? + 1) << 32) ORDER BY event_key`,
    ),
    advanceRun: db.prepare(
      "UPDATE quiver_runs SET updated_at = ?, last_seq = ?, status = ?, failure_kind = ? WHERE run_id = ?",
    ),
    getRunWithLease: db.prepare(`${runsWithLeases(RUNS_NOW, "quiver_leases")} WHERE r.run_id = ?`),
    upsertRun: db.prepare(
      `INSERT INTO quiver_runs (${RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (run_id) DO UPDATE SET ${RUN_UPDATE} RETURNING run_key`,
    ),
    // A null parameter means "any". A session's ends (`first`, `last`) are found through its
    // index, whatever its length.
    listRuns: db.prepare(listedRuns(false, false)),
    listRunEnds: db.prepare(listedRuns(false, true)),
    listSessionRuns: db.prepare(listedRuns(true, false)),
    listSessionRunEnds: db.prepare(listedRuns(true, true)),
    listSessions: db.prepare(
      `SELECT session_id, count(*) AS runs, min(started_at) AS started_at, max(updated_at) AS updated_at
       FROM ${RUNS_NOW} WHERE session_id IS NOT NULL GROUP BY session_id ORDER BY started_at, session_id`,
    ),
    getLease: db.prepare("SELECT owner, expires_at FROM quiver_leases WHERE run_id = ?"),
    hasRun: db.prepare("SELECT 1 FROM quiver_runs WHERE run_id = ?"),
    putLease: db.prepare(
      `INSERT INTO quiver_leases (run_id, owner, expires_at) VALUES (?, ?, ?)
       ON CONFLICT (run_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at`,
    ),
    deleteLease: db.prepare("DELETE FROM quiver_leases WHERE run_id = ? AND owner = ?"),
    putArtifact: db.prepare(
      `INSERT INTO quiver_artifacts (run_id, key, text) VALUES (?, ?, ?)
       ON CONFLICT (run_id, key) DO UPDATE SET text = excluded.text`,
    ),
    getArtifact: db.prepare("SELECT text FROM quiver_artifacts WHERE run_id = ? AND key = ?"),
    // A payload's key is the digest of its text: one already stored is the same text.
    putPayload: db.prepare(
      "INSERT INTO quiver_artifacts (run_id, key, text) VALUES (?, ?, ?) ON CONFLICT (run_id, key) DO NOTHING",
    ),
    // The runs rows go last: the others are found through them.
    clearSession: {
      runKeys: db.prepare("SELECT run_key FROM quiver_runs WHERE session_id = ?"),
      // The session's payloads, kept under an owner of their own (payloadOwner).
      payloads: db.prepare("DELETE FROM quiver_artifacts WHERE run_id = ?"),
      deleteEvents: db.prepare(
        "DELETE FROM quiver_events WHERE event_key > (? << 32) AND event_key < ((? + 1) << 32)",
      ),
      others: [
        db.prepare(`DELETE FROM quiver_leases WHERE run_id IN (${inSession})`),
        db.prepare(`DELETE FROM quiver_artifacts WHERE run_id IN (${inSession})`),
        db.prepare("DELETE FROM quiver_runs WHERE session_id = ?"),
      ],
    },
  };
}
