/**
 * What every loop workload shares: the `add({a,b})` tool, the scripts the ScriptedModel plays,
 * and the hand-written baseline loop Quiver is compared against.
 */
import type { Message, Model, ScriptedTurn, ToolCall, ToolMessage } from "quiver-agents";
import { z } from "zod";

/** The same Zod schema and the same function serve Quiver's tool and the baseline. */
export const addArgs = z.object({ a: z.number(), b: z.number() });
export async function addNumbers({ a, b }: z.infer<typeof addArgs>): Promise<number> {
  return a + b;
}

/**
 * Quiver's side of the same tool, made with the given `tool()` (workloads load Quiver from dist/,
 * src/ or another checkout).
 */
export function quiverAdd(tool: typeof import("quiver-agents").tool) {
  return tool({ name: "add", description: "Add two numbers.", parameters: addArgs, execute: addNumbers });
}

/** A tool as the baseline sees it: a schema and a function, nothing else. */
export type BareTool = { name: string; schema: z.ZodType; fn: (args: any) => Promise<unknown> };
export const bareAdd: BareTool = { name: "add", schema: addArgs, fn: addNumbers };

/**
 * The turns of `runs` back-to-back runs: `turns` turns of `callsPerTurn` calls each, then a
 * final answer. One ScriptedModel plays a whole sample, so an agent is reused across runs as
 * a server would reuse it.
 */
export function script(
  { turns, callsPerTurn = 1, runs = 1 }: { turns: number; callsPerTurn?: number; runs?: number },
  call: (turn: number, index: number) => { name: string; args: unknown } = (turn, index) => ({
    name: "add",
    args: { a: turn, b: index },
  }),
): ScriptedTurn[] {
  const one: ScriptedTurn[] = [];
  for (let turn = 0; turn < turns; turn++) {
    one.push({ toolCalls: Array.from({ length: callsPerTurn }, (_, index) => call(turn, index)) });
  }
  one.push({ text: "done" });
  return Array.from({ length: runs }, () => one).flat();
}

/**
 * The least an honest loop does: stream the model turn, parse each call's arguments,
 * validate them with the tool's schema (`safeParse`), call the function (a turn's calls
 * concurrently, as Quiver runs them), append an assistant message and the tool messages.
 * No events, ids, retries, timeouts, truncation or cancellation.
 */
export async function baselineRun(model: Model, input: string, tools: BareTool[]): Promise<Message[]> {
  const byName = new Map(tools.map((t) => [t.name, t]));
  const specs = tools.map((t) => ({ name: t.name, description: "", parameters: {} }));
  const messages: Message[] = [{ role: "user", content: input }];
  for (;;) {
    let text = "";
    const calls: ToolCall[] = [];
    for await (const ev of model.stream({ messages, tools: specs, settings: {} })) {
      if (ev.type === "text_delta") text += ev.delta;
      else if (ev.type === "tool_call") calls.push({ id: ev.id, name: ev.name, args: JSON.parse(ev.args) });
    }
    messages.push({ role: "assistant", content: text, toolCalls: calls });
    if (calls.length === 0) return messages;
    const results = await Promise.all(calls.map((call) => callTool(byName.get(call.name)!, call)));
    for (const result of results) messages.push(result);
  }
}

async function callTool(tool: BareTool, call: ToolCall): Promise<ToolMessage> {
  const parsed = tool.schema.safeParse(call.args);
  const base = { role: "tool", toolCallId: call.id, name: call.name } as const;
  if (!parsed.success)
    return { ...base, content: `invalid arguments: ${parsed.error.message}`, isError: true };
  const value = await tool.fn(parsed.data);
  return { ...base, content: typeof value === "string" ? value : JSON.stringify(value), isError: false };
}
