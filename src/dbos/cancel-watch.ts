/**
 * A cancel signal for work a workflow does outside a DBOS step (where DBOS gives none). While any
 * such work runs, one poller per process looks up, every `everyMs`, which of the watched
 * workflows are `CANCELLED` (one query for all of them), and fires their signals. Nothing is
 * looked up for work that ends sooner, which is most runs.
 *
 * The lookups run in an async scope made when this module loaded, outside every workflow: DBOS
 * checkpoints what a workflow calls, and a lookup it saw would become a step of the workflow.
 */
import { AsyncResource } from "node:async_hooks";
import { DBOS } from "@dbos-inc/dbos-sdk";

const outsideWorkflows = new AsyncResource("quiver.cancel-watch");

/** The watched workflows, by id, each with the signals of its work in flight. */
const watched = new Map<string, Set<AbortController>>();
let poller: NodeJS.Timeout | undefined;
let pollEveryMs = 1_000;

/**
 * Watches `workflowId` until `stop()`, looking every `everyMs` (while other work is watched
 * already, at the pace the poller runs at: a process's `durableRuns` all ask the same).
 *
 * @example
 * const watch = watchCancel(runId, 1_000);
 * try { await work(watch.signal); } finally { watch.stop(); }
 */
export function watchCancel(workflowId: string, everyMs: number): { signal: AbortSignal; stop(): void } {
  const controller = new AbortController();
  let signals = watched.get(workflowId);
  if (signals === undefined) {
    signals = new Set();
    watched.set(workflowId, signals);
  }
  signals.add(controller);
  // One chain of lookups at a time: `poller` stays set while a lookup is in flight.
  if (poller === undefined) {
    pollEveryMs = Math.max(1, everyMs);
    outsideWorkflows.runInAsyncScope(schedule);
  }
  return {
    signal: controller.signal,
    stop() {
      const set = watched.get(workflowId);
      if (set?.delete(controller) && set.size === 0) watched.delete(workflowId);
    },
  };
}

function schedule(): void {
  if (watched.size === 0) {
    poller = undefined;
    return;
  }
  poller = setTimeout(look, pollEveryMs);
  // A worker that is done otherwise does not stay up for this.
  poller.unref();
}

function look(): void {
  const ids = [...watched.keys()];
  // Never asked with no ids: an empty filter would list every workflow.
  if (ids.length === 0) {
    schedule();
    return;
  }
  DBOS.listWorkflows({ workflowIDs: ids, status: "CANCELLED", loadInput: false, loadOutput: false }).then(
    (cancelled) => {
      for (const { workflowID } of cancelled) {
        for (const controller of watched.get(workflowID) ?? []) {
          controller.abort(new Error("the run was cancelled"));
        }
      }
      schedule();
    },
    // A lookup that failed (the database away for a moment) is tried again at the next tick.
    () => schedule(),
  );
}
