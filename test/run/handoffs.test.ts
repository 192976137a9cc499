import { Agent, handoff, type RunEvent, Runner, replay, ScriptedModel, tool, UserError } from "quiver-agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function collect(handle: AsyncIterable<RunEvent>) {
  const events: RunEvent[] = [];
  for await (const ev of handle) events.push(ev);
  return events;
}

describe("handoffs", () => {
  it("transfer the conversation: target's instructions, tools and model, same transcript, events carry the agent", async () => {
    const refundModel = new ScriptedModel([
      { toolCalls: [{ name: "refund", args: { orderId: "A1" } }] },
      { text: "Refund issued." },
    ]);
    const refund = tool({
      name: "refund",
      description: "Refund.",
      parameters: z.object({ orderId: z.string() }),
      execute: async () => "ok",
    });
    const billing = new Agent({
      name: "Billing Team",
      model: refundModel,
      instructions: "You handle refunds.",
      tools: [refund],
    });
    const triageModel = new ScriptedModel([
      {
        text: "Passing you to billing.",
        toolCalls: [{ name: "transfer_to_billing_team", args: { reason: "refund" } }],
      },
    ]);
    const triage = new Agent({
      name: "triage",
      model: triageModel,
      instructions: "You route requests.",
      handoffs: [billing],
    });
    const handle = Runner.stream(triage, "I want my money back");
    const events = await collect(handle);
    const result = await handle.result();

    expect(triageModel.requests[0]?.tools.map((t) => t.name)).toEqual(["transfer_to_billing_team"]);
    expect(triageModel.requests[0]?.tools[0]?.parameters).toMatchObject({
      properties: { reason: { type: "string" } },
    });
    expect(refundModel.requests[0]?.system).toBe("You handle refunds.");
    expect(refundModel.requests[0]?.tools.map((t) => t.name)).toEqual(["refund"]);
    expect(refundModel.requests[0]?.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(result.toolCalls[0]?.output).toBe("Transferred to Billing Team");
    expect(result).toMatchObject({ output: "Refund issued.", stopReason: "completed" });
    expect(result.lastAgent).toBe(billing);
    expect(events.find((e) => e.type === "handoff")).toMatchObject({ from: "triage", to: "Billing Team" });
    const speakers = events.filter((e) => e.type === "turn_started").map((e) => e.agent);
    expect(speakers).toEqual(["triage", "Billing Team", "Billing Team"]);
    expect(replay(events).messages).toEqual(result.messages);
  });

  it("are barriers; the first one wins, later ones are refused and calls after it are skipped", async () => {
    const order: string[] = [];
    const slow = tool({
      name: "lookup",
      description: "Lookup.",
      parameters: z.object({}),
      execute: async () => {
        await wait(30);
        order.push("lookup done");
        return "found";
      },
    });
    const hooks: string[] = [];
    const a = new Agent({ name: "a", model: new ScriptedModel([{ text: "A here." }]) });
    const b = new Agent({ name: "b", model: new ScriptedModel([{ text: "B here." }]) });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: "lookup", args: {} },
          { name: "transfer_to_a", args: {} },
          { name: "transfer_to_b", args: {} },
          { name: "lookup", args: {} },
        ],
      },
    ]);
    const router = new Agent({
      name: "router",
      model,
      tools: [slow],
      handoffs: [
        handoff(a, {
          onHandoff: () => {
            order.push("handoff a");
            hooks.push("a");
          },
        }),
        handoff(b, { onHandoff: () => void hooks.push("b") }),
      ],
    });
    const result = await Runner.run(router, "go");
    expect(order).toEqual(["lookup done", "handoff a"]);
    expect(hooks).toEqual(["a"]);
    expect(result.toolCalls.map((r) => (r.ok ? r.output : r.error?.kind))).toEqual([
      "found",
      "Transferred to a",
      "skipped",
      "skipped",
    ]);
    expect(result.toolCalls[2]?.output).toMatch(/only the first handoff of a turn/);
    expect(result.toolCalls[3]?.output).toMatch(/transferred to a/);
    expect(result.output).toBe("A here.");
  });

  it("stay with the current agent when onHandoff throws", async () => {
    const target = new Agent({ name: "target", model: new ScriptedModel([{ text: "never" }]) });
    const model = new ScriptedModel([
      { toolCalls: [{ name: "transfer_to_target", args: {} }] },
      { text: "Still me." },
    ]);
    const agent = new Agent({
      name: "source",
      model,
      handoffs: [
        handoff(target, {
          onHandoff: () => {
            throw new Error("target is offline");
          },
        }),
      ],
    });
    const result = await Runner.run(agent, "go");
    expect(result).toMatchObject({ output: "Still me.", lastAgent: agent });
    expect(result.toolCalls[0]?.output).toBe("Tool error: target is offline");
  });

  it("apply inputFilter to what the target sees, and replay follows it", async () => {
    const targetModel = new ScriptedModel([{ text: "Fresh start." }]);
    const target = new Agent({ name: "fresh", model: targetModel });
    const model = new ScriptedModel([{ toolCalls: [{ name: "go_fresh", args: {} }] }]);
    const agent = new Agent({
      name: "source",
      model,
      handoffs: [
        handoff(target, {
          name: "go_fresh",
          inputFilter: (messages) => messages.filter((m) => m.role === "user"),
        }),
      ],
    });
    const handle = Runner.stream(agent, "only this");
    const events = await collect(handle);
    expect(targetModel.requests[0]?.messages).toEqual([{ role: "user", content: "only this" }]);
    expect(replay(events).messages).toEqual((await handle.result()).messages);
  });

  it("may cycle (A → B → A), bounded by maxTurns across agents", async () => {
    const a: Agent = new Agent({
      name: "a",
      model: new ScriptedModel(
        Array.from({ length: 5 }, () => ({ toolCalls: [{ name: "transfer_to_b", args: {} }] })),
      ),
    });
    const b: Agent = new Agent({
      name: "b",
      model: new ScriptedModel(
        Array.from({ length: 5 }, () => ({ toolCalls: [{ name: "transfer_to_a", args: {} }] })),
      ),
      handoffs: [a],
    });
    const cyclic = a.clone({ handoffs: [b] });
    const bToCyclic = b.clone({ handoffs: [cyclic] });
    const start = cyclic.clone({ handoffs: [bToCyclic] });
    const result = await Runner.run(start, "ping", { maxTurns: 4 });
    expect(result.stopReason).toBe("max_turns");
    expect(result.toolCalls).toHaveLength(4);
  });

  it("reject clashing handoff names", async () => {
    const one = new Agent({ name: "helper", model: new ScriptedModel([]) });
    const two = new Agent({ name: "Helper", model: new ScriptedModel([]) });
    const agent = new Agent({ name: "x", model: new ScriptedModel([{ text: "hi" }]), handoffs: [one, two] });
    await expect(Runner.run(agent, "go")).rejects.toThrow(UserError);
  });
});
