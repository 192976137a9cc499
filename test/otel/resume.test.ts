import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SpanStatusCode } from "@opentelemetry/api";
import { Agent, type RunEvent, Runner, ScriptedModel, tool } from "quiver-agents";
import { SqliteStore } from "quiver-agents/store";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { idOf, recordingTracer, traceOf } from "./harness.js";

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function refundAgent(log: string[]) {
  const refund = tool({
    name: "refund",
    description: "Refund an order.",
    parameters: z.object({ orderId: z.string() }),
    needsApproval: true,
    execute: async ({ orderId }) => {
      log.push(orderId);
      return `refunded ${orderId}`;
    },
  });
  return new Agent({
    name: "support",
    model: new ScriptedModel([
      {
        toolCalls: [{ id: "r1", name: "refund", args: { orderId: "A1" } }],
        usage: { inputTokens: 11, outputTokens: 5 },
      },
      { text: "Refunded." },
    ]),
    tools: [refund],
  });
}

describe("park and resume", () => {
  it("stores the run's traceparent in run_started; the resumed run's span links to that trace", async () => {
    dir = mkdtempSync(join(tmpdir(), "quiver-otel-"));
    const store = new SqliteStore({ path: join(dir, "runs.db") });
    const log: string[] = [];
    const agent = refundAgent(log);

    // The first process: the run parks on the approval.
    const first = recordingTracer();
    const parked = await Runner.stream(agent, "refund A1", { store, tracer: first.tracer }).result();
    expect(parked.stopReason).toBe("awaiting_approval");
    const original = first.one("invoke_agent support");
    expect(original.attributes["quiver.stop_reason"]).toBe("awaiting_approval");
    // A parked run's span has its token totals so far, as a completed one has.
    expect(original.attributes).toMatchObject({
      "gen_ai.usage.input_tokens": 11,
      "gen_ai.usage.output_tokens": 5,
    });
    const waiting = first.one("execute_tool refund");
    expect(waiting.attributes["quiver.tool.parked"]).toBe(true);
    expect(waiting.events.map((e) => e.name)).toEqual(["quiver.approval.required"]);
    expect(waiting.status.code).toBe(SpanStatusCode.UNSET);

    const stored = await store.read(parked.runId);
    const started = stored.find((e) => e.type === "run_started") as Extract<
      RunEvent,
      { type: "run_started" }
    >;
    expect(started.traceparent).toBe(`00-${traceOf(original)}-${idOf(original)}-01`);

    // Later, maybe in another process: a decision, then the run is resumed with its own tracer.
    await Runner.decide(store, parked.runId, "r1", { approved: true });
    const second = recordingTracer();
    const handle = Runner.resume(agent, parked.runId, { store, tracer: second.tracer });
    const events: RunEvent[] = [];
    for await (const ev of handle) events.push(ev);
    const result = await handle.result();
    expect(result.stopReason).toBe("completed");
    expect(log).toEqual(["A1"]);

    const resumed = second.one("invoke_agent support");
    expect(traceOf(resumed)).not.toBe(traceOf(original));
    expect(resumed.links).toHaveLength(1);
    expect(resumed.links[0]!.context).toMatchObject({ traceId: traceOf(original), spanId: idOf(original) });
    expect(resumed.attributes).toMatchObject({
      "quiver.run.id": parked.runId,
      "quiver.stop_reason": "completed",
    });
    const ran = second.one("execute_tool refund");
    expect(ran.attributes).toMatchObject({
      "gen_ai.tool.call.id": "r1",
      "quiver.approval.decision": "approved",
      "quiver.approval.decided_by": "decide",
    });
    // The decision made while the run was parked is on the span of the call it let run.
    expect(ran.events.map((e) => e.name)).toContain("quiver.approval.resolved");
    expect(ran.status.code).toBe(SpanStatusCode.UNSET);
    expect(traceOf(ran)).toBe(traceOf(resumed));

    const resumedEvent = events.find((e) => e.type === "run_resumed") as Extract<
      RunEvent,
      { type: "run_resumed" }
    >;
    expect(resumedEvent.traceparent).toBe(`00-${traceOf(resumed)}-${idOf(resumed)}-01`);
    await store.close?.();
  });
});
