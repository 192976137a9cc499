import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  Agent,
  type AgentConfig,
  type Permissions,
  type RunEvent,
  Runner,
  type RunResult,
  ScriptedModel,
  StandardPermissions,
  type Tool,
  type ToolCallRecord,
} from "quiver-agents";
import { type ShellOptions, workspace } from "quiver-agents/workspace";
import { afterAll, expect } from "vitest";

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

export type Verdict = { command: string; decision: "allow" | "ask" | "deny"; reason: string };

/**
 * What the shell's rules decide for each command, through a real run in the default mode: an
 * approval prompt is "ask" (and rejected), a refusal naming a deny rule is "deny", a call that
 * ran is "allow". No command really runs: the executor starts `true` instead.
 */
export async function decideShell(
  root: string,
  commands: string[],
  rules: Pick<ShellOptions, "allow" | "deny">,
  permissions: Permissions = new StandardPermissions({ mode: "default" }),
): Promise<Verdict[]> {
  const ws = workspace({ root, shell: rules, executor: () => ({ file: "true", args: [] }) });
  const asked = new Map<string, string>();
  // One turn for all of them: a long table would outlast the run's turn limit.
  const { records } = await play(
    ws.tools,
    [commands.map((command) => ({ name: "shell", args: { command } }))],
    { permissions },
    (ev) => {
      if (ev.type !== "approval_required") return;
      asked.set((ev.call.args as { command: string }).command, ev.reason ?? "");
      ev.reject("test");
    },
  );
  return commands.map((command, i) => {
    const record = records[i]!;
    const reason = asked.get(command);
    if (reason !== undefined) return { command, decision: "ask", reason };
    if (!record.ok && /deny rule/.test(record.output))
      return { command, decision: "deny", reason: record.output };
    expect(record.ok, `${command.slice(0, 80)}: ${record.output.slice(-300)}`).toBe(true);
    return { command, decision: "allow", reason: "" };
  });
}

/** Verdicts as `{ command: decision }`, for one `toEqual`. */
export function decisions(verdicts: Verdict[]): Record<string, string> {
  return Object.fromEntries(verdicts.map((v) => [v.command, v.decision]));
}
