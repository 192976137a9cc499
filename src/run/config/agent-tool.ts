import { BudgetExceeded, ToolError, UserError } from "../../errors.js";
import { toJsonText } from "../../plain-json.js";
import { asError } from "../../thrown.js";
import { jsonSchema } from "../../tool/json-schema.js";
import { type Tool, tool } from "../../tool/tool.js";
import type { ToolOptions } from "../../tool/types.js";
import { runOf } from "../engine/attempts.js";
import { markTainted } from "../engine/executor.js";
import { runLoop } from "../engine/loop.js";
import { DEFAULT_MAX_TURNS } from "../state/active-run.js";
import type { Agent } from "./agent.js";
import type { Budget } from "./budget.js";

/** How `agent.asTool()` exposes an agent. */
export type AgentToolOptions = ToolOptions<{ input: string }> & {
  /** Default: the agent's name. */
  name?: string;
  description?: string;
  /** The child run's own budget; running out of it is a recoverable error for the parent. */
  budget?: Budget;
  /** The child run's own turn limit. Default 50. */
  maxTurns?: number;
};

/**
 * An agent as a tool: each call runs a child run with its own `runId`, whose events reach the
 * root handle (with `path` and `parentRunId`), whose approvals are answered through the root
 * handle, whose usage counts toward every ancestor's budget, and which is cancelled with its
 * parent.
 */
export function agentTool(agent: Agent<any, any>, options: AgentToolOptions = {}): Tool<{ input: string }> {
  const { name, description, budget, maxTurns, ...toolOptions } = options;
  const toolName = name ?? agent.name.replace(/[^a-zA-Z0-9_-]+/g, "_").slice(0, 64);
  return tool({
    ...toolOptions,
    name: toolName,
    description: description ?? `Delegate a task to the ${agent.name} agent and get its answer.`,
    parameters: jsonSchema<{ input: string }>({
      type: "object",
      properties: {
        input: {
          type: "string",
          description: "The task or question for the agent, with all the context it needs.",
        },
      },
      required: ["input"],
      additionalProperties: false,
    }),
    execute: async ({ input }, ctx) => {
      const parent = runOf(ctx);
      if (!parent) throw new UserError(`${toolName} (an agent as a tool) can only run inside a run`);
      const child = parent.child(
        agent,
        {
          deps: parent.options.deps,
          ...(parent.options.sessionId !== undefined && { sessionId: parent.options.sessionId }),
          ...(parent.options.userId !== undefined && { userId: parent.options.userId }),
          maxTurns: maxTurns ?? DEFAULT_MAX_TURNS,
          ...(budget && { budget }),
          signal: ctx.signal,
        },
        ctx.toolCallId,
      );
      let result: Awaited<ReturnType<typeof runLoop>>;
      if (child.store) await child.writer!.acquire(child.runId);
      try {
        result = await runLoop(child, input);
      } catch (error) {
        const failure = asError(error);
        child.emit({ type: "run_failed", name: failure.name, message: failure.message, kind: "internal" });
        throw error;
      } finally {
        if (child.store) await child.writer!.release(child.runId);
      }
      if (child.tainted) markTainted(parent, `${agent.name} (a sub-agent) read ${child.tainted}`);
      switch (result.stopReason) {
        case "completed":
        case "ends_turn":
          return typeof result.output === "string" ? result.output : toJsonText(result.output);
        case "budget": {
          const error = child.budgetStop!;
          // An ancestor's budget stops the ancestors too; the child's own is the parent's to handle.
          if (parent.owns(error)) throw error;
          throw new BudgetExceeded(
            child.runId,
            error.limit,
            `${agent.name} ran out of its budget (${error.message})`,
          );
        }
        case "max_turns":
          throw new ToolError(`${agent.name} did not finish within ${child.maxTurns} turns`, {
            hint: "Give it a narrower task, or do the rest yourself.",
          });
        case "cancelled":
          if (ctx.signal.aborted) throw ctx.signal.reason;
          throw new ToolError(`${agent.name} was cancelled before it finished`);
      }
    },
  });
}
