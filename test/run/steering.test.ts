import { Agent, type RunEvent, Runner, ScriptedModel, tool, UserError } from "quiver-agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("steering", () => {
  it("inject: running calls finish, calls not started are skipped, the message goes in before the next request", async () => {
    const order: string[] = [];
    const step = tool({
      name: "step",
      description: "A step.",
      parameters: z.object({ n: z.number() }),
      parallel: false,
      execute: async ({ n }) => {
        order.push(`step ${n} start`);
        await wait(20);
        order.push(`step ${n} end`);
        return `step ${n}`;
      },
    });
    const model = new ScriptedModel([
      { toolCalls: [1, 2, 3].map((n) => ({ name: "step", args: { n } })) },
      { text: "Understood, stopping." },
    ]);
    const handle = Runner.stream(new Agent({ name: "a", model, tools: [step] }), "do three steps");
    for await (const ev of handle) {
      if (ev.type === "tool_call_started" && ev.call.args && (ev.call.args as { n: number }).n === 1) {
        handle.inject("Stop after the first step, please.");
      }
    }
    const result = await handle.result();
    expect(order).toEqual(["step 1 start", "step 1 end"]);
    expect(result.toolCalls.map((r) => (r.ok ? "ok" : r.error?.kind))).toEqual(["ok", "skipped", "skipped"]);
    expect(result.toolCalls[1]?.output).toMatch(/a new user message arrived/);
    const next = model.requests[1]!.messages;
    expect(next.slice(-4).map((m) => m.role)).toEqual(["tool", "tool", "tool", "user"]);
    expect(next.at(-1)).toEqual({ role: "user", content: "Stop after the first step, please." });
  });

  it("inject skips calls held back by a free slot, a barrier, an approval or their tool's permit", async () => {
    const variants = [
      { names: ["par", "par", "par"], maxConcurrentToolCalls: 1 },
      { names: ["par", "bar", "par"] },
      { names: ["par", "ask", "par"] },
      { names: ["one", "one", "one"] },
    ];
    for (const { names, maxConcurrentToolCalls } of variants) {
      const started: number[] = [];
      const make = (name: string, parallel: boolean, needsApproval = false, concurrency?: number) =>
        tool({
          name,
          description: "Do one step.",
          parameters: z.object({ n: z.number() }),
          parallel,
          needsApproval,
          ...(concurrency && { concurrency }),
          execute: async ({ n }) => {
            started.push(n);
            await wait(40);
            return `step ${n}`;
          },
        });
      const model = new ScriptedModel([
        { toolCalls: names.map((name, i) => ({ name, args: { n: i + 1 } })) },
        { text: "ok" },
      ]);
      const agent = new Agent({
        name: "worker",
        model,
        tools: [make("par", true), make("bar", false), make("ask", true, true), make("one", true, false, 1)],
        ...(maxConcurrentToolCalls && { maxConcurrentToolCalls }),
      });
      const handle = Runner.stream(agent, "Do the three steps.");
      for await (const ev of handle) {
        if (ev.type === "tool_call_started" && (ev.call.args as { n: number }).n === 1)
          handle.inject("Stop after the first step.");
        if (ev.type === "approval_required") {
          await wait(20); // a person takes a moment to click (the run waits for the loop body)
          ev.approve();
        }
      }
      const result = await handle.result();
      expect(started, names.join()).toEqual([1]);
      expect(result.toolCalls.map((r) => (r.ok ? "ok" : r.error?.kind))).toEqual([
        "ok",
        "skipped",
        "skipped",
      ]);
    }
  });

  it("inject while the model streams: the turn completes first, or is aborted with interrupt", async () => {
    for (const interrupt of [false, true]) {
      const model = new ScriptedModel([
        { text: "A long answer…", delayMs: 100 },
        { text: "OK, the short version." },
      ]);
      const handle = Runner.stream(new Agent({ name: "a", model }), "explain");
      const events: RunEvent[] = [];
      for await (const ev of handle) {
        events.push(ev);
        if (ev.type === "turn_started" && ev.turn === 1)
          setTimeout(() => handle.inject("Keep it short.", { interrupt }), 10);
      }
      const result = await handle.result();
      expect(result.output).toBe("OK, the short version.");
      const texts = result.messages.filter((m) => m.role === "assistant").map((m) => m.content);
      expect(texts).toEqual(
        interrupt ? ["OK, the short version."] : ["A long answer…", "OK, the short version."],
      );
      expect(events.some((e) => e.type === "warning" && e.code === "turn_interrupted")).toBe(interrupt);
      expect(model.requests[1]?.messages.at(-1)).toEqual({ role: "user", content: "Keep it short." });
    }
  });

  it("followUp: runs on after the run would have stopped", async () => {
    const model = new ScriptedModel([{ text: "Paris." }, { text: "About 2.1 million." }]);
    const handle = Runner.stream(new Agent({ name: "a", model }), "Capital of France?");
    handle.followUp("And its population?");
    const result = await handle.result();
    expect(result.output).toBe("About 2.1 million.");
    expect(result.messages.map((m) => m.content)).toEqual([
      "Capital of France?",
      "Paris.",
      "And its population?",
      "About 2.1 million.",
    ]);
    expect(() => handle.inject("too late")).toThrow(UserError);
  });

  it("a malformed message or an attachment over maxAttachmentBytes throws at inject/followUp and is never queued", async () => {
    const model = new ScriptedModel([{ text: "Done." }, { text: "Seen." }]);
    const handle = Runner.stream(new Agent({ name: "a", model }), "hi", { maxAttachmentBytes: 1_000 });
    const big = {
      type: "image" as const,
      data: Buffer.alloc(2_000).toString("base64"),
      mimeType: "image/png",
    };
    expect(() => handle.inject({ role: "user", content: [big] })).toThrow(/over maxAttachmentBytes/);
    expect(() => handle.followUp({ role: "user", content: [big] })).toThrow(/over maxAttachmentBytes/);
    expect(() => handle.inject({ role: "user" } as never)).toThrow(UserError);
    // A result without its call, or calls without results, would leave the transcript unpaired.
    expect(() =>
      handle.inject({ role: "tool", toolCallId: "x", name: "now", content: "10:00", isError: false }),
    ).toThrow(/a tool result cannot arrive on its own/);
    expect(() =>
      handle.followUp({ role: "assistant", content: "", toolCalls: [{ id: "y", name: "now", args: {} }] }),
    ).toThrow(/an assistant message with tool calls cannot arrive on its own/);
    const small = {
      type: "image" as const,
      data: Buffer.alloc(500).toString("base64"),
      mimeType: "image/png",
    };
    handle.followUp({ role: "user", content: [{ type: "text", text: "and this" }, small] });
    const result = await handle.result();
    // Only the valid follow-up reached the model; nothing the checks refused did.
    expect(model.requests).toHaveLength(2);
    expect(model.requests[1]?.messages.at(-1)).toEqual({
      role: "user",
      content: [{ type: "text", text: "and this" }, small],
    });
    expect(result.messages.filter((m) => m.role === "user")).toHaveLength(2);
  });
});
