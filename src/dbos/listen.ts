import type { DurableRunsPool, PostgresNotification } from "./pool.js";

/** A pooled connection listening on one channel (see `listen`). */
export type Listener = {
  /** Stops listening and gives the connection back; `drop` closes it instead (idempotent). */
  close(drop?: boolean): Promise<void>;
};

/**
 * Takes a connection from `pool` and `LISTEN`s on `channel`; `onPayload` gets each notice's
 * payload. Listening has started when it resolves (a read after it misses nothing committed
 * later). A connection left listening never goes back to the pool: `close()` unlistens first.
 *
 * @example
 * const listener = await listen(pool, store.eventsChannel, (payload) => wake());
 * await listener.close();
 */
export async function listen(
  pool: DurableRunsPool,
  channel: string,
  onPayload: (payload: string) => void,
): Promise<Listener> {
  const client = await pool.connect();
  // A listening connection is never idle in its pool, so the pool does not catch its death
  // (`error`, which would end the process): notices stop, and readers fall back to polling.
  client.on("error", ignoreError);
  const onNotice = (notice: PostgresNotification) => {
    if (notice.channel === channel && notice.payload !== undefined) onPayload(notice.payload);
  };
  client.on("notification", onNotice);
  let closed = false;
  const close = async (drop = false) => {
    if (closed) return;
    closed = true;
    client.off("notification", onNotice);
    client.off("error", ignoreError);
    if (drop) return client.release(true);
    await client.query("UNLISTEN *").then(
      () => client.release(),
      () => client.release(true),
    );
  };
  try {
    await client.query(`LISTEN "${channel.replaceAll('"', '""')}"`);
  } catch (error) {
    await close(true);
    throw error;
  }
  return { close };
}

function ignoreError(): void {}
