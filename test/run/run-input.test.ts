import { Agent, Runner, ScriptedModel, UserError } from "quiver-agents";
import { describe, expect, it } from "vitest";

function agent() {
  const model = new ScriptedModel([{ text: "hi" }]);
  return { model, agent: new Agent({ name: "greeter", model }) };
}

describe("what a run is given is checked before any model call", () => {
  for (const [label, input] of [
    ["a number", 42],
    ["null", null],
    ["an object that is not a message", { foo: 1 }],
    ["a message without content", { role: "user" }],
    ["an empty list", []],
    ["a list holding a non-message", [{ role: "user", content: "hi" }, 7]],
  ] as const) {
    it(`Runner.run rejects ${label} with a UserError`, async () => {
      const { model, agent: a } = agent();
      const error = await Runner.run(a, input as never).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UserError);
      expect((error as Error).message).toMatch(/input/);
      expect(model.requests).toHaveLength(0);
    });
  }

  it("Runner.stream throws the same UserError at once", () => {
    const { model, agent: a } = agent();
    expect(() => Runner.stream(a, 42 as never)).toThrow(UserError);
    expect(model.requests).toHaveLength(0);
  });

  it("maxTurns below 1 (or not a whole number) is a UserError", async () => {
    const { model, agent: a } = agent();
    await expect(Runner.run(a, "hi", { maxTurns: 0 })).rejects.toThrow(
      /maxTurns must be a whole number of at least 1 \(got 0\)/,
    );
    expect(() => Runner.stream(a, "hi", { maxTurns: 1.5 })).toThrow(UserError);
    expect(model.requests).toHaveLength(0);
  });

  it("accepts a string, a message and a transcript", async () => {
    for (const input of [
      "hi",
      { role: "user" as const, content: "hi" },
      [{ role: "user" as const, content: "hi" }],
    ]) {
      const { agent: a } = agent();
      expect((await Runner.run(a, input)).output).toBe("hi");
    }
  });
});
