import { Agent, type Model, type ModelStreamEvent, Runner, ScriptedModel, tool } from "quiver-agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { idOf, installContextManager, parentOf, recordingTracer, traceOf } from "./harness.js";

// With a context manager (what NodeSDK and NodeTracerProvider.register() install), spans that
// the app's own code starts inside a tool or a provider nest under Quiver's spans.
let uninstall: () => void;
beforeAll(() => {
  uninstall = installContextManager();
});
afterAll(() => uninstall());

describe("spans with the application's context manager", () => {
  it("nests spans a tool starts under its execute_tool span, across awaits", async () => {
    const { tracer, one } = recordingTracer();
    const query = tool({
      name: "query_db",
      description: "Run a query.",
      parameters: z.object({ sql: z.string() }),
      execute: async ({ sql }) => {
        // What an instrumented database client does: start a span in the active context.
        await new Promise((r) => setTimeout(r, 5));
        const span = tracer.startSpan("db.query");
        await new Promise((r) => setTimeout(r, 5));
        span.end();
        return `ran ${sql}`;
      },
    });
    const model = new ScriptedModel([
      { toolCalls: [{ id: "q1", name: "query_db", args: { sql: "select 1" } }] },
      { text: "done" },
    ]);
    await Runner.run(new Agent({ name: "analyst", model, tools: [query] }), "go", { tracer });
    const call = one("execute_tool query_db");
    const db = one("db.query");
    expect(parentOf(db)).toBe(idOf(call));
    expect(traceOf(db)).toBe(traceOf(call));
  });

  it("nests spans started while the model streams (an instrumented HTTP client) under the chat span", async () => {
    const { tracer, one } = recordingTracer();
    const model: Model = {
      name: "openai:gpt-test",
      stream(): AsyncIterable<ModelStreamEvent> {
        return (async function* () {
          const http = tracer.startSpan("POST /v1/chat/completions");
          await new Promise((r) => setTimeout(r, 2));
          http.end();
          yield { type: "text_delta", delta: "hello" } as const;
          yield { type: "finish", reason: "stop" } as const;
        })();
      },
    };
    await Runner.run(new Agent({ name: "greeter", model }), "hi", { tracer });
    expect(parentOf(one("POST /v1/chat/completions"))).toBe(idOf(one("chat gpt-test")));
  });

  it("starts a run under the span that is active where it was started", async () => {
    const { tracer, one } = recordingTracer();
    const model = new ScriptedModel([{ text: "hi" }]);
    await tracer.startActiveSpan("POST /api/chat", async (request) => {
      const handle = Runner.stream(new Agent({ name: "greeter", model }), "hi", { tracer });
      await handle.result();
      request.end();
    });
    const request = one("POST /api/chat");
    const run = one("invoke_agent greeter");
    expect(parentOf(run)).toBe(idOf(request));
    expect(traceOf(run)).toBe(traceOf(request));
  });

  it("keeps two concurrent runs' spans apart", async () => {
    const { tracer, named } = recordingTracer();
    const slow = tool({
      name: "slow",
      description: "Takes a moment.",
      parameters: z.object({}),
      execute: async () => {
        await new Promise((r) => setTimeout(r, 10));
        const span = tracer.startSpan("inner");
        span.end();
        return "ok";
      },
    });
    const agent = (name: string) =>
      new Agent({
        name,
        model: new ScriptedModel([{ toolCalls: [{ name: "slow", args: {} }] }, { text: "done" }]),
        tools: [slow],
      });
    await Promise.all([Runner.run(agent("a"), "go", { tracer }), Runner.run(agent("b"), "go", { tracer })]);
    const calls = named("execute_tool slow");
    const inners = named("inner");
    expect(inners).toHaveLength(2);
    for (const inner of inners) {
      const call = calls.find((c) => idOf(c) === parentOf(inner));
      expect(call).toBeDefined();
      expect(traceOf(call!)).toBe(traceOf(inner));
    }
    expect(new Set(inners.map(traceOf)).size).toBe(2);
  });
});
