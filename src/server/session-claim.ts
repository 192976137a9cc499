import type { RunLog } from "./run-log.js";
import type { RunRegistry } from "./runs.js";
import { startStored } from "./stored-start.js";

/**
 * Starts the run that makes `sessionId` (a chat, a thread, an A2A context) the caller's. The id
 * is claimed right before the start — after every check of the request — and the claim is
 * forgotten when the run does not start (`start` throws, or with a store its start is not
 * stored), so a refused request leaves the id nobody's rather than the caller's for good. With a
 * store it resolves once the run's start is stored (see `startStored`). `theirs` makes the error
 * for an id another caller holds (a 404, as for one that does not exist). `fresh` skips asking
 * whose the id is: one the server just made up is nobody's.
 *
 * @example
 * const log = await startInSession(registry, chatId, userId, () => notFound(`no chat ${chatId}`), () =>
 *   registry.start(agentKey, input, { userId, sessionId: chatId }),
 * );
 */
export async function startInSession(
  registry: RunRegistry,
  sessionId: string,
  userId: string | undefined,
  theirs: () => Error,
  start: () => RunLog,
  fresh = false,
): Promise<RunLog> {
  let access: "yours" | "theirs" | "claimed" = "claimed";
  if (fresh) registry.sessions.claim(sessionId, userId);
  else access = await registry.sessions.claimFor(sessionId, userId);
  if (access === "theirs") throw theirs();
  let log: RunLog | undefined;
  try {
    log = start();
    if (registry.store) await startStored(log, registry);
    return log;
  } catch (error) {
    // Another request of the caller's may have started a run in it meanwhile: the id stays theirs.
    if (access === "claimed" && !startedElsewhere(registry, sessionId, userId, log))
      registry.sessions.unclaim(sessionId, userId);
    throw error;
  }
}

/** True when the registry holds a run of the session besides `failed` that started or still runs. */
function startedElsewhere(
  registry: RunRegistry,
  sessionId: string,
  userId: string | undefined,
  failed: RunLog | undefined,
): boolean {
  for (const log of registry.held())
    if (log !== failed && log.sessionId === sessionId && log.userId === userId)
      if (log.all.length > 0 || !log.finished) return true;
  return false;
}
