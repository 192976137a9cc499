import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import {
  Agent,
  fallback,
  type Model,
  ProviderError,
  type RunEvent,
  Runner,
  ScriptedModel,
  ToolError,
  tool,
} from "quiver-agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { idOf, parentOf, recordingTracer, traceOf } from "./harness.js";

const lookup = tool({
  name: "lookup_order",
  description: "Look up an order.",
  parameters: z.object({ orderId: z.string() }),
  execute: async ({ orderId }) => `${orderId}: shipped`,
});

function orderAgent(model: ScriptedModel, tools = [lookup]) {
  return new Agent({ name: "support", model, tools, instructions: "Help with orders." });
}

const CONTENT_KEYS = [
  "gen_ai.input.messages",
  "gen_ai.output.messages",
  "gen_ai.system_instructions",
  "gen_ai.tool.definitions",
  "gen_ai.tool.call.arguments",
  "gen_ai.tool.call.result",
];

describe("spans of a run (no context manager)", () => {
  it("nests one chat span per model turn and one execute_tool span per call under invoke_agent, in one trace", async () => {
    const { tracer, one, named, spans } = recordingTracer();
    const model = new ScriptedModel(
      [
        {
          toolCalls: [{ id: "c1", name: "lookup_order", args: { orderId: "A1" } }],
          usage: { inputTokens: 30, outputTokens: 7 },
        },
        { text: "A1 has shipped.", usage: { inputTokens: 45, outputTokens: 5, cachedInputTokens: 20 } },
      ],
      { name: "openai:gpt-4.1-mini" },
    );
    const result = await Runner.run(orderAgent(model), "Where is A1?", { tracer, sessionId: "chat-7" });
    expect(result.output).toBe("A1 has shipped.");

    const run = one("invoke_agent support");
    const chats = named("chat gpt-4.1-mini");
    const call = one("execute_tool lookup_order");
    expect(spans()).toHaveLength(4);
    expect(new Set(spans().map(traceOf)).size).toBe(1);

    expect(run.kind).toBe(SpanKind.INTERNAL);
    expect(parentOf(run)).toBeUndefined();
    expect(run.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "support",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "gpt-4.1-mini",
      "gen_ai.conversation.id": "chat-7",
      "gen_ai.usage.input_tokens": 75,
      "gen_ai.usage.output_tokens": 12,
      "quiver.run.id": result.runId,
      "quiver.stop_reason": "completed",
    });
    expect(run.status.code).toBe(SpanStatusCode.UNSET);

    expect(chats).toHaveLength(2);
    for (const chat of chats) {
      expect(chat.kind).toBe(SpanKind.CLIENT);
      expect(parentOf(chat)).toBe(idOf(run));
      expect(chat.attributes).toMatchObject({
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4.1-mini",
        "gen_ai.conversation.id": "chat-7",
      });
    }
    const [first, second] = [...chats].sort(
      (a, b) => Number(a.attributes["quiver.turn"]) - Number(b.attributes["quiver.turn"]),
    );
    expect(first!.attributes).toMatchObject({
      "gen_ai.response.finish_reasons": ["tool_calls"],
      "gen_ai.usage.input_tokens": 30,
      "gen_ai.usage.output_tokens": 7,
    });
    expect(second!.attributes).toMatchObject({
      "gen_ai.response.finish_reasons": ["stop"],
      "gen_ai.usage.input_tokens": 45,
      "gen_ai.usage.cache_read.input_tokens": 20,
    });

    expect(call.kind).toBe(SpanKind.INTERNAL);
    expect(parentOf(call)).toBe(idOf(run));
    expect(call.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "lookup_order",
      "gen_ai.tool.call.id": "c1",
      "gen_ai.tool.type": "function",
    });
    expect(call.status.code).toBe(SpanStatusCode.UNSET);
    // The call ran between the two model turns. The SDK stamps a span's start from Date.now()
    // (whole milliseconds) and its end from the sub-millisecond clock, so allow 1 ms.
    const ms = (t: [number, number]) => t[0] * 1e3 + t[1] / 1e6;
    expect(ms(call.startTime)).toBeGreaterThan(ms(first!.endTime) - 1);
    expect(ms(second!.startTime)).toBeGreaterThan(ms(call.endTime) - 1);
  });

  it("records no message content unless captureContent is set", async () => {
    const { tracer, spans } = recordingTracer();
    const model = new ScriptedModel([
      { toolCalls: [{ id: "c1", name: "lookup_order", args: { orderId: "SECRET-9" } }] },
      { text: "SECRET-9 has shipped." },
    ]);
    await Runner.run(orderAgent(model), "Where is SECRET-9?", { tracer });
    expect(spans()).toHaveLength(4);
    for (const span of spans()) {
      for (const key of CONTENT_KEYS) expect(span.attributes[key]).toBeUndefined();
      expect(JSON.stringify(span.attributes)).not.toContain("SECRET-9");
      expect(JSON.stringify(span.events)).not.toContain("SECRET-9");
    }
  });

  it("records prompts, answers, tool arguments and results as the conventions' attributes with captureContent", async () => {
    const { tracer, one, named } = recordingTracer();
    const model = new ScriptedModel([
      { toolCalls: [{ id: "c1", name: "lookup_order", args: { orderId: "A1" } }] },
      { text: "A1 has shipped." },
    ]);
    await Runner.run(orderAgent(model), "Where is A1?", { tracer, captureContent: true });

    const call = one("execute_tool lookup_order");
    expect(JSON.parse(String(call.attributes["gen_ai.tool.call.arguments"]))).toEqual({ orderId: "A1" });
    expect(call.attributes["gen_ai.tool.call.result"]).toBe("A1: shipped");

    const [first, second] = [...named("chat scripted")].sort(
      (a, b) => Number(a.attributes["quiver.turn"]) - Number(b.attributes["quiver.turn"]),
    );
    expect(JSON.parse(String(first!.attributes["gen_ai.system_instructions"]))).toEqual([
      { type: "text", content: "Help with orders." },
    ]);
    expect(JSON.parse(String(first!.attributes["gen_ai.input.messages"]))).toEqual([
      { role: "user", parts: [{ type: "text", content: "Where is A1?" }] },
    ]);
    expect(JSON.parse(String(first!.attributes["gen_ai.tool.definitions"]))[0]).toMatchObject({
      type: "function",
      name: "lookup_order",
    });
    expect(JSON.parse(String(first!.attributes["gen_ai.output.messages"]))).toEqual([
      {
        role: "assistant",
        parts: [{ type: "tool_call", id: "c1", name: "lookup_order", arguments: { orderId: "A1" } }],
        finish_reason: "tool_calls",
      },
    ]);
    expect(JSON.parse(String(second!.attributes["gen_ai.input.messages"]))).toEqual([
      { role: "user", parts: [{ type: "text", content: "Where is A1?" }] },
      {
        role: "assistant",
        parts: [{ type: "tool_call", id: "c1", name: "lookup_order", arguments: { orderId: "A1" } }],
      },
      { role: "tool", parts: [{ type: "tool_call_response", id: "c1", result: "A1: shipped" }] },
    ]);
    expect(JSON.parse(String(second!.attributes["gen_ai.output.messages"]))).toEqual([
      { role: "assistant", parts: [{ type: "text", content: "A1 has shipped." }], finish_reason: "stop" },
    ]);
    const run = one("invoke_agent support");
    expect(JSON.parse(String(run.attributes["gen_ai.input.messages"]))).toEqual([
      { role: "user", parts: [{ type: "text", content: "Where is A1?" }] },
    ]);
    expect(JSON.parse(String(run.attributes["gen_ai.output.messages"]))[0].parts[0].content).toBe(
      "A1 has shipped.",
    );
  });

  it("marks a failed call's span ERROR with error.type, and records retries as span events", async () => {
    const { tracer, named } = recordingTracer();
    let attempts = 0;
    const flaky = tool({
      name: "flaky",
      description: "Fails once, then works.",
      parameters: z.object({}),
      retries: 1,
      retryBackoff: { initialMs: 1, jitter: false },
      execute: async () => {
        attempts++;
        if (attempts === 1) throw new Error("connection reset");
        return "ok";
      },
    });
    const broken = tool({
      name: "broken",
      description: "Always fails.",
      parameters: z.object({}),
      execute: async () => {
        throw new ToolError("the warehouse is closed", { hint: "try tomorrow" });
      },
    });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { id: "f1", name: "flaky", args: {} },
          { id: "b1", name: "broken", args: {} },
          { id: "u1", name: "no_such_tool", args: {} },
        ],
      },
      { text: "done" },
    ]);
    await Runner.run(new Agent({ name: "ops", model, tools: [flaky, broken] }), "go", { tracer });

    const [flakySpan] = named("execute_tool flaky");
    expect(flakySpan!.status.code).toBe(SpanStatusCode.UNSET);
    expect(flakySpan!.attributes["quiver.tool.attempts"]).toBe(2);
    const retry = flakySpan!.events.find((e) => e.name === "quiver.tool.retry");
    // A tool's error text is content: without captureContent only its kind is recorded.
    expect(retry?.attributes).toEqual({
      "quiver.tool.attempt": 2,
      "quiver.tool.retry_delay_ms": 1,
      "error.type": "tool_error",
    });

    const [brokenSpan] = named("execute_tool broken");
    expect(brokenSpan!.status).toEqual({ code: SpanStatusCode.ERROR, message: "tool_error" });
    expect(brokenSpan!.attributes["error.type"]).toBe("tool_error");

    const [unknown] = named("execute_tool no_such_tool");
    expect(unknown!.status.code).toBe(SpanStatusCode.ERROR);
    expect(unknown!.attributes["error.type"]).toBe("unknown_tool");
  });

  it("marks the chat and invoke_agent spans ERROR when the model fails", async () => {
    const { tracer, one } = recordingTracer();
    const model = new ScriptedModel([], { name: "anthropic:claude-test" });
    await expect(Runner.run(new Agent({ name: "writer", model }), "hi", { tracer })).rejects.toThrow(
      /no turn left/,
    );
    const chat = one("chat claude-test");
    expect(chat.status.code).toBe(SpanStatusCode.ERROR);
    expect(chat.attributes).toMatchObject({
      "error.type": "ProviderError",
      "gen_ai.provider.name": "anthropic",
    });
    expect(chat.events.some((e) => e.name === "exception")).toBe(true);
    const run = one("invoke_agent writer");
    expect(run.status.code).toBe(SpanStatusCode.ERROR);
    expect(run.attributes["error.type"]).toBe("ProviderError");
    expect(parentOf(chat)).toBe(idOf(run));
  });

  it("after a fallback, the failed model's span ends ERROR and the answering model has its own span with its tokens", async () => {
    const { tracer, named } = recordingTracer();
    const down: Model = {
      name: "openai:gpt-test",
      // biome-ignore lint/correctness/useYield: fails before it streams anything
      async *stream() {
        throw new ProviderError("503 Service Unavailable", {
          provider: "openai",
          status: 503,
          retryable: true,
        });
      },
    };
    const answering = new ScriptedModel(
      [{ text: "Shipped.", usage: { inputTokens: 1000, outputTokens: 200 } }],
      {
        name: "anthropic:claude-test",
      },
    );
    const agent = new Agent({ name: "support", model: fallback(down, answering) });
    expect((await Runner.run(agent, "Where is A1?", { tracer })).output).toBe("Shipped.");

    const [failed] = named("chat gpt-test");
    expect(failed!.status.code).toBe(SpanStatusCode.ERROR);
    expect(failed!.attributes).toMatchObject({
      "error.type": "model_fallback",
      "gen_ai.provider.name": "openai",
    });
    expect(failed!.attributes["gen_ai.usage.input_tokens"]).toBeUndefined();
    expect(failed!.events.map((e) => e.name)).toContain("quiver.model.fallback");
    const [answered] = named("chat claude-test");
    expect(answered!.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(answered!.attributes).toMatchObject({
      "gen_ai.provider.name": "anthropic",
      "gen_ai.request.model": "claude-test",
      "gen_ai.response.model": "claude-test",
      "gen_ai.usage.input_tokens": 1000,
      "gen_ai.usage.output_tokens": 200,
    });
    expect(parentOf(answered!)).toBe(parentOf(failed!));
  });

  it("records approvals as span events saying who decided", async () => {
    const { tracer, named } = recordingTracer();
    const refund = tool({
      name: "refund",
      description: "Refund an order.",
      parameters: z.object({ orderId: z.string() }),
      needsApproval: true,
      execute: async ({ orderId }) => `refunded ${orderId}`,
    });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { id: "r1", name: "refund", args: { orderId: "A1" } },
          { id: "r2", name: "refund", args: { orderId: "B2" } },
        ],
      },
      { text: "One refunded." },
    ]);
    const agent = new Agent({ name: "support", model, tools: [refund] });
    // A reviewer's reason is content: recorded with captureContent only.
    const handle = Runner.stream(agent, "refund both", { tracer, captureContent: true });
    for await (const ev of handle) {
      if (ev.type !== "approval_required") continue;
      if (ev.call.id === "r1") ev.approve();
      else ev.reject("not eligible");
    }
    await handle.result();

    const spans = named("execute_tool refund");
    const byId = (id: string) => spans.find((s) => s.attributes["gen_ai.tool.call.id"] === id)!;
    const approved = byId("r1");
    expect(approved.events.map((e) => e.name)).toEqual([
      "quiver.approval.required",
      "quiver.approval.resolved",
    ]);
    expect(approved.events[1]!.attributes).toMatchObject({
      "quiver.approval.decision": "approved",
      "quiver.approval.decided_by": "stream",
    });
    expect(approved.attributes["quiver.approval.decided_by"]).toBe("stream");
    expect(approved.status.code).toBe(SpanStatusCode.UNSET);
    const denied = byId("r2");
    expect(denied.events[1]!.attributes).toMatchObject({
      "quiver.approval.decision": "denied",
      "quiver.approval.decided_by": "stream",
      "quiver.approval.reason": "not eligible",
    });
    expect(denied.status.code).toBe(SpanStatusCode.ERROR);
    expect(denied.attributes["error.type"]).toBe("denied");
  });

  it("nests a child run (agent as tool) under the parent's execute_tool span", async () => {
    const { tracer, one, spans } = recordingTracer();
    const researcher = new Agent({
      name: "researcher",
      model: new ScriptedModel([
        { toolCalls: [{ id: "k1", name: "lookup_order", args: { orderId: "Z9" } }] },
        { text: "Z9 shipped." },
      ]),
      tools: [lookup],
    });
    const lead = new Agent({
      name: "lead",
      model: new ScriptedModel([
        { toolCalls: [{ id: "p1", name: "researcher", args: { input: "check Z9" } }] },
        { text: "Z9 shipped, says the researcher." },
      ]),
      tools: [researcher.asTool()],
    });
    const result = await Runner.run(lead, "status of Z9?", { tracer, sessionId: "s" });
    expect(result.output).toBe("Z9 shipped, says the researcher.");

    const parentRun = one("invoke_agent lead");
    const delegation = one("execute_tool researcher");
    const childRun = one("invoke_agent researcher");
    const childCall = one("execute_tool lookup_order");
    expect(parentOf(delegation)).toBe(idOf(parentRun));
    expect(parentOf(childRun)).toBe(idOf(delegation));
    expect(parentOf(childCall)).toBe(idOf(childRun));
    const childChats = spans().filter((s) => s.name.startsWith("chat") && parentOf(s) === idOf(childRun));
    expect(childChats).toHaveLength(2);
    expect(new Set(spans().map(traceOf)).size).toBe(1);
    expect(childRun.attributes).toMatchObject({
      "gen_ai.agent.name": "researcher",
      "gen_ai.conversation.id": "s",
      "quiver.parent_run.id": result.runId,
      "quiver.parent_call.id": "p1",
    });
  });

  it("records the run's traceparent on run_started, and nothing when untraced", async () => {
    const { tracer, one } = recordingTracer();
    const events: RunEvent[] = [];
    const handle = Runner.stream(orderAgent(new ScriptedModel([{ text: "hi" }])), "hello", { tracer });
    for await (const ev of handle) events.push(ev);
    const started = events.find((e) => e.type === "run_started")!;
    const run = one("invoke_agent support");
    expect(started).toMatchObject({
      traceparent: `00-${run.spanContext().traceId}-${run.spanContext().spanId}-01`,
    });

    const plain = Runner.stream(orderAgent(new ScriptedModel([{ text: "hi" }])), "hello");
    for await (const ev of plain) if (ev.type === "run_started") expect("traceparent" in ev).toBe(false);
  });
});

describe("a tracer that fails", () => {
  it("never fails the run: tracing stops for that run with one process warning", async () => {
    const { tracer } = recordingTracer();
    let started = 0;
    const flaky = {
      startSpan(...args: Parameters<typeof tracer.startSpan>) {
        // The second span (the first chat) comes from a broken SDK.
        if (++started === 2) throw new Error("exporter exploded");
        return tracer.startSpan(...args);
      },
    };
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const model = new ScriptedModel([
        { toolCalls: [{ id: "c1", name: "lookup_order", args: { orderId: "A1" } }] },
        { text: "A1 has shipped." },
      ]);
      const result = await Runner.run(orderAgent(model), "Where is A1?", { tracer: flaky });
      expect(result.output).toBe("A1 has shipped.");
      expect(result.toolCalls[0]).toMatchObject({ ok: true, output: "A1: shipped" });
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off("warning", onWarning);
    }
    const ours = warnings.filter((w) => w.message.includes("tracing stopped"));
    expect(ours).toHaveLength(1);
    expect(ours[0]!.message).toContain("exporter exploded");
    expect(started).toBe(2);
  });

  it("a span whose methods throw does not break tool calls either", async () => {
    const { tracer } = recordingTracer();
    const hostile = {
      startSpan(...args: Parameters<typeof tracer.startSpan>) {
        const span = tracer.startSpan(...args);
        return Object.assign(Object.create(span), {
          spanContext: () => span.spanContext(),
          setAttribute: () => {
            throw new Error("no attributes today");
          },
        });
      },
    };
    const onWarning = () => {};
    process.on("warning", onWarning);
    try {
      const model = new ScriptedModel([
        { toolCalls: [{ id: "c1", name: "lookup_order", args: { orderId: "A1" } }] },
        { text: "done" },
      ]);
      const result = await Runner.run(orderAgent(model), "go", { tracer: hostile, captureContent: true });
      expect(result.toolCalls[0]).toMatchObject({ ok: true, output: "A1: shipped" });
      expect(result.output).toBe("done");
    } finally {
      process.off("warning", onWarning);
    }
  });
});
