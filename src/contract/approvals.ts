/** Who settled an approval, as `approval_resolved.by` records it. */
export type ApprovalDecider =
  | "stream" // ev.approve() / ev.reject() by the event consumer
  | "handler" // the agent's approvalHandler
  | "channel" // handle.approvals.approve() / reject() / release()
  | "permissions" // a permission rule denied it outright
  | "timeout"
  | "cancelled"
  | "error" // a throwing predicate or handler, or an unknown answer
  | "no_channel" // Runner.run() has nobody to ask
  | "decide" // Runner.decide() on a stored run
  | "parked"; // a stored run released from memory until a decision is stored

/** How an approval ended: the decision, who made it, the reason the model reads, and whether the run parked instead. */
export type ApprovalOutcome = { approved: boolean; by: ApprovalDecider; reason?: string; parked?: boolean };

/** What an agent's `approvalHandler` may answer. */
export type ApprovalAnswer = boolean | "allow" | "deny" | "ask";
