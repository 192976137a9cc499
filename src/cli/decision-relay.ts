import type { EventOf } from "../contract/events.js";
import { UserError } from "../errors.js";
import { replay } from "../run/durability/replay.js";
import type { RunHandle } from "../run/handle.js";
import type { RunStore } from "../store/types.js";

/**
 * `quiver runs decide` on a run another process is driving cannot append to its log (that
 * process holds the lease), so it leaves the decision as an artifact of the run, and the
 * process that shows the approval prompt for that call takes it from there. The run then
 * records the decision itself (`approval_resolved`, by "channel"), which is how the deciding
 * command knows it was taken.
 */
export const RELAY_WAIT_MS = 5_000;
const POLL_MS = 200;

type Relayed = { approved: boolean; reason?: string; expiresAt: number; withdrawn?: true };

function relayKey(callId: string): string {
  return `quiver-cli/decision/${callId}`;
}

function parseRelayed(text: string | undefined): Relayed | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as Partial<Relayed>;
    if (typeof value.approved !== "boolean" || typeof value.expiresAt !== "number") return undefined;
    return value as Relayed;
  } catch {
    return undefined;
  }
}

/**
 * Hands a decision to the process driving `runId` and waits (at most `waitMs`) until its log
 * shows the call decided. Returns that `approval_resolved` event: it may be another decision
 * than this one, when someone answered first. A process that does not take it in time (no
 * prompt open for the call: a server, a script) gets it withdrawn, and this is a `UserError`.
 *
 * @example
 * const resolved = await relayDecision(store, "run_4be9…", "call_1", { approved: true });
 */
export async function relayDecision(
  store: RunStore,
  runId: string,
  callId: string,
  decision: { approved: boolean; reason?: string },
  waitMs = RELAY_WAIT_MS,
): Promise<EventOf<"approval_resolved">> {
  const events = await store.read(runId);
  const open = replay(events).openTurn;
  if (!open?.asked.has(callId) || open.decisions.has(callId) || open.completed.has(callId))
    throw new UserError(`run ${runId} has no call ${callId} waiting for approval`);
  let seen = events.at(-1)?.seq ?? 0;
  const resolved = async (): Promise<EventOf<"approval_resolved"> | undefined> => {
    const fresh = await store.read(runId, seen);
    if (fresh.length) seen = fresh.at(-1)!.seq;
    return fresh.find(
      (ev): ev is EventOf<"approval_resolved"> => ev.type === "approval_resolved" && ev.call.id === callId,
    );
  };
  const key = relayKey(callId);
  const relayed: Relayed = { ...decision, expiresAt: Date.now() + waitMs };
  await store.putArtifact(runId, key, JSON.stringify(relayed));
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    const found = await resolved();
    if (found) return found;
    await new Promise((ok) => setTimeout(ok, POLL_MS));
  }
  await store.putArtifact(runId, key, JSON.stringify({ ...relayed, withdrawn: true }));
  // Taken just before the withdrawal landed: it counts.
  const late = await resolved();
  if (late) return late;
  throw new UserError(
    `run ${runId} is being run by another process, which did not take the decision within ${waitMs / 1000} s: ` +
      `a quiver chat or quiver run takes it while its approval prompt for ${callId} is open ` +
      "(if the run parks meanwhile, decide it again with this command)",
  );
}

/**
 * While the approval prompt for `ev` is open: takes a decision `relayDecision` left for this
 * call from another process and settles the call through `handle.approvals` (the prompt then
 * goes away, as for any decision from elsewhere). `onTaken` runs when it did. Returns the stop.
 */
export function takeRelayedDecisions(
  store: RunStore,
  ev: EventOf<"approval_required">,
  handle: RunHandle<any>,
  onTaken: (decision: { approved: boolean; reason?: string }) => void,
): () => void {
  const key = relayKey(ev.call.id);
  let busy = false;
  let stopped = false;
  const poll = async () => {
    const relayed = parseRelayed(await store.getArtifact(ev.runId, key));
    if (stopped || !relayed || relayed.withdrawn || relayed.expiresAt < Date.now()) return;
    const taken = relayed.approved
      ? handle.approvals.approve(ev.call.id)
      : handle.approvals.reject(ev.call.id, relayed.reason);
    if (taken) onTaken(relayed);
  };
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    poll()
      .catch(() => {
        // A store that cannot be read now only means no relayed decision yet: the prompt stays.
      })
      .finally(() => {
        busy = false;
      });
  }, POLL_MS);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
