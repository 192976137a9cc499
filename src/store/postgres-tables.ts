/**
 * PostgresStore's tables: their schema-qualified names and the statements that create them.
 * Creation is idempotent and serialised by an advisory lock, because two processes running
 * `CREATE TABLE IF NOT EXISTS` at the same moment can still collide in Postgres's catalog.
 */
import { failureKindOf } from "./log-rules.js";
import { StoreError } from "./types.js";

/** The slice of a `pg` client the store uses: `pg.PoolClient` fits it. */
export interface PostgresClient {
  query(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
  /** Returns the client to its pool; `true` (or an error) destroys it instead. */
  release(destroy?: boolean | Error): void;
}

/** The slice of a `pg` pool the store uses: `pg.Pool` fits it. */
export interface PostgresPool {
  query(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
  connect(): Promise<PostgresClient>;
  end(): Promise<void>;
}

export type PostgresTables = { runs: string; events: string; leases: string; artifacts: string };

/** The database's clock in epoch ms: every process judges lease expiry by one clock, whatever their own say. */
export const NOW_MS = "floor(extract(epoch from clock_timestamp()) * 1000)::bigint";

export function tableNames(schema: string): PostgresTables {
  if (typeof schema !== "string" || schema === "") {
    throw new StoreError(`PostgresStore needs a non-empty schema name (got ${JSON.stringify(schema)})`);
  }
  const qualified = (table: string) => `${quoteIdentifier(schema)}.${table}`;
  return {
    runs: qualified("quiver_runs"),
    events: qualified("quiver_events"),
    leases: qualified("quiver_leases"),
    artifacts: qualified("quiver_artifacts"),
  };
}

export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * Creates the schema (when missing) and the tables (when missing). Runs inside a transaction.
 * Artifacts are `bytea` (UTF-8) because `text` cannot hold U+0000, which a tool's output may.
 */
export async function createTables(client: PostgresClient, schema: string): Promise<void> {
  const t = tableNames(schema);
  await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`quiver.store:${schema}`]);
  // Only created when missing: CREATE SCHEMA IF NOT EXISTS still needs the CREATE privilege
  // on the database, which a role that may only use an existing schema does not have.
  const existing = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
  if (existing.rows.length === 0)
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdentifier(schema)}`);
  await client.query(`
    CREATE TABLE IF NOT EXISTS ${t.runs} (
      run_id text PRIMARY KEY, session_id text, parent_run_id text, agent text NOT NULL, started_at bigint NOT NULL,
      updated_at bigint NOT NULL, last_seq integer NOT NULL, status text NOT NULL, failure_kind text);
    CREATE INDEX IF NOT EXISTS quiver_runs_by_session ON ${t.runs} (session_id, started_at);
    CREATE TABLE IF NOT EXISTS ${t.events} (
      run_id text NOT NULL, seq integer NOT NULL, version integer NOT NULL, body text NOT NULL,
      PRIMARY KEY (run_id, seq));
    CREATE TABLE IF NOT EXISTS ${t.leases} (run_id text PRIMARY KEY, owner text NOT NULL, expires_at bigint NOT NULL);
    CREATE TABLE IF NOT EXISTS ${t.artifacts} (
      run_id text NOT NULL, key text NOT NULL, text bytea NOT NULL, PRIMARY KEY (run_id, key));
  `);
  await addFailureKind(client, schema, t);
}

/**
 * Tables created before runs had a `failure_kind` get the column (nullable, so an older Quiver
 * sharing the tables goes on writing its rows). Looked up first: ALTER TABLE locks the table
 * and needs its owner even when the column exists, and this runs whenever a store starts.
 *
 * Runs that an older Quiver left `running` although their log ends with `run_failed` (it kept
 * a run stopped by its store running) are then made `failed` with that kind, so that their
 * summary says what their log says; `Runner.recover` still resumes a `store_unavailable` one.
 */
async function addFailureKind(client: PostgresClient, schema: string, t: PostgresTables): Promise<void> {
  const { rows: present } = await client.query(
    `SELECT 1 FROM information_schema.columns
     WHERE table_schema = $1 AND table_name = 'quiver_runs' AND column_name = 'failure_kind'`,
    [schema],
  );
  if (present.length > 0) return;
  await client.query(`ALTER TABLE ${t.runs} ADD COLUMN IF NOT EXISTS failure_kind text`);
  // LIKE only narrows the rows down; failureKindOf decides.
  const { rows } = await client.query(
    `SELECT r.run_id, e.body FROM ${t.runs} r
     JOIN ${t.events} e ON e.run_id = r.run_id AND e.seq = r.last_seq
     WHERE r.status IN ('running', 'failed') AND e.body LIKE '%"run_failed"%'`,
  );
  const ids: string[] = [];
  const kinds: string[] = [];
  for (const row of rows) {
    const kind = failureKindOf(row.body as string);
    if (kind === undefined) continue;
    ids.push(row.run_id as string);
    kinds.push(kind);
  }
  if (ids.length === 0) return;
  await client.query(
    `UPDATE ${t.runs} r SET status = 'failed', failure_kind = u.kind
     FROM unnest($1::text[], $2::text[]) AS u(run_id, kind) WHERE r.run_id = u.run_id`,
    [ids, kinds],
  );
}
