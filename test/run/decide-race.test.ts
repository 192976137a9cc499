/**
 * Two people deciding the same parked approval at once (two tabs, two reviewers): one decision
 * is stored, and the other is told the call was already decided — not that some process is
 * driving the run.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, Runner, ScriptedModel, tool, UserError } from "quiver-agents";
import { SqliteStore } from "quiver-agents/store";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";

const dir = mkdtempSync(join(tmpdir(), "quiver-decide-race-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("Runner.decide racing itself", () => {
  it("stores one decision; the other gets a UserError saying the call is no longer waiting", async () => {
    const store = new SqliteStore({ path: join(dir, "runs.db") });
    const refund = tool({
      name: "refund",
      description: "Refund an order.",
      parameters: z.object({ orderId: z.string() }),
      needsApproval: true,
      execute: async ({ orderId }) => `refunded ${orderId}`,
    });
    const agent = new Agent({
      name: "support",
      model: new ScriptedModel([
        { toolCalls: [{ id: "r1", name: "refund", args: { orderId: "A1" } }] },
        { text: "done" },
      ]),
      tools: [refund],
    });
    const parked = await Runner.run(agent, "refund A1", { store });
    expect(parked.stopReason).toBe("awaiting_approval");

    const outcomes = await Promise.allSettled([
      Runner.decide(store, parked.runId, "r1", { approved: true }),
      Runner.decide(store, parked.runId, "r1", { approved: false, reason: "second reviewer" }),
      Runner.decide(store, parked.runId, "r1", { approved: false, reason: "third reviewer" }),
    ]);
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
    for (const lost of outcomes.filter((o) => o.status === "rejected")) {
      expect(lost.reason).toBeInstanceOf(UserError);
      expect(String(lost.reason.message)).toMatch(/has no call r1 waiting for approval/);
    }
    const decisions = (await store.read(parked.runId)).filter((e) => e.type === "approval_resolved");
    expect(decisions).toHaveLength(1);
    const winner = outcomes.findIndex((o) => o.status === "fulfilled");
    expect(decisions[0]).toMatchObject({ decision: winner === 0 ? "approved" : "denied" });
    store.close();
  });
});
