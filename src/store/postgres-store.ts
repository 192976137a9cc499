import type * as Pg from "pg";
import type { RunEvent } from "../contract/events.js";
import { UserError } from "../errors.js";
import { batchRows } from "./batch-rows.js";
import { type DatabaseClock, databaseClockOf } from "./database-clock.js";
import { ownerIsGone } from "./lease-owner.js";
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
  filterEnds,
  filterStatuses,
  referencedPayloads,
  type StoredRunSummary,
  storeFailure,
  summarize,
  withPayloads,
} from "./log-rules.js";
import { loadOptionalPackage } from "./optional-package.js";
import { payloadOwner, payloadOwners, sessionPayloads } from "./payloads.js";
import { PostgresNotices } from "./postgres-notices.js";
import {
  appendFunctionName,
  createTables,
  NOW_MS,
  type PostgresClient,
  type PostgresPool,
  type PostgresTables,
  tableNames,
} from "./postgres-tables.js";
import { type LiteralType, sqlLiteral } from "./sql-literals.js";
import {
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
  type Lease,
  type RunFilter,
  type RunStore,
  type RunSummary,
  type SessionSummary,
  StoreError,
} from "./types.js";

export type { PostgresClient, PostgresPool } from "./postgres-tables.js";

export type PostgresStoreOptions = (
  | { connectionString: string; pool?: undefined }
  /** A pool you own (a `pg.Pool`): the store uses it and leaves closing it to you. */
  | { pool: PostgresPool; connectionString?: undefined }
) & {
  /** The schema that holds Quiver's tables (`quiver_runs`, `quiver_events`, …); created if missing. Default `"public"`. */
  schema?: string;
  /**
   * The longest any one operation may take, connecting included (default 10,000 ms). Past it
   * the operation rejects with a retryable `StoreError` and its connection is discarded, so a
   * database that stops answering (a partition, a frozen server) never hangs a run. With a
   * connection string it also becomes the server's `statement_timeout` and the pool's
   * connection timeout.
   */
  timeoutMs?: number;
};

const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * A `RunStore` on PostgreSQL, for runs shared by many processes and machines. The tables are
 * created on first use. Every write is one transaction that locks the run's lease row, and
 * lease expiry is judged by the database's clock, so two processes can never both take a
 * run's lease or append the same seq, however skewed their own clocks are.
 *
 * `pg` is an optional peer dependency (`npm install pg@8`), loaded when a store is constructed
 * from a connection string.
 *
 * @example
 * const store = new PostgresStore({ connectionString: process.env.DATABASE_URL! });
 * const lease = await store.acquireLease(runId, `worker-${process.pid}`, 30_000);
 * await store.append(lease, events);
 * await store.close();
 */
export class PostgresStore implements RunStore {
  readonly schema: string;
  /**
   * The channel notified (`pg_notify`) of every `append` once it has committed, with
   * `{ runId, lastSeq, status }` as JSON (`status` as `getRun` would give it after the append),
   * so a process can tail runs driven elsewhere: `LISTEN` on it, then `read(runId, afterSeq)`.
   * Notices come in commit order, each after its rows can be read, a moment after the append
   * returns (see `PostgresNotices`). They are hints, never the record: a listener that connects
   * late reads first, and one that must not wait on a lost notice polls too.
   *
   * @example
   * await client.query(`LISTEN "${store.eventsChannel}"`);
   */
  readonly eventsChannel: string;
  readonly #pool: PostgresPool;
  readonly #ownsPool: boolean;
  readonly #t: PostgresTables;
  readonly #timeoutMs: number;
  #ready: Promise<void> | undefined;
  /** The schema's append function, when the tables' setup found or made it (`createTables`). */
  #appendFunction: string | undefined;
  #closed = false;
  /** The database's clock as last read, for the deadlines of appends that commit on their own. */
  readonly #clock: DatabaseClock;
  readonly #notices = new PostgresNotices((payloads) =>
    this.#withClient("notifying listeners", undefined, (client) =>
      // Committed without waiting for its WAL flush: a notice is a hint, and the lock it takes
      // is held only until the commit is in memory, not on disk.
      client.query(
        `SELECT pg_notify($1, notice)
         FROM (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit, unnest($2::text[]) AS n(notice)`,
        [this.eventsChannel, payloads],
      ),
    ),
  );

  constructor(options: PostgresStoreOptions) {
    this.schema = options.schema ?? "public";
    this.eventsChannel = `quiver_events:${this.schema}`;
    this.#t = tableNames(this.schema);
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!(typeof timeoutMs === "number" && Number.isFinite(timeoutMs) && timeoutMs > 0)) {
      throw new UserError(
        `PostgresStore: timeoutMs must be a positive number of ms (got ${String(timeoutMs)})`,
      );
    }
    this.#timeoutMs = timeoutMs;
    if (options.pool !== undefined) {
      this.#pool = options.pool;
      this.#ownsPool = false;
    } else if (typeof options.connectionString === "string" && options.connectionString !== "") {
      const pg = loadOptionalPackage<typeof Pg>("pg", "PostgresStore", "npm install pg@8");
      const pool = new pg.Pool({
        connectionString: options.connectionString,
        connectionTimeoutMillis: timeoutMs,
        // The server gives up on a statement (a lock wait, say) when the store does.
        statement_timeout: timeoutMs,
        // A peer that vanished without closing the socket is noticed by TCP, not only by timeouts.
        keepAlive: true,
      });
      // An idle connection the server drops emits "error" on the pool, which would crash the
      // process if nobody listened; the next query reports the problem instead.
      pool.on("error", () => {});
      this.#pool = pool;
      this.#ownsPool = true;
    } else {
      throw new UserError(
        "PostgresStore needs { connectionString } (a postgres:// URL) or { pool } (a pg.Pool)",
      );
    }
    this.#clock = databaseClockOf(this.#pool);
  }

  /**
   * One statement when it can: after this store's first append to a run, it knows the run's
   * summary, and one statement checks the lease and the end of the log, inserts the rows and
   * updates the summary, or changes nothing if any check fails: one round trip when the database
   * can hold it to a deadline (it commits on its own; see DatabaseClock), else two (BEGIN with
   * the statement, then COMMIT). The general path takes six. When it changed nothing (and for a
   * first append, or one with large payloads) the general path runs: a transaction that locks
   * the lease row, reads the run and says exactly what is wrong. Listeners are notified once it
   * has committed.
   */
  async append(lease: Lease, events: readonly RunEvent[]): Promise<void> {
    const { runId } = lease;
    checkRunId(runId);
    const known = this.#known.get(runId);
    // A run this store has not written yet, starting at seq 1: most likely a new run, inserted
    // the same way (if it exists after all, nothing changes and the general path runs).
    const fresh = known === undefined && events[0]?.seq === 1;
    if ((fresh || (known !== undefined && known.owner === lease.owner)) && events.length > 0) {
      const quick = this.#quickAppend(lease, known?.summary, events);
      try {
        if (quick !== undefined && (await quick)) return;
      } catch (error) {
        this.#known.delete(runId);
        throw error;
      }
    }
    this.#known.delete(runId);
    let summary: StoredRunSummary | undefined;
    await this.#transaction("appending events", runId, async (client) => {
      // Locking the lease row serialises this append with every other append, renewal and
      // takeover of the run; the primary key on (run_id, seq) backs it up.
      await this.#checkLease(client, lease);
      if (events.length === 0) return;
      const previousRow = (
        await client.query(`SELECT * FROM ${this.#t.runs} WHERE run_id = $1 FOR UPDATE`, [runId])
      ).rows[0] as RunRow | undefined;
      const previous = previousRow && toRunSummary(previousRow);
      const { rows, payloads } = encodeEvents(runId, previous?.lastSeq ?? 0, events);
      const next = summarize(runId, previous, events);
      summary = next;
      // A payload's key is the digest of its text: one already stored is the same text.
      const owner = payloadOwner(runId, next.sessionId);
      // One statement for all of them: a session's run refers to a block of messages per 32 of
      // its history, and a round trip each would cost more than the rows.
      if (payloads.length) {
        await client.query(
          `INSERT INTO ${this.#t.artifacts} (run_id, key, text)
           SELECT $1, key, text FROM unnest($2::text[], $3::bytea[]) AS p(key, text)
           ON CONFLICT (run_id, key) DO NOTHING`,
          [owner, payloads.map((p) => p.key), payloads.map((p) => Buffer.from(p.text, "utf8"))],
        );
      }
      await client.query(
        `INSERT INTO ${this.#t.events} (run_id, seq, version, body)
         SELECT $1, seq, version, body FROM unnest($2::integer[], $3::integer[], $4::text[]) AS r(seq, version, body)`,
        [runId, rows.map((r) => r.seq), rows.map((r) => r.version), rows.map((r) => r.body)],
      );
      await client.query(
        `INSERT INTO ${this.#t.runs} (${RUN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         ON CONFLICT (run_id) DO UPDATE SET ${RUN_UPDATE}`,
        runRowValues(next),
      );
    });
    if (summary !== undefined) this.#appended(lease, summary);
  }

  /**
   * An append committed: remember the run as it now stands, and tell listeners. The notice is
   * small (run id, new last seq, status): listeners read the events themselves. The append that
   * ends a run's log is announced at once (see `PostgresNotices`).
   */
  #appended(lease: Lease, summary: StoredRunSummary): void {
    this.#known.set(lease.runId, { owner: lease.owner, summary });
    this.#notices.add(
      JSON.stringify({ runId: lease.runId, lastSeq: summary.lastSeq, status: summary.status }),
      summary.status !== "running",
    );
  }

  /** Each run's summary after this store's last append to it, and the lease owner it wrote under. */
  readonly #known = new Map<string, { owner: string; summary: StoredRunSummary }>();

  /**
   * The one-statement append, or undefined when it does not apply (large payloads, or events
   * that do not continue `previous`). Without `previous`, the run's first append: its row is
   * inserted. Resolves to false when the database refused it (the lease or the log is not as
   * this store last left them, or the run exists already), having changed nothing.
   */
  #quickAppend(
    lease: Lease,
    previous: StoredRunSummary | undefined,
    events: readonly RunEvent[],
  ): Promise<boolean> | undefined {
    const { runId } = lease;
    let encoded: ReturnType<typeof encodeEvents>;
    try {
      encoded = encodeEvents(runId, previous?.lastSeq ?? 0, events);
    } catch {
      return undefined;
    }
    if (encoded.payloads.length > 0) return undefined;
    // One row for the batch: the database's work per row is most of its work per append.
    const rows = batchRows(encoded.rows);
    const summary = summarize(runId, previous, events);
    const [, ...summaryValues] = runRowValues(summary);
    const fn = this.#appendFunction;
    let statement: (deadline: number | undefined) => string;
    try {
      statement = quickAppendStatement(this.#t, fn, previous === undefined, [
        runId,
        lease.owner,
        previous?.lastSeq ?? 0,
        ...summaryValues,
        rows.map((r) => r.seq),
        rows.map((r) => r.version),
        rows.map((r) => r.body),
      ]);
    } catch {
      return undefined;
    }
    const answer = this.#tables("appending events", runId).then(() =>
      this.#withClient(
        "appending events",
        runId,
        async (client, msLeft) => {
          // Decided once the connection is in hand: a connection lost meanwhile (a failover) has
          // made the clock forget (`databaseClockOf`), and this one may reach another server.
          const deadline = fn === undefined ? undefined : this.#clock.deadline(msLeft());
          const sentAt = performance.now();
          // With a deadline the database enforces, the function commits on its own: one round
          // trip. Without, inside BEGIN … COMMIT, not on its own: a lone statement sent to a
          // server that froze would still commit when it thaws, after this store gave up on it
          // and reported the append failed. COMMIT is then only sent once the statement has
          // answered in time. BEGIN goes in the statement's own message (the simple query
          // protocol, its values as literals): two round trips, not three.
          let appended: number;
          if (deadline !== undefined) {
            appended = Number((await client.query(statement(deadline))).rows[0]?.appended);
          } else {
            const [, answered] = (await client.query(`BEGIN; ${statement(undefined)}`)) as unknown as Array<{
              rows: Array<{ appended: string }>;
            }>;
            appended = Number(answered?.rows[0]?.appended);
          }
          // The function answers with the database's clock (the statement without it, with 1),
          // read before COMMIT: still a reading taken before its answer came.
          if (fn !== undefined && appended > 0) this.#clock.observe(appended, sentAt);
          if (deadline === undefined) await client.query("COMMIT");
          return appended > 0;
        },
        true,
      ),
    );
    return answer.then(
      (appended) => {
        if (appended) this.#appended(lease, summary);
        return appended;
      },
      (error: unknown) => {
        // The function is gone (dropped since this store set up): nothing was appended; the
        // statement goes on without it.
        if (
          this.#appendFunction === undefined ||
          (error as { cause?: { code?: string } }).cause?.code !== "42883"
        )
          throw error;
        this.#appendFunction = undefined;
        return this.#quickAppend(lease, previous, events) ?? false;
      },
    );
  }

  async read(runId: string, afterSeq?: number): Promise<RunEvent[]> {
    const after = checkAfterSeq(runId, afterSeq);
    // One statement, one snapshot: the rows and the run's lastSeq cannot disagree because an
    // append committed between two queries.
    const rows = await this.#query(
      "reading events",
      runId,
      `SELECT r.last_seq, r.session_id, e.seq, e.version, e.body FROM ${this.#t.runs} r
       LEFT JOIN ${this.#t.events} e ON e.run_id = r.run_id AND e.seq > $2
       WHERE r.run_id = $1 ORDER BY e.seq`,
      [runId, after],
    );
    const lastSeq = rows[0] === undefined ? 0 : Number(rows[0].last_seq);
    const events = decodeEvents(
      runId,
      after,
      lastSeq,
      rows.filter((row) => row.seq !== null).map(toStoredEvent),
    );
    const known = new Map<string, unknown>();
    const keys = referencedPayloads(events, known);
    const texts = new Map<string, string>();
    if (keys.length) {
      // Payloads are never changed once written, so a second statement reads the same ones.
      const owners = payloadOwners(runId, (rows[0]?.session_id as string | null | undefined) ?? undefined);
      const found = await this.#query(
        "reading events",
        runId,
        `SELECT key, text FROM ${this.#t.artifacts} WHERE run_id = ANY($1::text[]) AND key = ANY($2::text[])`,
        [owners, keys],
      );
      for (const row of found) texts.set(row.key as string, (row.text as Buffer).toString("utf8"));
    }
    return withPayloads(runId, events, texts, known);
  }

  /** Whether the run is stored, answered with the lease it takes ($1 is the run id). */
  get #storedColumn(): string {
    return `EXISTS (SELECT 1 FROM ${this.#t.runs} AS stored_run WHERE stored_run.run_id = $1) AS stored`;
  }

  async acquireLease(runId: string, owner: string, ttlMs: number): Promise<Lease> {
    checkLeaseRequest(runId, owner, ttlMs);
    // One statement decides: the insert or takeover happens only if the lease is free, expired
    // or already ours, and concurrent statements on the same run_id queue behind each other.
    for (let attempt = 0; attempt < 3; attempt++) {
      const sentAt = performance.now();
      const [taken] = await this.#query(
        "acquiring the lease",
        runId,
        `INSERT INTO ${this.#t.leases} AS l (run_id, owner, expires_at) VALUES ($1, $2, ${NOW_MS} + $3)
         ON CONFLICT (run_id) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
         WHERE l.owner = EXCLUDED.owner OR l.expires_at <= ${NOW_MS}
         RETURNING expires_at, ${this.#storedColumn}`,
        [runId, owner, Math.ceil(ttlMs)],
      );
      if (taken !== undefined) {
        // The lease's expiry is a reading of the database's clock, plus the ttl.
        this.#clock.observe(Number(taken.expires_at) - Math.ceil(ttlMs), sentAt);
        return takenLease(runId, owner, taken);
      }
      const [holder] = await this.#query(
        "acquiring the lease",
        runId,
        `SELECT owner, expires_at, ${NOW_MS} AS now FROM ${this.#t.leases} WHERE run_id = $1`,
        [runId],
      );
      if (holder !== undefined && ownerIsGone(holder.owner)) {
        // Its process no longer exists on this machine: take the lease over, but only if that
        // dead owner still holds it (another process may be taking it over too).
        const [takenOver] = await this.#query(
          "acquiring the lease",
          runId,
          `UPDATE ${this.#t.leases} SET owner = $2, expires_at = ${NOW_MS} + $3
           WHERE run_id = $1 AND owner = $4 RETURNING expires_at, ${this.#storedColumn}`,
          [runId, owner, Math.ceil(ttlMs), holder.owner],
        );
        if (takenOver !== undefined) return takenLease(runId, owner, takenOver);
        continue;
      }
      // Throws LeaseConflict while the holder's lease is live; otherwise it was released or
      // expired since the insert, so try again.
      if (holder !== undefined) checkLeaseFree(runId, owner, toLease(runId, holder), Number(holder.now));
    }
    throw new StoreError(
      `run ${runId}: could not acquire the lease; other processes keep taking and releasing it`,
      {
        runId,
      },
    );
  }

  async renewLease(lease: Lease, ttlMs: number): Promise<Lease> {
    checkLeaseRequest(lease.runId, lease.owner, ttlMs);
    return this.#transaction("renewing the lease", lease.runId, async (client) => {
      await this.#checkLease(client, lease);
      const [renewed] = (
        await client.query(
          `UPDATE ${this.#t.leases} SET expires_at = ${NOW_MS} + $2 WHERE run_id = $1 RETURNING expires_at`,
          [lease.runId, Math.ceil(ttlMs)],
        )
      ).rows;
      return { runId: lease.runId, owner: lease.owner, expiresAt: Number(renewed.expires_at) };
    });
  }

  async releaseLease(lease: Lease): Promise<void> {
    this.#known.delete(lease.runId);
    // Only the owner's own lease is deleted: one taken over by another process stays theirs.
    await this.#query(
      "releasing the lease",
      lease.runId,
      `DELETE FROM ${this.#t.leases} WHERE run_id = $1 AND owner = $2`,
      [lease.runId, lease.owner],
    );
  }

  async getRun(runId: string): Promise<RunSummary | undefined> {
    const [row] = await this.#query(
      "reading the run",
      runId,
      `${runsWithLeases(this.#t.runs, this.#t.leases, NOW_MS)} WHERE r.run_id = $1`,
      [runId],
    );
    return row && toRunSummary(row as RunRow);
  }

  async listRuns(filter: RunFilter = {}): Promise<RunSummary[]> {
    const statuses = filterStatuses(filter);
    const ends = filterEnds(filter);
    // A null parameter means "any". Runs started in the same millisecond are listed in the
    // order they were stored, as SQLite and MemoryStore list them.
    const matching = `($1::text IS NULL OR r.session_id = $1) AND ($2::text[] IS NULL OR r.status = ANY($2))
       AND (NOT $3::boolean OR r.parent_run_id IS NULL)`;
    const match = [
      filter.sessionId ?? null,
      statuses === undefined ? null : [...statuses],
      filter.topLevel === true,
    ];
    const listed = `${runsWithLeases(this.#t.runs, this.#t.leases, NOW_MS)}
       WHERE ${
         ends === undefined
           ? matching
           : // Only the ends: found through the session's index, whatever its length.
             `r.run_id IN (
               (SELECT r.run_id FROM ${this.#t.runs} r WHERE ${matching} ORDER BY r.started_at, r.stored_order LIMIT $4)
               UNION ALL
               (SELECT r.run_id FROM ${this.#t.runs} r WHERE ${matching}
                 ORDER BY r.started_at DESC, r.stored_order DESC LIMIT $5))`
       }
       ORDER BY r.started_at, r.stored_order`;
    const rows = await this.#query(
      "listing runs",
      undefined,
      listed,
      ends === undefined ? match : [...match, ends.first, ends.last],
    );
    return (rows as RunRow[]).map(toRunSummary);
  }

  async listSessions(): Promise<SessionSummary[]> {
    const rows = await this.#query(
      "listing sessions",
      undefined,
      `SELECT session_id, count(*) AS runs, min(started_at) AS started_at, max(updated_at) AS updated_at
       FROM ${this.#t.runs} WHERE session_id IS NOT NULL
       GROUP BY session_id ORDER BY min(started_at), session_id COLLATE "C"`,
    );
    return (rows as SessionRow[]).map(toSessionSummary);
  }

  async clearSession(sessionId: string): Promise<void> {
    const inSession = `SELECT run_id FROM ${this.#t.runs} WHERE session_id = $1`;
    await this.#transaction("clearing the session", undefined, async (client) => {
      // The runs rows go last: the other deletes find their runs through them.
      for (const table of [this.#t.events, this.#t.leases, this.#t.artifacts]) {
        await client.query(`DELETE FROM ${table} WHERE run_id IN (${inSession})`, [sessionId]);
      }
      // The session's payloads, kept under an owner of their own (payloadOwner).
      await client.query(`DELETE FROM ${this.#t.artifacts} WHERE run_id = $1`, [sessionPayloads(sessionId)]);
      await client.query(`DELETE FROM ${this.#t.runs} WHERE session_id = $1`, [sessionId]);
    });
  }

  async putArtifact(runId: string, key: string, text: string): Promise<void> {
    checkArtifact(runId, key, text);
    await this.#query(
      "storing an artifact",
      runId,
      `INSERT INTO ${this.#t.artifacts} (run_id, key, text) VALUES ($1, $2, $3)
       ON CONFLICT (run_id, key) DO UPDATE SET text = EXCLUDED.text`,
      [runId, key, Buffer.from(text, "utf8")],
    );
  }

  async getArtifact(runId: string, key: string): Promise<string | undefined> {
    const [row] = await this.#query(
      "reading an artifact",
      runId,
      `SELECT text FROM ${this.#t.artifacts} WHERE run_id = $1 AND key = $2`,
      [runId, key],
    );
    return row === undefined ? undefined : (row.text as Buffer).toString("utf8");
  }

  /**
   * Closes the pool the store created from a connection string; a pool passed in is left to its
   * owner. Waits at most `timeoutMs` for connections to close: a database that stopped
   * answering cannot hold the caller (its sockets close when the server or the OS drops them).
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // The notices of appends that returned go out first (each bounded by timeoutMs).
    await withinDeadline(this.#notices.flush(), performance.now() + this.#timeoutMs).catch(() => {});
    if (!this.#ownsPool) return;
    const ending = this.#pool.end();
    await withinDeadline(ending, performance.now() + this.#timeoutMs).catch((error) => {
      if (error !== TIMED_OUT) throw storeFailure("closing the store", undefined, error);
    });
  }

  /** Locks the run's lease row for this transaction and checks that `lease` is still it. */
  async #checkLease(client: PostgresClient, lease: Lease): Promise<void> {
    const [row] = (
      await client.query(
        `SELECT owner, expires_at, ${NOW_MS} AS now FROM ${this.#t.leases} WHERE run_id = $1 FOR UPDATE`,
        [lease.runId],
      )
    ).rows;
    checkLeaseHeld(lease, toLease(lease.runId, row), row === undefined ? 0 : Number(row.now));
  }

  async #query(action: string, runId: string | undefined, text: string, values?: unknown[]): Promise<any[]> {
    await this.#tables(action, runId);
    return this.#withClient(action, runId, async (client) => (await client.query(text, values)).rows);
  }

  /** `body` in a transaction; `begins`: its first statement starts with BEGIN itself. */
  async #transaction<T>(
    action: string,
    runId: string | undefined,
    body: (client: PostgresClient) => Promise<T>,
    begins = false,
  ): Promise<T> {
    await this.#tables(action, runId);
    return this.#inTransaction(action, runId, body, begins);
  }

  #inTransaction<T>(
    action: string,
    runId: string | undefined,
    body: (client: PostgresClient) => Promise<T>,
    begins = false,
  ): Promise<T> {
    return this.#withClient(
      action,
      runId,
      async (client) => {
        if (!begins) await client.query("BEGIN");
        const result = await body(client);
        await client.query("COMMIT");
        return result;
      },
      true,
    );
  }

  /**
   * Runs `work` on a connection of its own, within `timeoutMs` from the moment it asks for the
   * connection. A connection that timed out or failed mid-transaction is destroyed, never
   * returned to the pool: its state is unknown, and a server that stopped answering would
   * hand the next operation the same silence.
   */
  async #withClient<T>(
    action: string,
    runId: string | undefined,
    work: (client: PostgresClient, msLeft: () => number) => Promise<T>,
    transaction = false,
  ): Promise<T> {
    const deadline = performance.now() + this.#timeoutMs;
    const connecting = this.#pool.connect();
    let client: PostgresClient;
    try {
      client = await withinDeadline(connecting, deadline);
    } catch (error) {
      // A connection that arrives after we gave up is closed, not leaked.
      if (error === TIMED_OUT)
        connecting.then(
          (late) => late.release(true),
          () => {},
        );
      throw this.#failure(action, runId, error);
    }
    // A connection that dies in use (a restart, a failover, pg_terminate_backend) also fails the
    // statement in flight: that rejection is the failure the caller gets.
    client.on?.("error", ignoreError);
    const release = (destroy?: boolean) => {
      client.off?.("error", ignoreError);
      client.release(destroy);
    };
    try {
      const msLeft = () => deadline - performance.now();
      const result = await withinDeadline(work(client, msLeft), deadline);
      release();
      return result;
    } catch (error) {
      // The next connection may reach another server (a failover): its clock is read afresh.
      this.#clock.forget();
      if (error !== TIMED_OUT && transaction) {
        // The server answered with an error: roll back and keep the connection if that works.
        const rolledBack = await withinDeadline(
          client.query("ROLLBACK"),
          Math.max(deadline, performance.now() + 1_000),
        ).then(
          () => true,
          () => false,
        );
        release(rolledBack ? undefined : true);
      } else release(error === TIMED_OUT || transaction ? true : undefined);
      if (error === TIMED_OUT) this.#endBackend(client.processID);
      throw this.#failure(action, runId, error);
    }
  }

  /**
   * Ends the server process of a connection the store gave up on. Closing the socket is not
   * enough: the server goes on with the statement until it next writes to the client, so a
   * COMMIT waiting for a synchronous replica would land later, after the store reported it
   * failed — and would hold the run's lease row meanwhile, so the retry that reads what was
   * stored could not tell. Ended, it has either committed (visible at once) or rolled back.
   * In the background, on another connection, within a second: a frozen server cannot answer
   * this either, and then nothing lands until it thaws.
   */
  #endBackend(pid: number | null | undefined): void {
    if (typeof pid !== "number") return;
    void withinDeadline(
      this.#pool.query("SELECT pg_terminate_backend($1)", [pid]),
      performance.now() + 1_000,
    ).catch(() => {});
  }

  #failure(action: string, runId: string | undefined, error: unknown): StoreError {
    if (error !== TIMED_OUT) return storeFailure(action, runId, error);
    const subject = runId === undefined ? "" : ` for run ${runId}`;
    return new StoreError(
      `${action}${subject} timed out: the database did not answer within ${this.#timeoutMs} ms (timeoutMs)`,
      { ...(runId !== undefined && { runId }), retryable: true },
    );
  }

  /** Creates the tables once per store, before its first statement; a failed attempt is retried by the next call. */
  async #tables(action: string, runId: string | undefined): Promise<void> {
    if (this.#closed) throw closedStore("PostgresStore");
    this.#ready ??= this.#inTransaction("creating the tables", undefined, (client) =>
      createTables(client, this.schema),
    ).then(
      ({ appendFunction }) => {
        this.#appendFunction = appendFunction ? appendFunctionName(this.schema) : undefined;
      },
      (error) => {
        this.#ready = undefined;
        throw error;
      },
    );
    try {
      await this.#ready;
    } catch (error) {
      // Name the step that failed (setting up the tables) and its root cause, not the wrapper.
      const reason = error instanceof StoreError && error.cause !== undefined ? error.cause : error;
      const message = reason instanceof Error ? reason.message : String(reason);
      throw storeFailure(
        action,
        runId,
        new Error(`could not set up the tables in schema ${this.schema}: ${message}`, { cause: error }),
      );
    }
  }
}

/** The `error` listener of a checked-out client (see `PostgresClient.on`). */
function ignoreError(): void {}

/** What `withinDeadline` rejects with when time runs out first. */
const TIMED_OUT = Symbol("timed out");

/**
 * `promise`, or a rejection with TIMED_OUT at `deadline` (in `performance.now()` ms, so that a
 * step of the wall clock moves no deadline), whichever comes first.
 */
function withinDeadline<T>(promise: Promise<T>, deadline: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(TIMED_OUT), Math.max(0, deadline - performance.now()));
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** The types of the one-statement append's values, in order ($1, $2, …). */
const QUICK_APPEND_TYPES: LiteralType[] = [
  "text", // run_id
  "text", // owner
  "bigint", // the log's last seq as this store left it
  "text", // session_id
  "text", // parent_run_id
  "text", // agent
  "bigint", // started_at
  "bigint", // updated_at
  "bigint", // last_seq
  "text", // status
  "text", // failure_kind
  "integer[]", // seqs
  "integer[]", // versions
  "text[]", // bodies
];

/**
 * The one-statement append with its values written in as literals: it checks the lease and
 * the end of the log (or, for a `first` append, that the run does not exist yet), writes the
 * run's summary and inserts the rows, or changes nothing. Throws when a
 * value has no literal (the caller then takes the general path). With the schema's append
 * `fn` (see `createTables`), a call of it, whose plans the server keeps. Returned as a function
 * of the deadline the call holds itself to (none: null); the statement without it takes none.
 */
function quickAppendStatement(
  t: PostgresTables,
  fn: string | undefined,
  first: boolean,
  values: unknown[],
): (deadline: number | undefined) => string {
  const v = values.map((value, i) => sqlLiteral(value, QUICK_APPEND_TYPES[i]!));
  if (fn !== undefined) {
    const call = `SELECT ${fn}(${v[0]}, ${v[1]}, ${v[2]}, ${first}, ${v.slice(3).join(", ")}`;
    return (deadline) => `${call}, ${sqlLiteral(deadline, "bigint")}) AS appended`;
  }
  const run = first
    ? `INSERT INTO ${t.runs} (${RUN_COLUMNS})
       SELECT ${v[0]}, ${v[3]}, ${v[4]}, ${v[5]}, ${v[6]}, ${v[7]}, ${v[8]}, ${v[9]}, ${v[10]}
       WHERE EXISTS (SELECT 1 FROM lease) ON CONFLICT (run_id) DO NOTHING RETURNING 1`
    : `UPDATE ${t.runs} SET session_id = ${v[3]}, parent_run_id = ${v[4]}, agent = ${v[5]}, started_at = ${v[6]},
         updated_at = ${v[7]}, last_seq = ${v[8]}, status = ${v[9]}, failure_kind = ${v[10]}
       WHERE run_id = ${v[0]} AND last_seq = ${v[2]} AND EXISTS (SELECT 1 FROM lease) RETURNING 1`;
  const statement = `WITH lease AS (
       SELECT 1 FROM ${t.leases} WHERE run_id = ${v[0]} AND owner = ${v[1]} AND expires_at > ${NOW_MS} FOR UPDATE
     ), run AS (
       ${run}
     ), inserted AS (
       INSERT INTO ${t.events} (run_id, seq, version, body)
       SELECT ${v[0]}, seq, version, body FROM unnest(${v[11]}, ${v[12]}, ${v[13]}) AS r(seq, version, body)
       WHERE EXISTS (SELECT 1 FROM run)
     )
     SELECT (SELECT count(*) FROM run) AS appended`;
  return () => statement;
}

/** The lease a row of `acquireLease` took, with whether the run was stored then. */
function takenLease(runId: string, owner: string, row: Record<string, unknown>): Lease {
  return { runId, owner, expiresAt: Number(row.expires_at), stored: row.stored === true };
}
