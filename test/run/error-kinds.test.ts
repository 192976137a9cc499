import {
  Agent,
  ProviderError,
  type RunFailedKind,
  Runner,
  ScriptedModel,
  type ToolErrorKind,
  tool,
} from "quiver-agents";
import { describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";

// The type assertions are checked by the type-checker (`npm test` runs tsc over test/).
describe("error kinds are closed sets a switch can complete", () => {
  it("a failed call's error.kind is a ToolErrorKind, on the record and on the event", async () => {
    const lookup = tool({
      name: "lookup",
      parameters: z.object({ id: z.string() }),
      execute: async () => "found",
    });
    const agent = new Agent({
      name: "a",
      model: new ScriptedModel([{ toolCalls: [{ name: "lookup", args: { id: 7 } }] }, { text: "done" }]),
      tools: [lookup],
    });
    const handle = Runner.stream(agent, "look it up");
    const kinds: ToolErrorKind[] = [];
    for await (const ev of handle) {
      if (ev.type === "tool_call_completed" && ev.error) {
        expectTypeOf(ev.error.kind).toEqualTypeOf<ToolErrorKind>();
        kinds.push(ev.error.kind);
      }
    }
    const { toolCalls } = await handle.result();
    expectTypeOf(toolCalls[0]!.error!.kind).toEqualTypeOf<ToolErrorKind>();
    expect(toolCalls[0]?.error?.kind).toBe("invalid_arguments");
    expect(kinds).toEqual(["invalid_arguments"]);
  });

  it("run_failed.kind is a RunFailedKind", async () => {
    // A model with no turn to play fails with a ProviderError.
    const agent = new Agent({ name: "a", model: new ScriptedModel([]) });
    const seen: RunFailedKind[] = [];
    await expect(async () => {
      for await (const ev of Runner.stream(agent, "go")) {
        if (ev.type === "run_failed") {
          expectTypeOf(ev.kind).toEqualTypeOf<RunFailedKind>();
          seen.push(ev.kind);
        }
      }
    }).rejects.toBeInstanceOf(ProviderError);
    expect(seen).toEqual(["provider_error"]);
  });
});
