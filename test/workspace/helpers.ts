import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  Agent,
  type AgentConfig,
  type RunEvent,
  Runner,
  type RunResult,
  ScriptedModel,
  StandardPermissions,
  type Tool,
  type ToolCallRecord,
} from "quiver-agents";
import { afterAll } from "vitest";

/** A fresh directory (its real path), removed after the file's tests. */
export function tempDir(prefix = "quiver-ws-"): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export type Call = { name: string; args: Record<string, unknown> };

export type Played = { result: RunResult; events: RunEvent[]; records: ToolCallRecord[] };

/**
 * Runs an agent with these tools through a ScriptedModel that requests each turn's calls in
 * order, then answers "done". Bypass permissions unless told otherwise.
 */
export async function play(
  tools: Tool[],
  turns: Array<Call | Call[]>,
  config: Partial<AgentConfig<any, any>> = {},
  onEvent?: (ev: RunEvent) => void,
): Promise<Played> {
  const model = new ScriptedModel([
    ...turns.map((t) => ({ toolCalls: Array.isArray(t) ? t : [t] })),
    { text: "done" },
  ]);
  const agent = new Agent({
    name: "worker",
    model,
    tools,
    permissions: new StandardPermissions({ mode: "bypass" }),
    ...config,
  });
  const handle = Runner.stream(agent, "work");
  const events: RunEvent[] = [];
  for await (const ev of handle) {
    events.push(ev);
    onEvent?.(ev);
  }
  const result = await handle.result();
  return { result, events, records: result.toolCalls };
}

/** One call in its own run: the record of its result. */
export async function call(
  tools: Tool[],
  name: string,
  args: Record<string, unknown>,
): Promise<ToolCallRecord> {
  const { records } = await play(tools, [{ name, args }]);
  return records[0]!;
}
