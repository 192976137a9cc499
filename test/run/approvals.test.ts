import {
  Agent,
  type AgentConfig,
  type RunEvent,
  Runner,
  ScriptedModel,
  type Tool,
  tool,
} from "quiver-agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

function refundTool(log: string[]) {
  return tool({
    name: "refund",
    description: "Issue a refund.",
    parameters: z.object({ orderId: z.string(), amountCents: z.number().int() }),
    needsApproval: (args) => args.amountCents > 5_000,
    execute: async ({ orderId, amountCents }) => {
      log.push(`${orderId}:${amountCents}`);
      return "refunded";
    },
  });
}

function agentWith(
  tools: Tool[],
  calls: Array<{ name: string; args: unknown; id?: string }>,
  extra: Partial<AgentConfig> = {},
) {
  const model = new ScriptedModel([{ toolCalls: calls }, { text: "done" }]);
  return { model, agent: new Agent({ name: "support", model, tools, ...extra }) };
}

async function collect(handle: AsyncIterable<RunEvent>, onEvent?: (ev: RunEvent) => void) {
  const events: RunEvent[] = [];
  for await (const ev of handle) {
    events.push(ev);
    onEvent?.(ev);
  }
  return events;
}

const resolvedBy = (events: RunEvent[]) =>
  events.filter((e) => e.type === "approval_resolved").map((e) => [e.call.id, e.decision, e.by]);

describe("approval from the stream consumer", () => {
  it("asks before the tool runs and runs it when the consumer approves", async () => {
    const log: string[] = [];
    const { agent } = agentWith(
      [refundTool(log)],
      [{ id: "r1", name: "refund", args: { orderId: "A1", amountCents: 6000 } }],
    );
    const handle = Runner.stream(agent, "refund");
    const events = await collect(handle, (ev) => {
      if (ev.type === "approval_required") {
        expect(log).toEqual([]);
        expect(ev.reason).toBe("refund needs approval");
        ev.approve();
      }
    });
    expect(log).toEqual(["A1:6000"]);
    expect(resolvedBy(events)).toEqual([["r1", "approved", "stream"]]);
    const approval = events.find((e) => e.type === "approval_required")!;
    expect(Object.keys(approval)).not.toContain("approve");
    expect(JSON.parse(JSON.stringify(approval)).approve).toBeUndefined();
  });

  it("denies with the consumer's reason, which the model reads", async () => {
    const log: string[] = [];
    const { agent, model } = agentWith(
      [refundTool(log)],
      [{ name: "refund", args: { orderId: "A1", amountCents: 9000 } }],
    );
    const handle = Runner.stream(agent, "refund");
    await collect(handle, (ev) => ev.type === "approval_required" && ev.reject("over the limit"));
    const result = await handle.result();
    expect(log).toEqual([]);
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "denied" } });
    expect(result.toolCalls[0]?.output).toMatch(/^Tool error: refund was not approved: over the limit/);
    expect(model.requests[1]?.messages.at(-1)).toMatchObject({ role: "tool", isError: true });
  });

  it("does not ask when the predicate says no, and never asks about invalid arguments", async () => {
    const log: string[] = [];
    const { agent } = agentWith(
      [refundTool(log)],
      [
        { name: "refund", args: { orderId: "A1", amountCents: "100" } },
        { name: "refund", args: { orderId: "A2", amountCents: "lots" } },
      ],
    );
    const events = await collect(Runner.stream(agent, "refund"));
    expect(events.some((e) => e.type === "approval_required")).toBe(false);
    expect(log).toEqual(["A1:100"]);
  });
});

describe("approval from the agent's handler", () => {
  it.each([
    [true, "approved"],
    ["allow", "approved"],
    [false, "denied"],
    ["deny", "denied"],
  ] as const)("answers %j → %s", async (answer, decision) => {
    const log: string[] = [];
    const seen: unknown[] = [];
    const { agent } = agentWith(
      [refundTool(log)],
      [{ id: "r1", name: "refund", args: { orderId: "A1", amountCents: 7000 } }],
      {
        approvalHandler: (call, ctx) => {
          seen.push([call.name, call.args, ctx.toolCallId]);
          return answer;
        },
      },
    );
    // The handler works without any stream consumer too: Runner.run.
    const handle = Runner.stream(agent, "refund");
    const events = await collect(handle);
    expect(resolvedBy(events)).toEqual([["r1", decision, "handler"]]);
    expect(log).toEqual(decision === "approved" ? ["A1:7000"] : []);
    expect(seen).toEqual([["refund", { orderId: "A1", amountCents: 7000 }, "r1"]]);
    const again = agent.clone({
      model: new ScriptedModel([
        { toolCalls: [{ name: "refund", args: { orderId: "A1", amountCents: 7000 } }] },
        { text: "done" },
      ]),
    });
    const run = await Runner.run(again, "refund again");
    expect(run.toolCalls[0]?.ok).toBe(decision === "approved");
  });

  it.each([
    [
      "throws",
      () => {
        throw new Error("policy service down");
      },
      /approval handler failed: policy service down/,
    ],
    ["answers nonsense", () => "maybe" as never, /answered "maybe"/],
  ])("fails closed when the handler %s", async (_label, handler, message) => {
    const log: string[] = [];
    const { agent } = agentWith(
      [refundTool(log)],
      [{ name: "refund", args: { orderId: "A1", amountCents: 7000 } }],
      {
        approvalHandler: handler,
      },
    );
    const events = await collect(Runner.stream(agent, "refund"));
    const resolved = events.find((e) => e.type === "approval_resolved");
    expect(resolved).toMatchObject({
      decision: "denied",
      by: "error",
      reason: expect.stringMatching(message),
    });
    expect(log).toEqual([]);
  });

  it("fails closed when the needsApproval predicate throws", async () => {
    let ran = false;
    const t = tool({
      name: "wire",
      description: "Wire money.",
      parameters: z.object({}),
      needsApproval: () => {
        throw new Error("limits unavailable");
      },
      execute: async () => {
        ran = true;
        return "sent";
      },
    });
    const { agent } = agentWith([t], [{ name: "wire", args: {} }], { approvalHandler: () => true });
    const handle = Runner.stream(agent, "go");
    const events = await collect(handle);
    const result = await handle.result();
    expect(ran).toBe(false);
    expect(result.toolCalls[0]?.output).toMatch(
      /not approved: the approval check of wire failed: limits unavailable/,
    );
    // Nobody was asked, and the log still says who denied it.
    expect(events.some((e) => e.type === "approval_required")).toBe(false);
    expect(events.find((e) => e.type === "approval_resolved")).toMatchObject({
      decision: "denied",
      by: "error",
      reason: expect.stringMatching(/limits unavailable/),
    });
  });
});

describe("the out-of-band channel", () => {
  it('waits on handle.approvals when the handler says "ask"', async () => {
    const log: string[] = [];
    const { agent } = agentWith(
      [refundTool(log)],
      [
        { id: "r1", name: "refund", args: { orderId: "A1", amountCents: 7000 } },
        { id: "r2", name: "refund", args: { orderId: "A2", amountCents: 8000 } },
      ],
      { approvalHandler: () => "ask" },
    );
    const handle = Runner.stream(agent, "refund");
    const reviewer = (async () => {
      while (handle.approvals.pending.length === 0) await wait(2);
      expect(handle.approvals.pending.map((c) => c.id)).toEqual(["r1"]);
      expect(handle.approvals.approve("nope")).toBe(false);
      expect(handle.approvals.approve("r1")).toBe(true);
      while (handle.approvals.pending[0]?.id !== "r2") await wait(2);
      handle.approvals.reject("r2", "second refund for this customer");
    })();
    const events = await collect(handle);
    await reviewer;
    expect(resolvedBy(events)).toEqual([
      ["r1", "approved", "channel"],
      ["r2", "denied", "channel"],
    ]);
    expect(log).toEqual(["A1:7000"]);
    expect((await handle.result()).toolCalls[1]?.output).toMatch(/second refund for this customer/);
  });

  it("release() decides everything pending on the channel", async () => {
    const log: string[] = [];
    const { agent } = agentWith(
      [refundTool(log)],
      [{ id: "r1", name: "refund", args: { orderId: "A1", amountCents: 7000 } }],
      { approvalHandler: () => "ask" },
    );
    const handle = Runner.stream(agent, "refund");
    const events = await collect(handle, (ev) => {
      if (ev.type === "approval_required")
        setTimeout(() => handle.approvals.release({ decision: false, reason: "reviewer left" }), 10);
    });
    expect(resolvedBy(events)).toEqual([["r1", "denied", "channel"]]);
    expect(events.find((e) => e.type === "approval_resolved")).toMatchObject({ reason: "reviewer left" });
  });

  it("denies at once under Runner.run() when nobody can be asked", async () => {
    const log: string[] = [];
    const { agent } = agentWith(
      [refundTool(log)],
      [{ name: "refund", args: { orderId: "A1", amountCents: 7000 } }],
    );
    const started = performance.now();
    const result = await Runner.run(agent, "refund");
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(result.toolCalls[0]?.output).toMatch(/not approved: nobody answered the approval of refund/);
    const asking = agent.clone({
      approvalHandler: () => "ask",
      model: new ScriptedModel([
        { toolCalls: [{ name: "refund", args: { orderId: "A1", amountCents: 7000 } }] },
        { text: "done" },
      ]),
    });
    expect((await Runner.run(asking, "refund")).toolCalls[0]?.error?.kind).toBe("denied");
  });

  it("denies when nobody decides within approvalTimeoutMs", async () => {
    const log: string[] = [];
    const { agent } = agentWith(
      [refundTool(log)],
      [{ name: "refund", args: { orderId: "A1", amountCents: 7000 } }],
      { approvalHandler: () => "ask", approvalTimeoutMs: 40 },
    );
    const events = await collect(Runner.stream(agent, "refund"));
    expect(events.find((e) => e.type === "approval_resolved")).toMatchObject({
      decision: "denied",
      by: "timeout",
    });
    expect(log).toEqual([]);
  });

  it("denies and stops when the run is cancelled while waiting", async () => {
    const log: string[] = [];
    const { agent } = agentWith(
      [refundTool(log)],
      [{ name: "refund", args: { orderId: "A1", amountCents: 7000 } }],
      { approvalHandler: () => "ask" },
    );
    const handle = Runner.stream(agent, "refund");
    const events = await collect(
      handle,
      (ev) => ev.type === "approval_required" && setTimeout(() => handle.cancel(), 10),
    );
    expect(events.find((e) => e.type === "approval_resolved")).toMatchObject({
      decision: "denied",
      by: "cancelled",
    });
    const result = await handle.result();
    expect(result.stopReason).toBe("cancelled");
    // Fails closed: the call's result is a denial, as for any other "no".
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "denied" } });
    expect(log).toEqual([]);
  });
});

describe("approvals and scheduling", () => {
  it("block only the preflight of later calls, never calls already running", async () => {
    const order: string[] = [];
    const slow = tool({
      name: "slow",
      description: "Slow read.",
      parameters: z.object({ label: z.string() }),
      execute: async ({ label }) => {
        order.push(`start ${label}`);
        await wait(30);
        order.push(`end ${label}`);
        return label;
      },
    });
    const gated = tool({
      name: "gated",
      description: "Needs approval.",
      parameters: z.object({}),
      needsApproval: true,
      execute: async () => {
        order.push("gated");
        return "ok";
      },
    });
    const { agent } = agentWith(
      [slow, gated],
      [
        { name: "slow", args: { label: "before" } },
        { name: "gated", args: {} },
        { name: "slow", args: { label: "after" } },
      ],
      { approvalHandler: () => "ask" },
    );
    const handle = Runner.stream(agent, "go");
    await collect(handle, (ev) => {
      if (ev.type === "approval_required") {
        order.push("asked");
        setTimeout(() => handle.approvals.approve(ev.call.id), 80);
      }
    });
    expect(order).toEqual(["start before", "asked", "end before", "gated", "start after", "end after"]);
  });
});
