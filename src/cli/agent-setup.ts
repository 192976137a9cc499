import type { ApprovalAnswer } from "../contract/approvals.js";
import type { PermissionDecision, PermissionSubject, Permissions } from "../contract/permissions.js";
import type { RunContext } from "../contract/run-context.js";
import type { ToolCall } from "../model/types.js";
import type { Agent } from "../run/config/agent.js";
import { StandardPermissions } from "../run/config/permissions.js";
import type { ModeName } from "./options.js";

/**
 * `--mode` on top of the agent's own rules: its denials stand (and its tools stay hidden),
 * "bypass" lets everything else pass, "acceptEdits" lets edit tools pass, "default" keeps the
 * agent's decision. Unlike the standard "bypass", a destructive tool still asks once untrusted
 * content entered the run: a flag typed at a terminal should not switch off that guard.
 */
export class ModePermissions implements Permissions {
  readonly #mode: ModeName;
  readonly #inner: Permissions;
  constructor(mode: ModeName, inner: Permissions) {
    this.#mode = mode;
    this.#inner = inner;
  }

  offers(tool: PermissionSubject): boolean {
    return this.#inner.offers ? this.#inner.offers(tool) : true;
  }

  async check(tool: PermissionSubject, args: unknown, ctx: RunContext): Promise<PermissionDecision> {
    const own = await this.#inner.check(tool, args, ctx);
    if (own.behavior === "deny") return own;
    if (this.#mode === "bypass") return { behavior: "allow" };
    if (this.#mode === "acceptEdits" && tool.editTool) return { behavior: "allow" };
    return own;
  }
}

/**
 * What the terminal could not decide: calls whose prompt the user dismissed with Ctrl+C. The
 * approval handler the CLI gives the agent never allows those; with a store they park.
 */
export type ApprovalState = { dismissed: Set<string>; stored: boolean };

/** The key of a call across a run and its child runs. */
export function callKey(runId: string, callId: string): string {
  return `${runId}\u0000${callId}`;
}

/**
 * The agent as the CLI runs it: `--mode` applied, and an approval handler that decides what
 * the stream consumer left undecided. The agent's own handler still answers first (unless the
 * user dismissed the prompt); what it leaves open ("ask", or no handler) parks with a store and
 * is denied without one — never allowed by default.
 */
export function agentForCli(
  agent: Agent<any, any>,
  options: { mode?: ModeName | undefined; approvals: ApprovalState },
): Agent<any, any> {
  const own = agent.config.approvalHandler;
  const { approvals } = options;
  const approvalHandler = async (call: ToolCall, ctx: RunContext<any>): Promise<ApprovalAnswer> => {
    if (!approvals.dismissed.has(callKey(ctx.runId, call.id)) && own) {
      const answer = await own(call, ctx);
      if (answer !== "ask") return answer;
    }
    return approvals.stored ? "ask" : "deny";
  };
  const overrides: Parameters<Agent<any, any>["clone"]>[0] = { approvalHandler };
  if (options.mode) {
    overrides.permissions = new ModePermissions(
      options.mode,
      agent.config.permissions ?? new StandardPermissions(),
    );
  }
  return agent.clone(overrides);
}
