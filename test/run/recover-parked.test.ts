/**
 * What `Runner.recover` picks up in one store: unfinished runs nobody drives, parked runs
 * whose approvals have all been decided — and nothing else.
 */
import { Agent, type ModelRequest, Runner, ScriptedModel, tool, UserError } from "quiver-agents";
import { MemoryStore } from "quiver-agents/store";
import { describe, expect, it } from "vitest";
import { z } from "zod";

function refundAgent(name: string, paid: string[]) {
  const refund = tool({
    name: "refund",
    description: "Refund an order.",
    parameters: z.object({ orderId: z.string() }),
    needsApproval: true,
    execute: async ({ orderId }) => {
      paid.push(orderId);
      return `refunded ${orderId}`;
    },
  });
  const model = new ScriptedModel(
    Array.from(
      { length: 10 },
      () => (req: ModelRequest) =>
        req.messages.some((m) => m.role === "tool")
          ? { text: String(req.messages.at(-1)?.content) }
          : {
              toolCalls: [{ id: "r1", name: "refund", args: { orderId: String(req.messages[0]?.content) } }],
            },
    ),
  );
  return new Agent({ name, model, tools: [refund] });
}

describe("Runner.recover", () => {
  it("resumes parked runs whose approvals were all decided, and leaves the rest alone", async () => {
    const store = new MemoryStore();
    const paid: string[] = [];
    const support = refundAgent("support", paid);
    const decided = await Runner.run(support, "A1", { store });
    const undecided = await Runner.run(support, "B2", { store });
    const otherTeam = await Runner.run(refundAgent("billing", paid), "C3", { store });
    for (const parked of [decided, undecided, otherTeam]) expect(parked.stopReason).toBe("awaiting_approval");
    const finished = await Runner.run(
      new Agent({ name: "support", model: new ScriptedModel([{ text: "hi" }]) }),
      "hello",
      {
        store,
      },
    );
    await Runner.decide(store, decided.runId, "r1", true);
    await Runner.decide(store, otherTeam.runId, "r1", true);
    // Runs started in the same millisecond list in runId order: compare as sets.
    expect((await store.listRuns({ status: "parked" })).map((r) => r.runId).sort()).toEqual(
      [decided.runId, undecided.runId, otherTeam.runId].sort(),
    );

    const handles = await Runner.recover(store, new Map([["support", support]]));
    expect(handles.map((h) => h.runId)).toEqual([decided.runId]);
    expect(await handles[0]!.result()).toMatchObject({ stopReason: "completed", output: "refunded A1" });
    expect(paid).toEqual(["A1"]);
    expect(await store.getRun(undecided.runId)).toMatchObject({ status: "parked" });
    expect(await store.getRun(finished.runId)).toMatchObject({ status: "completed" });
    expect(await Runner.recover(store, { support })).toEqual([]);
  });

  it("refuses what cannot be meant", async () => {
    const store = new MemoryStore();
    await expect(Runner.recover(store, null as never)).rejects.toThrow(UserError);
    const agent = refundAgent("support", []);
    expect(() => Runner.resume(agent, "r", { store, waitForLeaseMs: -1 })).toThrow(/waitForLeaseMs/);
    await expect(Runner.resume(agent, "missing", { store }).result()).rejects.toThrow(
      /the store has no run missing/,
    );
  });
});
