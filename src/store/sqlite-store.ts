import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import { UserError } from "../errors.js";
import type { RunEvent } from "../run/events.js";
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
  filterStatuses,
  referencedPayloads,
  storeFailure,
  summarize,
  withPayloads,
} from "./log-rules.js";
import { loadOptionalPackage } from "./optional-package.js";
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
  /** How long a write waits for another process's transaction before failing. Default 5,000 ms. */
  busyTimeoutMs?: number;
};

const DEFAULT_PATH = ".quiver/quiver.db";

/** The version of the tables below, kept in SQLite's `user_version`: a newer file is refused, not misread. */
const TABLES_VERSION = 1;

const TABLES = `
CREATE TABLE IF NOT EXISTS quiver_runs (
  run_id TEXT PRIMARY KEY, session_id TEXT, parent_run_id TEXT, agent TEXT NOT NULL, started_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL, last_seq INTEGER NOT NULL, status TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS quiver_runs_by_session ON quiver_runs (session_id, started_at);
CREATE TABLE IF NOT EXISTS quiver_events (
  run_id TEXT NOT NULL, seq INTEGER NOT NULL, version INTEGER NOT NULL, body TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS quiver_leases (run_id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS quiver_artifacts (
  run_id TEXT NOT NULL, key TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY (run_id, key));
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
  #closed = false;
  /** Appends queue in call order and commit in that order (see `append`). */
  readonly [APPENDS_IN_CALL_ORDER] = true;

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
    this.#db = open(Database, this.path, options.busyTimeoutMs ?? 5_000);
    try {
      this.#db.pragma("journal_mode = WAL");
      this.#db.pragma(`synchronous = ${synchronous === "full" ? "FULL" : "NORMAL"}`);
      createTables(this.#db, this.path);
      this.#sql = prepare(this.#db);
    } catch (error) {
      this.#db.close();
      throw storeFailure(`opening the SQLite store at ${this.path}`, undefined, error);
    }
  }

  /**
   * Appends are committed in groups: every append made before the event loop comes round
   * (this run's events of the same tick, other runs' appends) shares one transaction, and each
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
  #enqueue(write: Omit<PendingWrite, "resolve" | "reject">): Promise<unknown> {
    try {
      if (this.#closed) throw closedStore("SqliteStore");
      checkRunId(write.runId);
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise((resolve, reject) => {
      this.#pending.push({ ...write, resolve, reject });
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
    const group = this.#pending;
    if (group.length === 0) return;
    this.#pending = [];
    let outcomes: Outcome[];
    try {
      outcomes =
        group.length === 1
          ? [{ ok: true, value: this.#sql.transaction.immediate(() => this.#apply(group[0]!)) }]
          : (this.#sql.transaction.immediate(() => this.#applyGroup(group)) as Outcome[]);
    } catch (error) {
      for (const write of group) write.reject(storeFailure(write.action, write.runId, error));
      return;
    }
    for (let i = 0; i < group.length; i++) {
      const write = group[i]!;
      const outcome = outcomes[i]!;
      if (outcome.ok) write.resolve(outcome.value);
      else write.reject(storeFailure(write.action, write.runId, outcome.error));
    }
  };

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
        // I/O fault) fails the group: nothing of it was stored.
        if (!this.#db.inTransaction) throw error;
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
    // The clock is read inside the transaction: the lease must still be live once the write
    // lock is ours, however long another process made us wait for it.
    checkLeaseHeld(lease, this.#lease(runId), Date.now());
    if (events.length === 0) return;
    const previous = this.#run(runId);
    const { rows, payloads } = encodeEvents(runId, previous?.lastSeq ?? 0, events);
    // Payloads first, in the same transaction: a stored row never refers to a missing one.
    for (const payload of payloads) this.#sql.putPayload.run(runId, payload.key, payload.text);
    for (const row of rows) this.#sql.insertEvent.run(runId, row.seq, row.version, row.body);
    const summary = summarize(runId, previous, events);
    if (
      previous !== undefined &&
      previous.agent === summary.agent &&
      previous.startedAt === summary.startedAt &&
      previous.sessionId === summary.sessionId &&
      previous.parentRunId === summary.parentRunId
    ) {
      // Only what an append changes: rewriting the indexed columns would dirty the session
      // index's page too, one more page written per commit.
      this.#sql.advanceRun.run(summary.updatedAt, summary.lastSeq, summary.status, runId);
    } else this.#sql.upsertRun.run(...runRowValues(summary));
  };

  async read(runId: string, afterSeq?: number): Promise<RunEvent[]> {
    const after = checkAfterSeq(runId, afterSeq);
    // One read transaction: the rows and the summary's lastSeq come from the same snapshot,
    // so an append committing in between cannot look like a missing row.
    // The payloads the rows refer to come from the same snapshot too.
    return this.#snapshot("reading events", runId, () => {
      const rows = (this.#sql.readEvents.all(runId, after) as EventRow[]).map(toStoredEvent);
      const events = decodeEvents(runId, after, this.#run(runId)?.lastSeq ?? 0, rows);
      const texts = new Map<string, string>();
      for (const key of referencedPayloads(events)) {
        const row = this.#sql.getArtifact.get(runId, key) as { text: string } | undefined;
        if (row !== undefined) texts.set(key, row.text);
      }
      return withPayloads(runId, events, texts);
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
        return { runId, owner, expiresAt: now + ttlMs };
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
    return this.#snapshot("listing runs", undefined, () => {
      const rows = this.#sql.listRuns.all({
        session: filter.sessionId ?? null,
        statuses: statuses === undefined ? null : JSON.stringify([...statuses]),
      });
      return (rows as RunRow[]).map(toRunSummary);
    });
  }

  async listSessions(): Promise<SessionSummary[]> {
    return this.#snapshot("listing sessions", undefined, () =>
      (this.#sql.listSessions.all() as SessionRow[]).map(toSessionSummary),
    );
  }

  async clearSession(sessionId: string): Promise<void> {
    this.#write("clearing the session", undefined, () => {
      for (const statement of this.#sql.clearSession) statement.run(sessionId);
    });
  }

  async putArtifact(runId: string, key: string, text: string): Promise<void> {
    checkArtifact(runId, key, text);
    this.#write("storing an artifact", runId, () => this.#sql.putArtifact.run(runId, key, text));
  }

  async getArtifact(runId: string, key: string): Promise<string | undefined> {
    return this.#snapshot("reading an artifact", runId, () => {
      const row = this.#sql.getArtifact.get(runId, key) as { text: string } | undefined;
      return row?.text;
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    // Appends already made are committed, not dropped.
    this.#commitPending();
    this.#closed = true;
    this.#db.close();
  }

  #lease(runId: string): Lease | undefined {
    return toLease(runId, this.#sql.getLease.get(runId) as LeaseRow | undefined);
  }

  #run(runId: string): RunSummary | undefined {
    const row = this.#sql.getRun.get(runId) as RunRow | undefined;
    return row && toRunSummary(row);
  }

  /** Runs `body` in a write transaction that holds SQLite's write lock from its first statement. */
  #write<T>(action: string, runId: string | undefined, body: () => T): T {
    if (this.#closed) throw closedStore("SqliteStore");
    // Appends made before this call come first, as the caller made them.
    this.#commitPending();
    try {
      return this.#sql.transaction.immediate(body) as T;
    } catch (error) {
      throw storeFailure(action, runId, error);
    }
  }

  /** Runs `body` in a read transaction (one consistent snapshot in WAL mode). */
  #snapshot<T>(action: string, runId: string | undefined, body: () => T): T {
    if (this.#closed) throw closedStore("SqliteStore");
    // A read sees every append made before it.
    this.#commitPending();
    try {
      return this.#sql.transaction.deferred(body) as T;
    } catch (error) {
      throw storeFailure(action, runId, error);
    }
  }
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
  const version = db.pragma("user_version", { simple: true }) as number;
  if (version > TABLES_VERSION) {
    throw new StoreError(
      `the SQLite store at ${path} was created by a newer Quiver (tables version ${version}, this one knows ${TABLES_VERSION}); upgrade Quiver to open it`,
    );
  }
  db.transaction(() => {
    db.exec(TABLES);
    db.pragma(`user_version = ${TABLES_VERSION}`);
  }).immediate();
}

/** What one append stores. */
type AppendRows = { lease: Lease; events: readonly RunEvent[] };

/** A write waiting for the next group commit: an append (`lease`, `events`) or any other (`body`). */
type PendingWrite = {
  action: string;
  runId: string;
  lease?: Lease;
  events?: readonly RunEvent[];
  body?: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
};

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

function prepare(db: BetterSqlite3.Database) {
  const inSession = "SELECT run_id FROM quiver_runs WHERE session_id = ?";
  return {
    // Made once: better-sqlite3 builds a wrapper per `transaction()` call. Called inside
    // another transaction, it runs `body` in a savepoint.
    transaction: db.transaction((body: () => unknown) => body()),
    insertEvent: db.prepare("INSERT INTO quiver_events (run_id, seq, version, body) VALUES (?, ?, ?, ?)"),
    readEvents: db.prepare(
      "SELECT seq, version, body FROM quiver_events WHERE run_id = ? AND seq > ? ORDER BY seq",
    ),
    getRun: db.prepare("SELECT * FROM quiver_runs WHERE run_id = ?"),
    advanceRun: db.prepare(
      "UPDATE quiver_runs SET updated_at = ?, last_seq = ?, status = ? WHERE run_id = ?",
    ),
    getRunWithLease: db.prepare(`${runsWithLeases("quiver_runs", "quiver_leases")} WHERE r.run_id = ?`),
    upsertRun: db.prepare(
      `INSERT INTO quiver_runs (${RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (run_id) DO UPDATE SET ${RUN_UPDATE}`,
    ),
    // A null parameter means "any": one statement serves every filter.
    listRuns: db.prepare(
      `${runsWithLeases("quiver_runs", "quiver_leases")}
       WHERE (@session IS NULL OR r.session_id = @session)
         AND (@statuses IS NULL OR r.status IN (SELECT value FROM json_each(@statuses)))
       ORDER BY r.started_at, r.run_id`,
    ),
    listSessions: db.prepare(
      `SELECT session_id, count(*) AS runs, min(started_at) AS started_at, max(updated_at) AS updated_at
       FROM quiver_runs WHERE session_id IS NOT NULL GROUP BY session_id ORDER BY started_at, session_id`,
    ),
    getLease: db.prepare("SELECT owner, expires_at FROM quiver_leases WHERE run_id = ?"),
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
    // The runs row goes last: the others find their runs through it.
    clearSession: [
      db.prepare(`DELETE FROM quiver_events WHERE run_id IN (${inSession})`),
      db.prepare(`DELETE FROM quiver_leases WHERE run_id IN (${inSession})`),
      db.prepare(`DELETE FROM quiver_artifacts WHERE run_id IN (${inSession})`),
      db.prepare("DELETE FROM quiver_runs WHERE session_id = ?"),
    ],
  };
}
