import type { ToolCall } from "../model/types.js";

/** Who settled an approval, as `approval_resolved.by` records it. */
export type ApprovalDecider =
  | "stream" // ev.approve() / ev.reject() by the event consumer
  | "handler" // the agent's approvalHandler
  | "channel" // handle.approvals.approve() / reject() / release()
  | "permissions" // a permission rule denied it outright
  | "timeout"
  | "cancelled"
  | "error" // a throwing predicate or handler, or an unknown answer
  | "no_channel"; // Runner.run() has nobody to ask

export type ApprovalOutcome = { approved: boolean; by: ApprovalDecider; reason?: string };

/** What an agent's `approvalHandler` may answer. */
export type ApprovalAnswer = boolean | "allow" | "deny" | "ask";

type Pending = { call: ToolCall; settle: (outcome: ApprovalOutcome) => void };

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
  readonly #pending = new Map<string, Pending>();

  /** Calls waiting for a decision, oldest first. */
  get pending(): ToolCall[] {
    return [...this.#pending.values()].map((p) => p.call);
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
    const ids = [...this.#pending.keys()];
    for (const id of ids)
      this.#settle(id, { approved: decision, by: "channel", ...(reason !== undefined && { reason }) });
    return ids.length;
  }

  /** @internal Registers a call as pending; the returned promise settles with its decision. */
  wait(call: ToolCall): {
    decision: Promise<ApprovalOutcome>;
    settle: (outcome: ApprovalOutcome) => boolean;
  } {
    let settle!: (outcome: ApprovalOutcome) => void;
    const decision = new Promise<ApprovalOutcome>((resolve) => {
      settle = resolve;
    });
    this.#pending.set(call.id, { call, settle });
    return { decision, settle: (outcome) => this.#settle(call.id, outcome) };
  }

  #settle(callId: string, outcome: ApprovalOutcome): boolean {
    const entry = this.#pending.get(callId);
    if (!entry) return false;
    this.#pending.delete(callId);
    entry.settle(outcome);
    return true;
  }
}
