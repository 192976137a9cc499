import { Agent, jsonSchema, type RunContext, Runner, ScriptedModel, tool } from "quiver-agents";
import { describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";

// These assertions are checked by the type-checker (`npm test` runs tsc over test/) and at run time.
describe("types a user gets without writing generics", () => {
  it("outputType types RunResult.output from the schema", async () => {
    const agent = new Agent({
      name: "extractor",
      model: new ScriptedModel([{ text: '{"total": 42, "currency": "EUR"}' }]),
      outputType: z.object({ total: z.number(), currency: z.string() }),
    });
    const result = await Runner.run(agent, "extract");
    expectTypeOf(result.output).toEqualTypeOf<{ total: number; currency: string }>();
    expect(result.output.total).toBe(42);

    const typed = new Agent({
      name: "typed",
      model: new ScriptedModel([{ text: '{"ok": true}' }]),
      outputType: jsonSchema<{ ok: boolean }>({
        type: "object",
        properties: { ok: { type: "boolean" } },
        required: ["ok"],
      }),
    });
    const fromJson = await Runner.stream(typed, "check").result();
    expectTypeOf(fromJson.output).toEqualTypeOf<{ ok: boolean }>();
    expect(fromJson.output.ok).toBe(true);
  });

  it("an agent without outputType answers a string", async () => {
    const agent = new Agent({ name: "plain", model: new ScriptedModel([{ text: "hi" }]) });
    const result = await Runner.run(agent, "hello");
    expectTypeOf(result.output).toEqualTypeOf<string>();
    expect(result.output).toBe("hi");
  });

  it("resultRenderer is typed by what execute returns", async () => {
    const orders = tool({
      name: "list_orders",
      description: "List orders.",
      parameters: z.object({ customer: z.string() }),
      execute: async ({ customer }) => [{ id: `${customer}-1`, cents: 1250 }],
      resultRenderer: (rows) => rows.map((row) => `${row.id}: ${(row.cents / 100).toFixed(2)}`).join("\n"),
    });
    const agent = new Agent({
      name: "clerk",
      model: new ScriptedModel([
        { toolCalls: [{ name: "list_orders", args: { customer: "ada" } }] },
        { text: "ok" },
      ]),
      tools: [orders],
    });
    const result = await Runner.run(agent, "orders?");
    expect(result.toolCalls[0]?.output).toBe("ada-1: 12.50");
  });
});

describe("deps an agent needs", () => {
  type Deps = { db: { name(id: string): string } };
  const lookup = tool({
    name: "lookup",
    description: "Look a customer up.",
    parameters: z.object({ id: z.string() }),
    execute: ({ id }, ctx: RunContext<Deps>) => ctx.deps.db.name(id),
  });
  const turns = () => [{ toolCalls: [{ name: "lookup", args: { id: "7" } }] }, { text: "done" }];

  it("are required by Runner.run, stream and resume once the agent says their type", async () => {
    const shop = new Agent<Deps>({ name: "shop", model: new ScriptedModel(turns()), tools: [lookup] });
    // The run a missing `deps` would give: the tool fails reading ctx.deps.
    // @ts-expect-error deps are required for an Agent<Deps>
    const without = await Runner.run(shop, "who is 7?");
    expect(without.toolCalls[0]?.error?.message).toMatch(/Cannot read properties of undefined/);
    // @ts-expect-error options without deps
    Runner.stream(shop, "who is 7?", { maxTurns: 2 }).cancel();
    // @ts-expect-error deps of the wrong shape
    Runner.stream(shop, "who is 7?", { deps: { database: 1 } }).cancel();

    const shop2 = new Agent<Deps>({ name: "shop", model: new ScriptedModel(turns()), tools: [lookup] });
    const result = await Runner.run(shop2, "who is 7?", { deps: { db: { name: (id) => `Ada ${id}` } } });
    expect(result.toolCalls[0]?.output).toBe("Ada 7");
  });

  it("stay optional for an agent that does not say (or admits undefined)", async () => {
    const plain = new Agent({ name: "plain", model: new ScriptedModel([{ text: "hi" }]) });
    expect((await Runner.run(plain, "hello")).output).toBe("hi");
    const maybe = new Agent<Deps | undefined>({ name: "maybe", model: new ScriptedModel([{ text: "hi" }]) });
    expect((await Runner.run(maybe, "hello", { maxTurns: 1 })).output).toBe("hi");
  });
});
