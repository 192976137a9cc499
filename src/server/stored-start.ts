import { UserError } from "../index.js";
import { DEFAULT_STORE_WAIT_MS } from "../run/durability/event-writer.js";
import { StoreError } from "../store/types.js";
import { HttpError } from "./http.js";
import type { RunLog } from "./run-log.js";
import type { RunRegistry } from "./runs.js";

/**
 * Past the run's own wait for its store (`storeWaitMs`), how long its start may still take: one
 * more attempt at a store that hangs until its own timeout (`PostgresStore`'s `timeoutMs`, 10 s).
 */
const START_MARGIN_MS = 10_000;

/**
 * With a store, a new run is answered for (its id handed out: a 201, a chat's or a thread's
 * stream, an A2A task) only once its start — the user's message — is stored: a crash right
 * after the answer must not leave the caller an id the store has never heard of. A run that
 * failed before anything was stored is answered with why: its retryable `StoreError` when the
 * store failed (the server's error handler answers `503 store_unavailable` and tells `onError`:
 * nothing was stored, try again), `409` when the run was refused (its session is busy), the
 * error itself otherwise (a 500 for a store that is damaged). A store that has not taken the
 * start once the run's own wait for it (`storeWaitMs`) and a margin have passed is a 503 too:
 * the run is cancelled, so a client that tries again does not get two.
 *
 * @example
 * const log = registry.start(agentKey, input, { userId, sessionId });
 * if (registry.store) await startStored(log, registry); // throws what to answer
 */
export async function startStored(log: RunLog, registry: RunRegistry): Promise<void> {
  const started = Date.now();
  const deadline = started + (log.storeWaitMs ?? DEFAULT_STORE_WAIT_MS) + START_MARGIN_MS;
  while (log.all.length === 0 && log.status === "running" && Date.now() < deadline)
    await log.changed(deadline - Date.now());
  if (log.all.length > 0) return;
  const failure = log.failure;
  if (failure instanceof UserError) throw new HttpError(409, "refused", failure.message);
  if (log.status !== "running")
    throw failure ?? new Error(`run ${log.runId} ended without storing its start`);
  await registry.cancel(log, "its start could not be stored in time").catch(() => {});
  throw new StoreError(
    `run ${log.runId} did not start: its store did not take its start within ${Date.now() - started} ms; it was cancelled`,
    { runId: log.runId, retryable: true },
  );
}
