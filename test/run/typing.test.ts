import { Agent, jsonSchema, Runner, ScriptedModel, tool } from "quiver-agents";
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
