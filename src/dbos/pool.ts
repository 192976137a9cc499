import type { PostgresClient, PostgresPool } from "../store/postgres-tables.js";

/** A notification a listening connection receives (`LISTEN`/`pg_notify`), as `pg` delivers it. */
export type PostgresNotification = { channel: string; payload?: string | undefined };

/** A pooled connection that can listen: `pg`'s `PoolClient` fits it. */
export interface ListeningClient extends PostgresClient {
  on(event: "notification", listener: (notice: PostgresNotification) => void): unknown;
  on(event: "error", listener: (error: Error) => void): unknown;
  off(event: "notification", listener: (notice: PostgresNotification) => void): unknown;
  off(event: "error", listener: (error: Error) => void): unknown;
}

/**
 * The slice of a `pg.Pool` that `durableRuns` uses (queries, heartbeats, advisory locks and
 * `LISTEN` for `events()`). Structural, so the package's types need no `@types/pg`.
 */
export interface DurableRunsPool extends PostgresPool {
  connect(): Promise<ListeningClient>;
}
