import type { ApprovalChannel, ApprovalQuestion, ApprovalReply } from "./approval.js";
import { messageOf } from "./call-scope.js";

/** What asking needs from the SDK's `Server` of one connection. */
export type ElicitingPeer = {
  /** True when the client declared the elicitation capability (form mode). */
  canElicit(): boolean;
  elicit(
    params: { message: string; requestedSchema: ApprovalForm },
    options: { signal: AbortSignal; timeout: number },
  ): Promise<{ action: "accept" | "decline" | "cancel"; content?: Record<string, unknown> | undefined }>;
};

/** The yes/no form a client shows for an approval (an elicitation `requestedSchema`: flat, primitive fields). */
export type ApprovalForm = {
  type: "object";
  properties: Record<string, Record<string, unknown>>;
  required: string[];
};

const MAX_ARGS_CHARS = 2_000;

/**
 * Asks the person behind the MCP client through elicitation (`elicitation/create`, a form with
 * a yes/no field and an optional reason), bounded by `timeoutMs` and the call's signal. A client
 * that did not declare elicitation cannot be asked: the call is refused with a message naming
 * the settings that would let it run. Decline, cancel, a failed or timed-out request: refused.
 */
export function elicitationChannel(
  peer: ElicitingPeer,
  options: { timeoutMs: number; speaksForAgent: boolean },
): ApprovalChannel {
  return {
    async ask(question: ApprovalQuestion, signal: AbortSignal): Promise<ApprovalReply> {
      const name = question.call.name;
      if (!peer.canElicit()) return { approved: false, reason: cannotAsk(question) };
      let answer: Awaited<ReturnType<ElicitingPeer["elicit"]>>;
      try {
        answer = await peer.elicit(
          { message: messageFor(question, options.speaksForAgent), requestedSchema: formFor(name) },
          { signal, timeout: options.timeoutMs },
        );
      } catch (error) {
        const why = signal.aborted ? "the call was cancelled" : messageOf(error);
        return { approved: false, reason: `asking the MCP client for approval failed (${why})` };
      }
      if (answer.action === "accept" && answer.content?.approve === true) return { approved: true };
      if (answer.action === "accept") {
        const given = answer.content?.reason;
        const reason = typeof given === "string" && given.trim() !== "" ? given.trim() : undefined;
        return { approved: false, reason: reason ?? "the user said no" };
      }
      return {
        approved: false,
        reason: answer.action === "decline" ? "the user declined" : "the user dismissed the question",
      };
    },
  };
}

function formFor(name: string): ApprovalForm {
  return {
    type: "object",
    properties: {
      approve: {
        type: "boolean",
        title: `Allow ${name}`,
        description: "Yes runs this call once; no refuses it.",
        default: false,
      },
      reason: {
        type: "string",
        title: "Reason (when refusing)",
        description: "Passed on with the refusal, so the caller can adjust.",
      },
    },
    required: ["approve"],
  };
}

function messageFor(question: ApprovalQuestion, speaksForAgent: boolean): string {
  const { call, reason, description, agentPath } = question;
  const who =
    speaksForAgent && agentPath?.length ? `The agent ${agentPath.join(" › ")} wants to call` : "Call";
  const lines = [`${who} ${call.name} with ${argumentsText(call.args)}?`];
  if (description) lines.push(description);
  if (reason) lines.push(`Why it asks: ${reason}.`);
  return lines.join("\n");
}

function argumentsText(args: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(args) ?? "no arguments";
  } catch {
    text = "arguments that cannot be shown";
  }
  return text.length > MAX_ARGS_CHARS ? `${text.slice(0, MAX_ARGS_CHARS)}… (${text.length} chars)` : text;
}

/** The refusal for a client that cannot be asked: what would let the call run instead. */
function cannotAsk(question: ApprovalQuestion): string {
  const name = question.call.name;
  const why = question.reason ? ` (${question.reason})` : "";
  return (
    `${name} needs approval${why}, and this MCP client cannot be asked: it did not declare the elicitation capability. ` +
    "Use a client that supports elicitation, or allow the call in the permissions the server runs with: " +
    `permissions: new StandardPermissions({ mode: "acceptEdits", editTools: ["${name}"] }) lets this tool run, ` +
    '{ mode: "bypass" } lets every tool run (quiver mcp: --mode bypass). ' +
    "A tool's own needsApproval is never bypassed"
  );
}
