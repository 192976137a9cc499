import {
  type Agent,
  InvalidToolArguments,
  jsonSchema,
  type Permissions,
  type RunEvent,
  Runner,
  type RunOptions,
  type Tool,
  tool,
} from "../index.js";
import { ClientApprovals } from "./approval.js";
import {
  type CallScope,
  type CallSettings,
  errorResult,
  type McpToolResult,
  messageOf,
  observe,
} from "./call-scope.js";
import type { ExposedTool } from "./listing.js";
import type { ProgressReporter } from "./progress.js";

/** How an exposed agent's runs are started. */
export type AgentRunSettings = CallSettings & {
  store: RunOptions["store"];
  budget: RunOptions["budget"];
  maxTurns: number | undefined;
  permissions: Permissions | undefined;
  approvalTimeoutMs: number | undefined;
};

const INPUT_SCHEMA = {
  type: "object",
  properties: { input: { type: "string", description: "The task or question for the agent, in words." } },
  required: ["input"],
  additionalProperties: false,
} as const;

/**
 * The one tool that stands for an agent: named after it (characters MCP tool names do not allow
 * become `_`), with one argument `input`, the way `agent.asTool()` looks to another agent.
 */
export function agentTool(
  agent: Agent<any, any>,
  options: { toolName?: string | undefined; description?: string | undefined },
): { exposed: ExposedTool; schema: Tool<{ input: string }> } {
  const name = options.toolName ?? agent.name.replace(/[^a-zA-Z0-9_-]/g, "_");
  const description =
    options.description ??
    `Gives a task to the agent "${agent.name}", which works on it with its own tools and answers when done.`;
  const schema = tool({
    name,
    description,
    parameters: jsonSchema<{ input: string }>(INPUT_SCHEMA),
    execute: () => "",
  });
  return {
    exposed: {
      name,
      description,
      inputSchema: schema.toSpec().parameters,
      // What the agent may do depends on its tools and the person approving them: MCP's
      // cautious defaults (may change things, open world) are the honest description.
      annotations: { title: agent.name },
      parallel: true,
    },
    schema,
  };
}

/**
 * One call of the agent's tool: a whole run (`Runner.stream`) on `input`, with the server's
 * store, budget and turn limit, the caller as `userId`, approvals asked of the client (after
 * the agent's own `approvalHandler`, which answers first), progress from what the run does, and
 * the client's cancellation cancelling it. The final output is the result; a run that stopped
 * early (budget, turns) or failed is an error result saying so.
 */
export async function runAgentCall(
  agent: Agent<any, any>,
  schema: Tool<{ input: string }>,
  args: Record<string, unknown> | undefined,
  scope: CallScope,
  settings: AgentRunSettings,
): Promise<McpToolResult> {
  const parsed = await schema.parseArguments(args ?? {});
  if (!parsed.ok) {
    const invalid = new InvalidToolArguments(schema.name, parsed.issues);
    return errorResult(invalid.message, invalid.hint);
  }
  const { input } = parsed.value as { input: string };
  const approvals = new ClientApprovals(scope.approvals, agent.config.approvalHandler);
  const running = agent.clone({
    approvalHandler: approvals.handler,
    ...(settings.permissions && { permissions: settings.permissions }),
    ...(settings.approvalTimeoutMs !== undefined && { approvalTimeoutMs: settings.approvalTimeoutMs }),
  });
  const narrator = new RunNarrator(scope.progress);
  let runId: string | undefined;
  try {
    const handle = Runner.stream(running, input, {
      signal: scope.signal,
      deps: settings.deps,
      ...(scope.userId !== undefined && { userId: scope.userId }),
      ...(settings.store && { store: settings.store }),
      ...(settings.budget && { budget: settings.budget }),
      ...(settings.maxTurns !== undefined && { maxTurns: settings.maxTurns }),
    });
    runId = handle.runId;
    for await (const event of handle) {
      approvals.observe(event);
      observe(settings, event);
      narrator.see(event);
    }
    const result = await handle.result();
    const text = typeof result.output === "string" ? result.output : JSON.stringify(result.output);
    const meta = { _meta: { "quiver-agents/runId": result.runId } };
    if (result.stopReason === "completed" || result.stopReason === "ends_turn") {
      const structured = result.output;
      return {
        content: [{ type: "text", text }],
        ...(isPlainObject(structured) && { structuredContent: structured }),
        ...meta,
      };
    }
    return {
      ...errorResult(
        `the agent ${agent.name} stopped before it finished (${STOPPED[result.stopReason] ?? result.stopReason})` +
          (text ? `; its last words: ${text}` : ""),
      ),
      ...meta,
    };
  } catch (error) {
    return {
      ...errorResult(`the agent ${agent.name} failed: ${messageOf(error)}`),
      ...(runId !== undefined && { _meta: { "quiver-agents/runId": runId } }),
    };
  }
}

const STOPPED: Record<string, string> = {
  budget: "its budget ran out",
  max_turns: "it reached its turn limit",
  cancelled: "it was cancelled",
  awaiting_approval: "a call waits for an approval",
};

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * What the run is doing, as progress messages: the text the model writes (the tail of its
 * current turn), the calls it makes, their partial results.
 */
class RunNarrator {
  readonly #progress: ProgressReporter | undefined;
  #text = "";

  constructor(progress: ProgressReporter | undefined) {
    this.#progress = progress;
  }

  see(event: RunEvent): void {
    const progress = this.#progress;
    if (!progress) return;
    const who = event.path ? `${event.path.join(" › ")}: ` : "";
    switch (event.type) {
      case "turn_started":
        this.#text = "";
        return;
      case "text_delta":
        this.#text = (this.#text + event.delta).slice(-400);
        progress.report({ message: `${who}${this.#text}` });
        return;
      case "tool_call_started":
        progress.report({ message: `${who}calling ${event.call.name}` });
        return;
      case "tool_call_update":
        progress.report({ message: `${who}${event.call.name}: ${partialText(event.partial)}` });
        return;
      case "tool_call_completed":
        progress.report({ message: `${who}${event.call.name} ${event.ok ? "done" : "failed"}` });
        return;
      default:
        return;
    }
  }
}

function partialText(partial: unknown): string {
  if (typeof partial === "string") return partial.slice(-300);
  const { message, output } = (partial ?? {}) as { message?: unknown; output?: unknown };
  if (typeof message === "string") return message.slice(-300);
  if (typeof output === "string") return output.slice(-300);
  try {
    return (JSON.stringify(partial) ?? "").slice(0, 300);
  } catch {
    return "…";
  }
}
