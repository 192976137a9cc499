/** The agent both paths of bench/dbos.ts drive: CALLS `add` calls, one per turn, then an answer. */
import { Agent, type ModelRequest, ScriptedModel, tool } from "quiver-agents";
import { z } from "zod";

export function benchAgent(calls: number): Agent<unknown, string> {
  const add = tool({
    name: "add",
    description: "Add two numbers.",
    parameters: z.object({ a: z.number(), b: z.number() }),
    idempotent: true,
    execute: async ({ a, b }) => String(a + b),
  });
  const model = new ScriptedModel(
    Array.from({ length: 20_000 }, () => (req: ModelRequest) => {
      const done = req.messages.filter((m) => m.role === "tool").length;
      return done < calls
        ? { toolCalls: [{ id: `c${done}`, name: "add", args: { a: done, b: 1 } }] }
        : { text: `added ${done} times` };
    }),
    { record: false },
  );
  return new Agent({ name: "bench", model, tools: [add] });
}
