import { type JSONSchema, jsonSchema, type Tool, tool } from "../index.js";
import { callKey } from "./run-log.js";

/** A tool a client declares and runs itself (AG-UI `RunAgentInput.tools`). */
export type DeclaredTool = { name: string; description: string; parameters?: unknown };

/** What the client sent back for one of its calls (an AG-UI `tool` message). */
export type ClientResult = { content: string; error?: string };

/** Results kept at most this long for a run to pick up (a resume normally takes milliseconds). */
const KEEP_MS = 10 * 60_000;

/**
 * Results of client-side tool calls on their way into the runs that asked for them.
 *
 * A client tool's call waits for a decision like a call that needs approval (it parks a stored
 * run, or waits in memory up to the agent's `approvalTimeoutMs`). The client's next request
 * brings the result: it is put here, the call is approved, and the tool's `execute` takes it
 * from here when the call runs — in this process, right after, including after a resume.
 *
 * @example
 * const results = new ClientResults();
 * const tools = results.toolsFor([{ name: "pick_color", description: "Ask the user for a color" }]);
 */
export class ClientResults {
  readonly #waiting = new Map<string, ClientResult & { at: number }>();

  /** Holds `result` for call `callId` of run `runId` until the call runs. */
  put(runId: string, callId: string, result: ClientResult): void {
    const now = Date.now();
    for (const [key, entry] of this.#waiting) if (now - entry.at > KEEP_MS) this.#waiting.delete(key);
    this.#waiting.set(callKey(runId, callId), { ...result, at: now });
  }

  /** Forgets a result that will not be used (its call could not be approved). */
  drop(runId: string, callId: string): void {
    this.#waiting.delete(callKey(runId, callId));
  }

  /**
   * Quiver tools for what the client declared (the first of a repeated name). Their calls always
   * wait for the client; `execute` returns what it sent.
   */
  toolsFor(declared: readonly DeclaredTool[]): Tool<any, any>[] {
    const tools: Tool<any, any>[] = [];
    const seen = new Set<string>();
    for (const entry of declared) {
      if (seen.has(entry.name)) continue;
      seen.add(entry.name);
      tools.push(
        tool({
          name: entry.name,
          description: entry.description,
          parameters: jsonSchema<Record<string, unknown>>(schemaOf(entry.parameters)),
          needsApproval: true,
          execute: async (_args, ctx) => {
            const key = callKey(ctx.runId, ctx.toolCallId);
            const result = this.#waiting.get(key);
            this.#waiting.delete(key);
            if (!result) throw new Error(`the client sent no result for this call of ${entry.name}`);
            if (result.error !== undefined)
              throw new Error(result.error || `${entry.name} failed on the client`);
            return result.content;
          },
        }),
      );
    }
    return tools;
  }
}

/** The client's JSON Schema for a tool's arguments, or an open object when it sent none. */
function schemaOf(parameters: unknown): JSONSchema {
  if (parameters && typeof parameters === "object" && !Array.isArray(parameters))
    return parameters as JSONSchema;
  return { type: "object", properties: {} };
}
