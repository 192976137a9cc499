import type { ApprovalAnswer, EventOf, RunContext, RunEvent, ToolCall } from "../index.js";

/** A call that needs approval, as the person behind the MCP client is asked about it. */
export type ApprovalQuestion = {
  call: ToolCall;
  /** Why the engine asks ("delete_file is destructive", "deploy needs approval"). */
  reason: string | undefined;
  /** The tool's own words about the call, when it gives them (the workspace: "Edit src/a.ts"). */
  description: string | undefined;
  /** For a call inside an exposed agent's run: the agents from the root down. */
  agentPath: string[] | undefined;
};

export type ApprovalReply = { approved: true } | { approved: false; reason: string };

/** Where approvals are asked: the MCP client, through elicitation. Never throws; anything but a yes is a no. */
export interface ApprovalChannel {
  ask(question: ApprovalQuestion, signal: AbortSignal): Promise<ApprovalReply>;
}

type Handler = (call: ToolCall, ctx: RunContext<any>) => ApprovalAnswer | Promise<ApprovalAnswer>;
type Asking = EventOf<"approval_required">;

/**
 * Routes a run's approvals to the MCP client. The run reads it every event (`observe`); the
 * agent gets `handler` as its `approvalHandler`, which the engine calls once the consumer pulled
 * past an `approval_required` without deciding. The agent's own handler answers first; what it
 * leaves open ("ask", or no handler) goes to the client, and the answer settles the call through
 * the event's own `approve()` / `reject(reason)`, so a refusal carries its reason to the model
 * (or, for an exposed tool, to the client). Nothing here ever allows by default.
 */
export class ClientApprovals {
  readonly #channel: ApprovalChannel;
  readonly #own: Handler | undefined;
  /** The open `approval_required` events by run and call (child runs' call ids may repeat). */
  readonly #open = new Map<string, Asking>();

  constructor(channel: ApprovalChannel, own: Handler | undefined) {
    this.#channel = channel;
    this.#own = own;
  }

  observe(event: RunEvent): void {
    if (event.type === "approval_required") this.#open.set(keyOf(event.runId, event.call.id), event);
    else if (event.type === "approval_resolved") this.#open.delete(keyOf(event.runId, event.call.id));
  }

  readonly handler: Handler = async (call, ctx) => {
    if (this.#own) {
      const answer = await this.#own(call, ctx);
      if (answer !== "ask") return answer;
    }
    const event = this.#open.get(keyOf(ctx.runId, call.id));
    // Not seen on the stream (cannot happen while the run is read): nobody was asked, so no.
    if (!event) return "deny";
    const reply = await this.#channel.ask(
      {
        call,
        reason: event.reason,
        description: event.description,
        agentPath: event.path ?? (event.agent ? [event.agent] : undefined),
      },
      ctx.signal,
    );
    if (reply.approved) event.approve();
    else event.reject(reply.reason);
    return reply.approved ? "allow" : "deny";
  };
}

function keyOf(runId: string, callId: string): string {
  return `${runId}\u0000${callId}`;
}
