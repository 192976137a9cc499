import {
  Agent,
  getRunContext,
  type Message,
  type Model,
  type ModelRequest,
  modelPrice,
  Runner,
  setModelPrice,
  tool,
} from "quiver-agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A model that calls `echo` while it has seen fewer than `calls` tool results, then answers; it reports what each request held. */
function recording(calls: number, onRequest: (request: ModelRequest, turn: number) => void): Model {
  let turn = 0;
  return {
    name: "recording",
    async *stream(request) {
      onRequest(request, ++turn);
      const done = request.messages.filter((m) => m.role === "tool").length;
      if (done < calls) {
        yield { type: "tool_call", id: `c${done}`, name: "echo", args: JSON.stringify({ text: `t${done}` }) };
        yield { type: "finish", reason: "tool_calls" };
      } else {
        yield { type: "text_delta", delta: "done" };
        yield { type: "finish", reason: "stop" };
      }
    },
  };
}

const echo = tool({
  name: "echo",
  description: "Echo.",
  parameters: z.object({ text: z.string() }),
  execute: async ({ text }) => text,
});

describe("each turn's model request", () => {
  it("holds the whole transcript and the tools, whatever the model did to the last one", async () => {
    const seen: Array<{ messages: number; tools: string[]; system: string | undefined }> = [];
    const model = recording(3, (request, turn) => {
      seen.push({
        messages: request.messages.length,
        tools: request.tools.map((t) => t.name),
        system: request.system,
      });
      // A model (or a wrapper) that rewrites the request it was given, each turn differently.
      const writable = request as { messages: readonly Message[]; tools: unknown[]; system?: string };
      if (turn === 1) writable.messages = [];
      if (turn === 2) writable.tools = [];
      if (turn === 3) writable.system = "changed";
    });
    const agent = new Agent({ name: "a", model, tools: [echo], instructions: "Be brief." });
    const result = await Runner.run(agent, "go");
    expect(result.stopReason).toBe("completed");
    expect(seen).toEqual([
      { messages: 1, tools: ["echo"], system: "Be brief." },
      { messages: 3, tools: ["echo"], system: "Be brief." },
      { messages: 5, tools: ["echo"], system: "Be brief." },
      { messages: 7, tools: ["echo"], system: "Be brief." },
    ]);
  });

  it("carries a signal that follows the run on every turn", async () => {
    const signals: AbortSignal[] = [];
    const controller = new AbortController();
    const model = recording(5, (request, turn) => {
      signals.push(request.signal!);
      if (turn === 2) controller.abort(new Error("stop"));
    });
    const result = await Runner.run(new Agent({ name: "a", model, tools: [echo] }), "go", {
      signal: controller.signal,
    });
    expect(result.stopReason).toBe("cancelled");
    expect(signals.length).toBeGreaterThanOrEqual(2);
    expect(signals.every((s) => s.aborted)).toBe(true);
  });
});

describe("the run context across turns", () => {
  it("reaches each call's code after awaits and in timers, turn after turn", async () => {
    const seen: string[] = [];
    const slow = tool({
      name: "echo",
      description: "Echo.",
      parameters: z.object({ text: z.string() }),
      execute: async ({ text }) => {
        await wait(1);
        const inTimer = await new Promise<string>((resolve) =>
          setTimeout(() => resolve(getRunContext().toolCallId), 1),
        );
        seen.push(`${getRunContext().toolCallId}/${inTimer}`);
        return text;
      },
    });
    for (const calls of [1, 3]) {
      seen.length = 0;
      const result = await Runner.run(
        new Agent({ name: "a", model: recording(calls, () => {}), tools: [slow] }),
        "go",
      );
      expect(result.toolCalls.map((c) => c.output)).toEqual(Array.from({ length: calls }, (_, i) => `t${i}`));
      expect(seen).toEqual(Array.from({ length: calls }, (_, i) => `c${i}/c${i}`));
      expect(() => getRunContext()).toThrow(/outside a tool call/);
    }
  });
});

describe("model prices", () => {
  it("price a model named after a lookup found none", async () => {
    const usage = { inputTokens: 1_000_000, outputTokens: 0 };
    const model = (name: string): Model => ({
      name,
      async *stream() {
        yield { type: "usage", usage };
        yield { type: "text_delta", delta: "hi" };
        yield { type: "finish", reason: "stop" };
      },
    });
    const cost = async (name: string) =>
      (await Runner.run(new Agent({ name: "a", model: model(name) }), "go")).usage.costUsd;
    expect(await cost("turn-request-test-model-2026-01-15")).toBeUndefined();
    expect(modelPrice("turn-request-test-model-2026-01-15")).toBeUndefined();
    // A prefix registered later prices the dated name it did not know before.
    setModelPrice("turn-request-test-model", { input: 2, output: 8 });
    expect(await cost("turn-request-test-model-2026-01-15")).toBe(2);
    setModelPrice("turn-request-test-model-2026-01-15", { input: 3, output: 8 });
    expect(await cost("turn-request-test-model-2026-01-15")).toBe(3);
  });
});
