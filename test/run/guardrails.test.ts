/**
 * Guardrails through the public API: an agent's input guardrails (beside the first model turn,
 * or before it), its output guardrails (before run_completed), a tool's guardrails (before it
 * runs and on its result), failing closed, each agent's own in handoffs and agents-as-tools,
 * outcomes logged so a resumed run never checks twice, and one span per check.
 */
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import {
  Agent,
  Budget,
  type GuardrailSubject,
  GuardrailTripped,
  guardrail,
  handoff,
  loadSession,
  type Model,
  type ModelStreamEvent,
  type RunEvent,
  Runner,
  ScriptedModel,
  tool,
  UserError,
} from "quiver-agents";
import { MemoryStore } from "quiver-agents/store";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const SSN = /\d{3}-\d{2}-\d{4}/;
const noSsn = (seen?: GuardrailSubject[], runInParallel?: boolean) =>
  guardrail({
    name: "no_ssn",
    ...(runInParallel !== undefined && { runInParallel }),
    check: async (input) => {
      seen?.push(input);
      return { tripped: SSN.test(input.text), reason: "looks like an SSN", info: { pattern: "ssn" } };
    },
  });

/** A model whose turn streams slowly and asks for a tool: it notes whether its signal was aborted. */
function slowToolModel(log: string[]): Model {
  return {
    name: "slow",
    async *stream(request): AsyncIterable<ModelStreamEvent> {
      log.push("model asked");
      for (let i = 0; i < 20; i++) {
        if (request.signal?.aborted) {
          log.push("model aborted");
          return;
        }
        yield { type: "text_delta", delta: "." };
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      yield { type: "tool_call", id: "c1", name: "charge", args: "{}" };
      yield { type: "finish", reason: "tool_calls" };
    },
  };
}

function chargeTool(ran: string[]) {
  return tool({
    name: "charge",
    description: "Charge the card.",
    parameters: z.object({}),
    execute: async () => {
      ran.push("charge");
      return "charged";
    },
  });
}

async function drain(
  handle: ReturnType<typeof Runner.stream>,
): Promise<{ events: RunEvent[]; error: unknown }> {
  const events: RunEvent[] = [];
  try {
    for await (const event of handle) events.push(event);
  } catch (error) {
    return { events, error };
  }
  return { events, error: undefined };
}

describe("an agent's input guardrails", () => {
  it("beside the first model turn: a trip cancels the turn, no tool of it runs, and the run fails with GuardrailTripped", async () => {
    const log: string[] = [];
    const ran: string[] = [];
    const seen: GuardrailSubject[] = [];
    const slowCheck = guardrail({
      name: "slow_ssn",
      check: async (input) => {
        await new Promise((resolve) => setTimeout(resolve, 50));
        seen.push(input);
        return { tripped: SSN.test(input.text), reason: "looks like an SSN" };
      },
    });
    const agent = new Agent({
      name: "support",
      model: slowToolModel(log),
      tools: [chargeTool(ran)],
      guardrails: { input: [slowCheck] },
    });
    const handle = Runner.stream(agent, "My SSN is 123-45-6789, refund me");
    const { events, error } = await drain(handle);
    expect(error).toBeInstanceOf(GuardrailTripped);
    expect(error).toMatchObject({ guardrail: "slow_ssn", stage: "input", reason: "looks like an SSN" });
    await expect(handle.result()).rejects.toBeInstanceOf(GuardrailTripped);
    expect(seen[0]).toMatchObject({ stage: "input", text: "My SSN is 123-45-6789, refund me" });
    // The model had started (in parallel) and was stopped; its call never ran.
    expect(log).toContain("model asked");
    expect(ran).toEqual([]);
    expect(events.some((e) => e.type === "tool_call_started")).toBe(false);
    const types = events.map((e) => e.type);
    expect(types.slice(-2)).toEqual(["guardrail_tripped", "run_failed"]);
    expect(events.at(-1)).toMatchObject({
      type: "run_failed",
      kind: "guardrail_tripped",
      name: "GuardrailTripped",
    });
    expect(events.find((e) => e.type === "guardrail_tripped")).toMatchObject({
      guardrail: "slow_ssn",
      stage: "input",
      reason: "looks like an SSN",
    });
  });

  it("a model turn that fails beside a tripping guardrail: the trip is why the run ends", async () => {
    const failing: Model = {
      name: "down",
      // biome-ignore lint/correctness/useYield: it fails before its first event
      async *stream(): AsyncIterable<ModelStreamEvent> {
        throw new Error("provider down");
      },
    };
    const slowTrip = guardrail({
      name: "slow_trip",
      check: async () => {
        await new Promise((resolve) => setTimeout(resolve, 30));
        return { tripped: true, reason: "no" };
      },
    });
    const agent = new Agent({ name: "a", model: failing, guardrails: { input: [slowTrip] } });
    await expect(Runner.run(agent, "hi")).rejects.toMatchObject({
      name: "GuardrailTripped",
      guardrail: "slow_trip",
    });
  });

  it("runInParallel: false runs first: a trip means the model is never asked", async () => {
    const model = new ScriptedModel([{ text: "hi" }]);
    const agent = new Agent({ name: "support", model, guardrails: { input: [noSsn(undefined, false)] } });
    await expect(Runner.run(agent, "SSN 123-45-6789")).rejects.toMatchObject({
      name: "GuardrailTripped",
      info: { pattern: "ssn" },
    });
    expect(model.requests).toHaveLength(0);
  });

  it("a passing check is logged; the run goes on; a continued session checks the latest user message", async () => {
    const seen: GuardrailSubject[] = [];
    const store = new MemoryStore();
    const agent = new Agent({
      name: "support",
      model: new ScriptedModel([{ text: "hello" }, { text: "again" }]),
      guardrails: { input: [noSsn(seen)] },
    });
    const handle = Runner.stream(agent, "Hi there", { store, sessionId: "s1" });
    const { events } = await drain(handle);
    expect((await handle.result()).output).toBe("hello");
    expect(events.find((e) => e.type === "guardrail_passed")).toMatchObject({
      guardrail: "no_ssn",
      stage: "input",
    });
    await expect(Runner.run(agent, "my SSN: 123-45-6789", { store, sessionId: "s1" })).rejects.toBeInstanceOf(
      GuardrailTripped,
    );
    expect(seen.map((s) => s.text)).toEqual(["Hi there", "my SSN: 123-45-6789"]);
  });

  it("a message injected while the run works is input too: checked before the turn that reads it", async () => {
    const wait = tool({
      name: "wait",
      description: "Wait a moment.",
      parameters: z.object({}),
      execute: () => new Promise((resolve) => setTimeout(() => resolve("waited"), 20)),
    });
    const agent = (runInParallel: boolean, seen: GuardrailSubject[]) =>
      new Agent({
        name: "support",
        model: new ScriptedModel([{ toolCalls: [{ name: "wait", args: {} }] }, { text: "done" }]),
        tools: [wait],
        guardrails: { input: [noSsn(seen, runInParallel)] },
      });
    for (const runInParallel of [true, false]) {
      const seen: GuardrailSubject[] = [];
      const handle = Runner.stream(agent(runInParallel, seen), "hello");
      try {
        for await (const event of handle)
          if (event.type === "tool_call_started") handle.inject("my SSN is 123-45-6789");
      } catch {}
      const error = await handle.result().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(GuardrailTripped);
      expect(error).toMatchObject({ stage: "input", guardrail: "no_ssn" });
      expect(seen.map((s) => s.text)).toEqual(["hello", "my SSN is 123-45-6789"]);
    }

    const seen: GuardrailSubject[] = [];
    const handle = Runner.stream(agent(true, seen), "hello");
    for await (const event of handle) if (event.type === "tool_call_started") handle.inject("and my order?");
    expect((await handle.result()).output).toBe("done");
    expect(seen.map((s) => s.text)).toEqual(["hello", "and my order?"]);
  });

  it("fails closed: a check that throws, answers nonsense or takes too long trips", async () => {
    const throwing = guardrail({
      name: "throws",
      check: () => {
        throw new Error("classifier down");
      },
    });
    const nonsense = guardrail({ name: "nonsense", check: async () => "fine" as never });
    const slow = guardrail({ name: "slow", timeoutMs: 30, check: () => new Promise(() => {}) });
    for (const [g, reason] of [
      [throwing, /classifier down/],
      [nonsense, /not \{ tripped: boolean \}/],
      [slow, /did not answer within 30 ms/],
    ] as const) {
      const agent = new Agent({
        name: "a",
        model: new ScriptedModel([{ text: "x" }]),
        guardrails: { input: [g] },
      });
      await expect(Runner.run(agent, "hi")).rejects.toMatchObject({ name: "GuardrailTripped", reason });
    }
  });
});

describe("an agent's output guardrails", () => {
  it("see the final output before run_completed; a trip withholds it and fails the run", async () => {
    const onTopic = guardrail({
      name: "on_topic",
      check: async (output) => ({ tripped: /bitcoin/i.test(output.text), reason: "off topic" }),
    });
    const agent = new Agent({
      name: "support",
      model: new ScriptedModel([{ text: "Buy bitcoin!" }]),
      guardrails: { output: [onTopic] },
    });
    const handle = Runner.stream(agent, "hello");
    const { events, error } = await drain(handle);
    expect(error).toMatchObject({ name: "GuardrailTripped", stage: "output", guardrail: "on_topic" });
    expect(events.some((e) => e.type === "run_completed")).toBe(false);

    const fine = new Agent({
      name: "support",
      model: new ScriptedModel([{ text: "Your order shipped." }]),
      guardrails: { output: [onTopic] },
    });
    expect((await Runner.run(fine, "hello")).output).toBe("Your order shipped.");
  });

  it("a run that stops without an answer (max_turns, budget, cancelled) withholds its unchecked last text", async () => {
    const checked: string[] = [];
    const noSecret = guardrail({
      name: "no_secret",
      check: async (output) => {
        checked.push(output.text);
        return { tripped: /hunter2/.test(output.text), reason: "a password" };
      },
    });
    const lookup = tool({
      name: "lookup",
      description: "Look something up.",
      parameters: z.object({}),
      execute: () => "found",
    });
    const leaky = () => [
      { text: "The password is hunter2", toolCalls: [{ name: "lookup", args: {} }] },
      { text: "The password is hunter2" },
    ];
    const agent = (guarded: boolean) =>
      new Agent({
        name: "support",
        model: new ScriptedModel(leaky()),
        tools: [lookup],
        ...(guarded && { guardrails: { output: [noSecret] } }),
      });

    const outOfTurns = await Runner.stream(agent(true), "hi", { maxTurns: 1 });
    const { events } = await drain(outOfTurns);
    const ended = await outOfTurns.result();
    expect(ended.stopReason).toBe("max_turns");
    expect(ended.output).toBe("");
    expect(events.find((e) => e.type === "run_completed")).toMatchObject({ output: "" });

    const outOfBudget = await Runner.run(agent(true), "hi", { budget: new Budget({ maxTurns: 1 }) });
    expect([outOfBudget.stopReason, outOfBudget.output]).toEqual(["budget", ""]);

    const handle = Runner.stream(agent(true), "hi");
    for await (const event of handle) if (event.type === "tool_call_started") handle.cancel();
    const cancelled = await handle.result();
    expect([cancelled.stopReason, cancelled.output]).toEqual(["cancelled", ""]);
    expect(checked).toEqual([]);

    // Without output guardrails the last text is the output, as before.
    const plain = await Runner.run(agent(false), "hi", { maxTurns: 1 });
    expect([plain.stopReason, plain.output]).toEqual(["max_turns", "The password is hunter2"]);
  });
});

describe("what a guardrail refused stays out of the session", () => {
  it("a refused input is not in the next run's conversation, and the session stays its owner's", async () => {
    const store = new MemoryStore();
    const model = new ScriptedModel([{ text: "hello" }, { text: "again" }]);
    const agent = new Agent({ name: "support", model, guardrails: { input: [noSsn(undefined, false)] } });
    await Runner.run(agent, "Hi there", { store, sessionId: "s1", userId: "ann" });
    await expect(
      Runner.run(agent, "my SSN: 123-45-6789", { store, sessionId: "s1", userId: "ann" }),
    ).rejects.toBeInstanceOf(GuardrailTripped);
    await Runner.run(agent, "hello again", { store, sessionId: "s1", userId: "ann" });
    const sent = JSON.stringify(model.requests.at(-1)!.messages);
    expect(sent).not.toContain("123-45-6789");
    expect(model.requests.at(-1)!.messages.map((m) => m.content)).toEqual([
      "Hi there",
      "hello",
      "hello again",
    ]);
    expect(JSON.stringify(await loadSession(store, "s1"))).not.toContain("123-45-6789");

    // A session whose only run was refused is still its creator's.
    await expect(
      Runner.run(agent, "111-22-3333", { store, sessionId: "s2", userId: "ann" }),
    ).rejects.toBeInstanceOf(GuardrailTripped);
    await expect(Runner.run(agent, "hi", { store, sessionId: "s2", userId: "bob" })).rejects.toThrow(
      /belongs to another user/,
    );
  });

  it("a withheld answer is not in the next run's conversation; the question and its calls are", async () => {
    const store = new MemoryStore();
    const lookup = tool({
      name: "lookup",
      description: "Look up a price.",
      parameters: z.object({}),
      execute: async () => "BTC 100k",
    });
    const model = new ScriptedModel([
      { toolCalls: [{ name: "lookup", args: {} }] },
      { text: "Buy bitcoin now!" },
      { text: "I can only help with orders." },
    ]);
    const agent = new Agent({
      name: "support",
      model,
      tools: [lookup],
      guardrails: {
        output: [guardrail({ name: "on_topic", check: async (o) => ({ tripped: /bitcoin/i.test(o.text) }) })],
      },
    });
    await expect(Runner.run(agent, "what should I buy?", { store, sessionId: "s1" })).rejects.toMatchObject({
      stage: "output",
    });
    await Runner.run(agent, "and my order?", { store, sessionId: "s1" });
    const sent = model.requests.at(-1)!.messages;
    expect(JSON.stringify(sent)).not.toMatch(/buy bitcoin/i);
    expect(sent.map((m) => m.role)).toEqual(["user", "assistant", "tool", "user"]);
    expect(sent[2]!.content).toBe("BTC 100k");
  });
});

describe("a check's answer in events", () => {
  it("info that JSON cannot hold is plain JSON in the live event; nonsense is named as it was", async () => {
    const circular: Record<string, unknown> = { big: 10n };
    circular.self = circular;
    const odd = guardrail({
      name: "odd",
      check: async () => ({ tripped: true, reason: "no", info: circular }),
    });
    const handle = Runner.stream(
      new Agent({ name: "a", model: new ScriptedModel([{ text: "x" }]), guardrails: { input: [odd] } }),
      "hi",
    );
    const { events } = await drain(handle);
    const tripped = events.find((e) => e.type === "guardrail_tripped")!;
    expect(JSON.parse(JSON.stringify(tripped))).toMatchObject({ info: { big: "10", self: "[Circular]" } });

    const empty = guardrail({ name: "empty", check: async () => ({}) as never });
    await expect(
      Runner.run(
        new Agent({ name: "a", model: new ScriptedModel([{ text: "x" }]), guardrails: { input: [empty] } }),
        "hi",
      ),
    ).rejects.toMatchObject({ reason: 'guardrail "empty" answered {}, not { tripped: boolean }' });

    // A huge reason is kept to 10,000 characters (it goes into events, the log and the error).
    const wordy = guardrail({
      name: "wordy",
      check: async () => ({ tripped: true, reason: "x".repeat(50_000) }),
    });
    const error = await Runner.run(
      new Agent({ name: "a", model: new ScriptedModel([{ text: "x" }]), guardrails: { input: [wordy] } }),
      "hi",
    ).catch((e: GuardrailTripped) => e);
    expect((error as GuardrailTripped).reason).toHaveLength(10_000 + " […]".length);
  });
});

describe("a tool's guardrails", () => {
  it("input: a trip is an error the model reads (kind guardrail), the tool never runs, the run goes on", async () => {
    const ran: string[] = [];
    const limit = guardrail({
      name: "refund_limit",
      check: async (call) => ({
        tripped: ((call.call?.args as { amount?: number } | undefined)?.amount ?? 0) > 100,
        reason: "over 100",
      }),
    });
    const refund = tool({
      name: "refund",
      description: "Refund an amount.",
      parameters: z.object({ amount: z.number() }),
      guardrails: { input: [limit] },
      execute: async ({ amount }) => {
        ran.push(`refund ${amount}`);
        return "refunded";
      },
    });
    const model = new ScriptedModel([
      { toolCalls: [{ id: "r1", name: "refund", args: { amount: 500 } }] },
      { toolCalls: [{ id: "r2", name: "refund", args: { amount: 20 } }] },
      { text: "Refunded 20." },
    ]);
    const result = await Runner.run(new Agent({ name: "support", model, tools: [refund] }), "refund");
    expect(ran).toEqual(["refund 20"]);
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "guardrail" } });
    expect(result.toolCalls[0]!.output).toMatch(
      /refund was not run: guardrail "refund_limit" refused the call \(over 100\)/,
    );
    expect(result.output).toBe("Refunded 20.");
  });

  it("output: a trip replaces the result with a refusal; the raw output never reaches the model", async () => {
    const secrets = guardrail({
      name: "no_secrets",
      check: async (result) => ({ tripped: result.text.includes("sk-"), reason: "an API key" }),
    });
    const readEnv = tool({
      name: "read_env",
      description: "Read the environment.",
      parameters: z.object({}),
      guardrails: { output: [secrets] },
      execute: async () => "OPENAI_API_KEY=sk-live-123",
    });
    const model = new ScriptedModel([{ toolCalls: [{ name: "read_env", args: {} }] }, { text: "done" }]);
    const result = await Runner.run(new Agent({ name: "ops", model, tools: [readEnv] }), "env?");
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "guardrail" } });
    expect(JSON.stringify(model.requests[1]!.messages)).not.toContain("sk-live-123");
    expect(JSON.stringify(result.messages)).not.toContain("sk-live-123");
  });
});

describe("guardrails across agents", () => {
  it("a handoff target's own input guardrails apply when it takes over; an agent tool's output trip is the parent's call error", async () => {
    const seen: string[] = [];
    const billingCheck = guardrail({
      name: "billing_input",
      check: async (input) => {
        seen.push(`billing:${input.text}`);
        return { tripped: false };
      },
    });
    const billing = new Agent({
      name: "billing",
      model: new ScriptedModel([{ text: "Billing here." }]),
      guardrails: { input: [billingCheck] },
    });
    const triage = new Agent({
      name: "triage",
      model: new ScriptedModel([{ toolCalls: [{ name: "transfer_to_billing", args: {} }] }]),
      handoffs: [handoff(billing)],
    });
    const result = await Runner.run(triage, "My invoice is wrong");
    expect(result.output).toBe("Billing here.");
    expect(seen).toEqual(["billing:My invoice is wrong"]);

    const noLinks = guardrail({
      name: "no_links",
      check: async (output) => ({ tripped: output.text.includes("http"), reason: "a link" }),
    });
    const researcher = new Agent({
      name: "researcher",
      model: new ScriptedModel([{ text: "See http://evil.example" }]),
      guardrails: { output: [noLinks] },
    });
    const writer = new Agent({
      name: "writer",
      model: new ScriptedModel([
        { toolCalls: [{ name: "researcher", args: { input: "look it up" } }] },
        { text: "ok" },
      ]),
      tools: [researcher.asTool()],
    });
    const written = await Runner.run(writer, "write");
    expect(written.output).toBe("ok");
    expect(written.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "guardrail" } });
  });
});

describe("stored guardrail outcomes", () => {
  it("a resumed run takes the stored outcome instead of checking again", async () => {
    let checks = 0;
    const counted = guardrail({
      name: "counted",
      check: async () => {
        checks++;
        return { tripped: false };
      },
    });
    const deploy = tool({
      name: "deploy",
      description: "Deploy.",
      parameters: z.object({}),
      needsApproval: true,
      execute: async () => "deployed",
    });
    const store = new MemoryStore();
    const agent = new Agent({
      name: "ops",
      model: new ScriptedModel([{ toolCalls: [{ id: "d1", name: "deploy", args: {} }] }, { text: "done" }]),
      tools: [deploy],
      guardrails: { input: [counted] },
    });
    const parked = await Runner.run(agent, "deploy it", { store });
    expect(parked.stopReason).toBe("awaiting_approval");
    expect(checks).toBe(1);
    await Runner.decide(store, parked.runId, "d1", true);
    const resumed = await Runner.resume(agent, parked.runId, { store }).result();
    expect(resumed.output).toBe("done");
    expect(checks).toBe(1);
  });
});

describe("tracing", () => {
  it("one span per guardrail check, with its stage and outcome", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const tracer = provider.getTracer("test");
    const agent = new Agent({
      name: "support",
      model: new ScriptedModel([{ text: "fine" }]),
      guardrails: {
        input: [noSsn()],
        output: [guardrail({ name: "ok", check: () => ({ tripped: false }) })],
      },
    });
    await Runner.run(agent, "hello", { tracer });
    const spans = exporter.getFinishedSpans().filter((s) => s.name.startsWith("guardrail "));
    expect(
      spans.map((s) => [
        s.name,
        s.attributes["quiver.guardrail.stage"],
        s.attributes["quiver.guardrail.tripped"],
      ]),
    ).toEqual([
      ["guardrail no_ssn", "input", false],
      ["guardrail ok", "output", false],
    ]);
    const run = exporter.getFinishedSpans().find((s) => s.name === "invoke_agent support")!;
    expect(spans.every((s) => s.parentSpanContext?.spanId === run.spanContext().spanId)).toBe(true);
  });
});

describe("guardrails given in the wrong shape", () => {
  it("a list or a misspelt stage is a UserError at definition, not silently no guardrail", () => {
    const g = noSsn();
    const shapes: unknown[] = [[g], { inputs: [g] }, { input: g }];
    for (const guardrails of shapes) {
      expect(() =>
        tool({
          name: "t",
          description: "T.",
          parameters: z.object({}),
          execute: () => "x",
          guardrails: guardrails as never,
        }),
      ).toThrow(UserError);
      expect(() => new Agent({ name: "a", guardrails: guardrails as never })).toThrow(UserError);
    }
    expect(() => new Agent({ name: "a", guardrails: [g] as never })).toThrow(/say which stage each checks/);
    expect(() => new Agent({ name: "a", guardrails: { inputs: [g] } as never })).toThrow(
      /no stage named "inputs"/,
    );
  });
});
