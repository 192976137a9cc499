import { leaseOwner } from "../../store/lease-owner.js";
import { type Lease, LeaseConflict, type RunStore } from "../../store/types.js";

/** How long a brief holder (a decision, a close) waits for another brief holder. */
const BRIEF_WAIT_MS = 3_000;

/**
 * The run's lease for a write that takes milliseconds (`Runner.decide`). Two decisions racing
 * for one call used to fail the loser with "being driven by another process"; it waits for the
 * other to let go instead, and then sees what that one stored (the approval already decided).
 * A holder that keeps the lease longer than
 * `waitMs` — a process driving the run — still gets its `LeaseConflict`.
 *
 * @example
 * const lease = await acquireBriefly(store, runId);
 * try { await store.append(lease, events); } finally { await store.releaseLease(lease); }
 */
export async function acquireBriefly(store: RunStore, runId: string, waitMs = BRIEF_WAIT_MS): Promise<Lease> {
  const giveUpAt = Date.now() + waitMs;
  let pause = 10;
  for (;;) {
    try {
      return await store.acquireLease(runId, leaseOwner(), 10_000);
    } catch (error) {
      const left = giveUpAt - Date.now();
      if (!(error instanceof LeaseConflict) || left <= 0) throw error;
      await new Promise((wake) => setTimeout(wake, Math.min(pause, left)));
      pause = Math.min(pause * 2, 200);
    }
  }
}
