import {
  type Agent,
  type EventOf,
  type Model,
  type ModelStreamEvent,
  Runner,
  type StopReason,
} from "../index.js";
import { ClientApprovals } from "./approval.js";
import {
  type CallScope,
  type CallSettings,
  errorResult,
  type McpToolResult,
  mcpContent,
  messageOf,
  observe,
} from "./call-scope.js";

/**
 * The MCP client's request as the one "model" turn of a run: the turn asks for exactly the
 * call the client sent, and the turn after it stops. It is not a language model and says so:
 * its name is "mcp-client", what `turn_started.model` and traces record.
 */
class ClientRequest implements Model {
  readonly name = "mcp-client";
  #asked = false;

  constructor(
    readonly callId: string,
    readonly toolName: string,
    readonly argsJson: string,
  ) {}

  async *stream(): AsyncIterable<ModelStreamEvent> {
    if (this.#asked) {
      yield { type: "finish", reason: "stop" };
      return;
    }
    this.#asked = true;
    yield { type: "tool_call", index: 0, id: this.callId, name: this.toolName, args: this.argsJson };
    yield { type: "finish", reason: "tool_calls" };
  }
}

/**
 * Runs one `tools/call` the way the engine runs a model's call, by making it the only call of a
 * run: the arguments are parsed, coerced and validated against the tool's schema; permissions
 * and `needsApproval` decide whether to ask (the client, see `ClientApprovals`); timeouts,
 * retries, policies, renderers, truncation and image limits apply; `ctx.update()` becomes
 * progress; the client's cancellation aborts the run. The result is the tool message exactly
 * as a model would read it, failures included (`Tool error: …`).
 *
 * One code path instead of a second executor: every rule the engine has, and every rule it will
 * get, holds for MCP calls too. The price is a run's bookkeeping per call (two "turns" and their
 * events), small beside a JSON-RPC round trip.
 */
export async function runToolCall(
  base: Agent<any, any>,
  name: string,
  args: Record<string, unknown> | undefined,
  scope: CallScope,
  settings: CallSettings,
): Promise<McpToolResult> {
  const callId = `mcp_${String(scope.requestId).replace(/[^a-zA-Z0-9_-]/g, "_")}`;
  let argsJson: string;
  try {
    argsJson = JSON.stringify(args ?? {});
  } catch {
    // Nested past what JSON.stringify can recurse through (thousands of levels): invalid
    // arguments for any tool, answered as a result rather than a protocol error.
    return errorResult(`Invalid arguments for ${name}: they are nested too deeply to read`);
  }
  const approvals = new ClientApprovals(scope.approvals, undefined);
  const agent = base.clone({
    model: new ClientRequest(callId, name, argsJson),
    approvalHandler: approvals.handler,
  });
  const input = `${scope.clientName ? `MCP client ${scope.clientName}` : "An MCP client"} called ${name}`;
  let completed: EventOf<"tool_call_completed"> | undefined;
  try {
    const handle = Runner.stream(agent, input, {
      signal: scope.signal,
      // The client's call, then the turn that ends the run.
      maxTurns: 2,
      deps: settings.deps,
      ...(scope.userId !== undefined && { userId: scope.userId }),
    });
    for await (const event of handle) {
      approvals.observe(event);
      observe(settings, event);
      if (event.path) continue;
      if (event.type === "tool_call_update") scope.progress?.report(event.partial);
      else if (event.type === "tool_call_completed" && event.call.id === callId) completed = event;
    }
    const result = await handle.result();
    if (!completed) return notRun(name, result.stopReason);
  } catch (error) {
    // A UserError (a tool name clash, a bad setting) or an internal fault failed the run.
    return errorResult(`${name} could not run: ${messageOf(error)}`);
  }
  return {
    content: mcpContent(completed.content ?? completed.output),
    ...(!completed.ok && { isError: true }),
  };
}

function notRun(name: string, stopReason: StopReason): McpToolResult {
  return errorResult(
    stopReason === "cancelled"
      ? `${name} was cancelled`
      : `${name} did not run (the run stopped: ${stopReason})`,
  );
}
