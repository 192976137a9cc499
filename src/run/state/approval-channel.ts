import type { ApprovalOutcome } from "../../contract/approvals.js";
import type { ToolCall } from "../../model/types.js";

type Pending = { call: ToolCall; runId: string; settle: (outcome: ApprovalOutcome) => void };

/**
 * The out-of-band approval channel of a run (`handle.approvals`): for a web endpoint, a bot,
 * or any code that is not the event loop's consumer.
 *
 * @example
 * const handle = Runner.stream(agent, "Refund order A123");
 * for await (const ev of handle) if (ev.type === "approval_required") notifyReviewer(ev.call);
 * // elsewhere, when the reviewer clicks:
 * handle.approvals.approve(callId);   // or .reject(callId, "too large"), or .release({ decision: false })
 */
export class Approvals {
  // A list, not a map by call id: child runs share this channel and their ids may repeat.
  #pending: Pending[] = [];

  /** Calls waiting for a decision, oldest first. */
  get pending(): ToolCall[] {
    return this.#pending.map((p) => p.call);
  }

  /** Approves a pending call. Returns false when no call with that id is pending. */
  approve(callId: string): boolean {
    return this.#settle(callId, { approved: true, by: "channel" });
  }

  /** Denies a pending call; the model sees `reason`. Returns false when no call with that id is pending. */
  reject(callId: string, reason?: string): boolean {
    return this.#settle(callId, { approved: false, by: "channel", ...(reason !== undefined && { reason }) });
  }

  /** Decides every pending call at once (e.g. `{ decision: false }` when a reviewer leaves). */
  release({ decision, reason }: { decision: boolean; reason?: string }): number {
    const all = this.#pending;
    this.#pending = [];
    for (const entry of all)
      entry.settle({ approved: decision, by: "channel", ...(reason !== undefined && { reason }) });
    return all.length;
  }

  /** @internal Registers a call as pending; the returned promise settles with its decision. */
  wait(
    call: ToolCall,
    runId: string,
  ): { decision: Promise<ApprovalOutcome>; settle: (outcome: ApprovalOutcome) => boolean } {
    let resolve!: (outcome: ApprovalOutcome) => void;
    const decision = new Promise<ApprovalOutcome>((r) => {
      resolve = r;
    });
    const entry: Pending = { call, runId, settle: resolve };
    this.#pending.push(entry);
    return {
      decision,
      settle: (outcome) => {
        const i = this.#pending.indexOf(entry);
        if (i < 0) return false;
        this.#pending.splice(i, 1);
        resolve(outcome);
        return true;
      },
    };
  }

  #settle(callId: string, outcome: ApprovalOutcome): boolean {
    const i = this.#pending.findIndex((p) => p.call.id === callId);
    if (i < 0) return false;
    const [entry] = this.#pending.splice(i, 1);
    entry!.settle(outcome);
    return true;
  }
}
