import { closeStoredRun } from "../run/durability/close-run.js";
import type { RunStore } from "../store/types.js";

/**
 * Ends a stored run that nobody drives (parked, or left behind by a process that died) as
 * `cancelled`; see `closeStoredRun`. A run another process is driving cannot be cancelled from
 * here (its lease is held): cancel it there.
 */
export function cancelStoredRun(store: RunStore, runId: string): Promise<{ pending: number }> {
  return closeStoredRun(store, runId, "the run was cancelled (quiver runs cancel)");
}
