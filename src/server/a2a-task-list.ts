/**
 * A2A `ListTasks` over the server's runs: a caller sees the root runs of the contexts
 * (sessions) they own — from the store, and runs this process holds that the store has not
 * listed yet — most recently updated first, filtered and paged as the request asks.
 */
import type { ListTasksRequest, ListTasksResponse, Task, TaskState } from "@a2a-js/sdk";
import type { RunLog } from "./run-log.js";
import type { RunRegistry } from "./runs.js";

/** How A2A pages when the request does not say, and the most it allows. */
const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 100;

/** What listing needs from the request handler: a task from a log, and the SDK's error for bad params. */
export type TaskLister = {
  registry: RunRegistry;
  userId: string | undefined;
  taskOf(log: RunLog, historyLength?: number): Task;
  malformed(message: string): Error;
};

type Candidate = { runId: string; updatedAt: number };

/**
 * The caller's tasks for `ListTasks`. The page token is the position in the caller's list
 * (newest first) to go on from; a status filter reads the runs' logs to decide each task's
 * state, so `totalSize` then counts what matched.
 *
 * @example
 * const page = await listTasks(lister, { contextId: "ctx_1", pageSize: 10, ... });
 */
export async function listTasks(lister: TaskLister, params: ListTasksRequest): Promise<ListTasksResponse> {
  const pageSize = params.pageSize ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE)
    throw lister.malformed(`pageSize must be a whole number from 1 to ${MAX_PAGE_SIZE} (got ${pageSize})`);
  const token = params.pageToken ?? "";
  if (token !== "" && !/^\d{1,9}$/.test(token))
    throw lister.malformed(`pageToken ${JSON.stringify(token)} is not one this server gave out`);
  const offset = token === "" ? 0 : Number(token);
  const after = params.statusTimestampAfter ? Date.parse(params.statusTimestampAfter) : undefined;
  if (after !== undefined && Number.isNaN(after))
    throw lister.malformed(
      `statusTimestampAfter must be an ISO 8601 timestamp (got ${JSON.stringify(params.statusTimestampAfter)})`,
    );
  const { historyLength } = params;
  if (historyLength !== undefined && historyLength !== null && historyLength < 0)
    throw lister.malformed(`historyLength must not be negative (got ${historyLength})`);

  let candidates = await ownRuns(lister, params.contextId || undefined);
  if (after !== undefined) candidates = candidates.filter((c) => c.updatedAt >= after);
  const wanted = params.status || undefined; // TASK_STATE_UNSPECIFIED (0): any state
  const page: Task[] = [];
  let next = 0;
  let total = 0;
  let more = false;
  for (let i = 0; i < candidates.length; i++) {
    const inRange = i >= offset;
    const full = page.length >= pageSize;
    // Without a status filter a task off the page counts without its log being read.
    if (wanted === undefined && (!inRange || full)) {
      total++;
      if (inRange) more = true;
      continue;
    }
    const log = await lister.registry.get(candidates[i]!.runId, lister.userId);
    if (!log) continue;
    const task = lister.taskOf(log, historyLength ?? undefined);
    if (wanted !== undefined && (task.status?.state as TaskState | undefined) !== wanted) continue;
    total++;
    if (!inRange) continue;
    if (full) {
      more = true;
      continue;
    }
    if (!params.includeArtifacts) task.artifacts = [];
    page.push(task);
    next = i + 1;
  }
  return { tasks: page, nextPageToken: more ? String(next) : "", pageSize, totalSize: total };
}

/** The root runs of the caller's contexts (or of one), newest first, from the store and memory. */
async function ownRuns(lister: TaskLister, contextId: string | undefined): Promise<Candidate[]> {
  const { registry, userId } = lister;
  const found = new Map<string, Candidate>();
  const store = registry.store;
  if (store) {
    const sessions =
      contextId !== undefined ? [contextId] : (await store.listSessions()).map((s) => s.sessionId);
    for (const sessionId of sessions) {
      if ((await registry.sessions.access(sessionId, userId)) !== "yours") continue;
      for (const run of await store.listRuns({ sessionId }))
        if (run.parentRunId === undefined)
          found.set(run.runId, { runId: run.runId, updatedAt: run.updatedAt });
    }
  }
  for (const log of registry.held()) {
    if (log.userId !== userId || log.sessionId === undefined) continue;
    if (contextId !== undefined && log.sessionId !== contextId) continue;
    const known = found.get(log.runId);
    found.set(log.runId, { runId: log.runId, updatedAt: Math.max(known?.updatedAt ?? 0, log.touchedAt) });
  }
  return [...found.values()].sort((a, b) => b.updatedAt - a.updatedAt || (a.runId < b.runId ? 1 : -1));
}
