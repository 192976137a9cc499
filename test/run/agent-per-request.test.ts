import { Agent, Runner, ScriptedModel, tool, UserError } from "quiver-agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";

// A server makes a new Agent per request over tools defined once: what each run offers and
// calls must be that agent's own tools, whatever runs of other agents over some of the same
// tools came before (the runner shares the work of indexing a tool list between them).

const named = (name: string, answer: string) =>
  tool({ name, description: `${name}.`, parameters: z.object({}), execute: async () => answer });

const lookup = named("lookup", "looked up");
const first = named("extra", "first extra");
const second = named("extra", "second extra");
const other = named("other", "other");

/** One run of a new agent over `tools` that calls `call`: the tool names offered and the call's output. */
async function runWith(tools: ReturnType<typeof named>[], call: string) {
  const model = new ScriptedModel([{ toolCalls: [{ name: call, args: {} }] }, { text: "done" }]);
  const result = await Runner.run(new Agent({ name: "per-request", model, tools }), "go");
  return { offered: model.requests[0]!.tools.map((t) => t.name), output: result.toolCalls[0]!.output };
}

describe("a new Agent per request", () => {
  it("offers and runs its own tools when other agents shared some of them", async () => {
    expect(await runWith([lookup, first], "extra")).toEqual({
      offered: ["lookup", "extra"],
      output: "first extra",
    });
    // Same first tool, same names, another tool object: the new one runs.
    expect(await runWith([lookup, second], "extra")).toEqual({
      offered: ["lookup", "extra"],
      output: "second extra",
    });
    expect(await runWith([lookup], "lookup")).toEqual({ offered: ["lookup"], output: "looked up" });
    expect(await runWith([lookup, other], "other")).toEqual({
      offered: ["lookup", "other"],
      output: "other",
    });
    expect(await runWith([lookup, first], "extra")).toEqual({
      offered: ["lookup", "extra"],
      output: "first extra",
    });
    expect(await runWith([other, lookup], "lookup")).toEqual({
      offered: ["other", "lookup"],
      output: "looked up",
    });
  });

  it("stays right over many different lists that start with the same tool", async () => {
    const many = Array.from({ length: 20 }, (_, i) => named(`t${i}`, `answer ${i}`));
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < many.length; i++) {
        expect(await runWith([lookup, many[i]!], `t${i}`)).toEqual({
          offered: ["lookup", `t${i}`],
          output: `answer ${i}`,
        });
      }
    }
  });

  it("sees a change to an agent's own tool list between runs", async () => {
    const tools = [lookup];
    const agent = new Agent({
      name: "mutable",
      model: new ScriptedModel([
        { text: "one" },
        { toolCalls: [{ name: "other", args: {} }] },
        { text: "two" },
      ]),
      tools,
    });
    await Runner.run(agent, "go");
    tools.push(other);
    const result = await Runner.run(agent, "go");
    expect(result.toolCalls.map((c) => c.output)).toEqual(["other"]);
  });

  it("rejects a name clash every time, not only the first", async () => {
    for (let i = 0; i < 2; i++) {
      await expect(runWith([first, second], "extra")).rejects.toThrow(UserError);
    }
  });
});
