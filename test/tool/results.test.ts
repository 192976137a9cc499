import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Agent, type ContentBlock, Runner, ScriptedModel, type Tool, tool } from "quiver-agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";

async function runTool(t: Tool, agentSettings: Record<string, unknown> = {}) {
  const model = new ScriptedModel([{ toolCalls: [{ name: t.name, args: {} }] }, { text: "done" }]);
  const handle = Runner.stream(new Agent({ name: "a", model, tools: [t], ...agentSettings }), "go");
  const completed = [];
  for await (const ev of handle) if (ev.type === "tool_call_completed") completed.push(ev);
  const result = await handle.result();
  return {
    record: result.toolCalls[0]!,
    event: completed[0]!,
    message: result.messages.find((m) => m.role === "tool")!,
    model,
  };
}

const returning = (value: unknown, options: Record<string, unknown> = {}) =>
  tool({
    name: "r",
    description: "Returns a value.",
    parameters: z.object({}),
    execute: async () => value,
    ...options,
  });

describe("rendering", () => {
  it("passes strings through and renders everything else as JSON, never throwing", async () => {
    expect((await runTool(returning("plain text"))).record.output).toBe("plain text");
    const cyclic: Record<string, unknown> = { name: "loop" };
    cyclic.self = cyclic;
    const value = {
      at: new Date("2026-01-02T03:04:05Z"),
      tags: new Set(["a", "b"]),
      byId: new Map([["x", 1]]),
      big: 12345678901234567890n,
      custom: { toJSON: () => "custom!" },
      cyclic,
      fn: () => 1,
    };
    const { record } = await runTool(returning(value));
    expect(JSON.parse(record.output)).toEqual({
      at: "2026-01-02T03:04:05.000Z",
      tags: ["a", "b"],
      byId: { x: 1 },
      big: "12345678901234567890",
      custom: "custom!",
      cyclic: { name: "loop", self: "[Circular]" },
    });
    expect(record.value).toBe(value);
  });

  it("names binary data with its size, whatever its kind (a Buffer is not spelt out byte by byte)", async () => {
    const { record } = await runTool(
      returning({
        file: Buffer.from("hello"),
        raw: new Uint8Array(3),
        buffer: new ArrayBuffer(8),
        view: new DataView(new ArrayBuffer(2)),
      }),
    );
    expect(JSON.parse(record.output)).toEqual({
      file: "[Buffer 5 bytes]",
      raw: "[Uint8Array 3 bytes]",
      buffer: "[ArrayBuffer 8 bytes]",
      view: "[DataView 2 bytes]",
    });
    expect((await runTool(returning(Buffer.alloc(1_000_000)))).record.output).toBe(
      '"[Buffer 1000000 bytes]"',
    );
  });

  it("names a promise inside a result as not awaited, instead of an empty object", async () => {
    const pending = new Promise(() => {});
    const { record } = await runTool(returning({ rows: pending, count: 2 }));
    expect(JSON.parse(record.output)).toEqual({ rows: "[a Promise: not awaited in execute]", count: 2 });
  });

  it("sends content blocks to the model and details only to observers", async () => {
    const content: ContentBlock[] = [
      { type: "text", text: "chart:" },
      { type: "image", data: Buffer.from("png-bytes").toString("base64"), mimeType: "image/png" },
    ];
    const { record, event, message } = await runTool(returning({ content, details: { rows: 3 } }));
    expect(message).toMatchObject({ role: "tool", content, details: { rows: 3 }, isError: false });
    expect(event.details).toEqual({ rows: 3 });
    expect(record.output).toBe("chart:\n[image: image/png]");
  });

  it("uses the tool's renderer, else the agent's, else the default; renderers see successes only", async () => {
    const seen: unknown[] = [];
    const agentRenderer = (value: unknown) => {
      seen.push(value);
      return `agent: ${JSON.stringify(value)}`;
    };
    expect((await runTool(returning([1, 2]), { toolResultRenderer: agentRenderer })).record.output).toBe(
      "agent: [1,2]",
    );
    const own = returning([1, 2], {
      resultRenderer: (rows: number[]) => rows.map((r) => `- ${r}`).join("\n"),
    });
    expect((await runTool(own, { toolResultRenderer: agentRenderer })).record.output).toBe("- 1\n- 2");
    const failing = tool({
      name: "r",
      description: "Fails.",
      parameters: z.object({}),
      execute: async () => {
        throw new Error("boom");
      },
    });
    const { record } = await runTool(failing, { toolResultRenderer: agentRenderer });
    expect(record.output).toBe("Tool error: boom");
    expect(seen).toEqual([[1, 2]]);
  });

  it("turns a throwing renderer into a renderer_error result", async () => {
    const t = returning("x", {
      resultRenderer: () => {
        throw new Error("bad template");
      },
    });
    const { record } = await runTool(t);
    expect(record).toMatchObject({ ok: false, error: { kind: "renderer_error" } });
    expect(record.output).toBe("Tool error: the result renderer of r failed: bad template");
  });
});

describe("truncation", () => {
  it("keeps head and tail around a marker with thousands separators and drops the raw value", async () => {
    const text = `HEAD${"x".repeat(301_992)}TAIL`;
    const { record, message } = await runTool(returning(text));
    expect(record.output.length).toBeLessThanOrEqual(200_000);
    expect(record.output.startsWith("HEAD")).toBe(true);
    expect(record.output.endsWith("TAIL")).toBe(true);
    expect(record.output).toMatch(/\[\.\.\. tool output truncated: kept 199,9\d\d of 302,000 chars \.\.\.\]/);
    expect(record.truncated).toEqual({ originalChars: 302_000 });
    expect("value" in record).toBe(false);
    expect(message.content).toBe(record.output);
    const head = record.output.indexOf("[...");
    expect(head / 200_000).toBeGreaterThan(0.78);
    expect(head / 200_000).toBeLessThan(0.82);
  });

  it("drops the raw value from the live event too (an unread stream would hold it)", async () => {
    const agent = new Agent({
      name: "a",
      model: new ScriptedModel([
        { toolCalls: [{ name: "r", args: {} }] },
        { toolCalls: [{ name: "small", args: {} }] },
        { text: "done" },
      ]),
      tools: [returning("z".repeat(5_000), { maxOutputChars: 1_000 }), returning("ok", { name: "small" })],
    });
    const completed: Array<{ truncated: boolean; hasResult: boolean }> = [];
    for await (const ev of Runner.stream(agent, "go"))
      if (ev.type === "tool_call_completed")
        completed.push({ truncated: !!ev.truncated, hasResult: "result" in ev });
    expect(completed).toEqual([
      { truncated: true, hasResult: false },
      { truncated: false, hasResult: true },
    ]);
  });

  it("uses the tool's maxOutputChars over the agent's maxToolOutputChars", async () => {
    const t = returning("y".repeat(1000), { maxOutputChars: 300 });
    expect((await runTool(t, { maxToolOutputChars: 10_000 })).record.output.length).toBeLessThanOrEqual(300);
    expect(
      (await runTool(returning("y".repeat(1000)), { maxToolOutputChars: 500 })).record.output.length,
    ).toBeLessThanOrEqual(500);
    expect((await runTool(returning("y".repeat(1000)))).record.truncated).toBeUndefined();
  });

  it("never splits a surrogate pair", async () => {
    const { record } = await runTool(returning("😀".repeat(5000), { maxOutputChars: 1001 }));
    expect(record.output).not.toMatch(
      /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/,
    );
  });

  it("a truncated result does not keep the tool's full output alive", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    let call = 0;
    // Each call returns a fresh 4 MB string: kept through a slice, 10 calls would pin 40 MB.
    const big = tool({
      name: "big",
      description: "Returns a big log.",
      parameters: z.object({}),
      execute: async () => `${call++}`.padEnd(4_000_000, "abcdefghij"),
    });
    const turns = Array.from({ length: 10 }, () => ({ toolCalls: [{ name: "big", args: {} }] }));
    gc();
    const before = process.memoryUsage().heapUsed;
    const result = await Runner.run(
      new Agent({ name: "a", model: new ScriptedModel([...turns, { text: "done" }]), tools: [big] }),
      "go",
    );
    gc();
    const held = process.memoryUsage().heapUsed - before;
    expect(result.toolCalls.every((c) => c.truncated?.originalChars === 4_000_000)).toBe(true);
    // 10 × 200,000 one-byte chars kept in the transcript (and the scripted model's record of it):
    // a few MB, far from the 40 MB of originals.
    expect(held).toBeLessThan(15_000_000);
  });

  it("caps the image bytes of one result", async () => {
    const big = Buffer.alloc(3_000).toString("base64");
    const content: ContentBlock[] = [
      { type: "image", data: big, mimeType: "image/png" },
      { type: "image", data: big, mimeType: "image/jpeg" },
    ];
    const { message } = await runTool(returning({ content }), { maxImageBytes: 4_000 });
    const blocks = message.content as ContentBlock[];
    expect(blocks[0]).toMatchObject({ type: "image", mimeType: "image/png" });
    expect(blocks[1]).toMatchObject({
      type: "text",
      text: expect.stringMatching(/image omitted: image\/jpeg, 3,000 bytes/),
    });
  });
});
