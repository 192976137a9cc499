import { Agent, jsonSchema, Runner, ScriptedModel, tool } from "quiver-agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";

/** Runs one call of `t` with `args` through a real loop and returns its record and what execute saw. */
async function callOnce(t: ReturnType<typeof tool>, args: unknown) {
  const model = new ScriptedModel([{ toolCalls: [{ name: t.name, args }] }, { text: "done" }]);
  const result = await Runner.run(new Agent({ name: "a", model, tools: [t] }), "go");
  return result.toolCalls[0]!;
}

function recorder<T>(schema: T) {
  const seen: unknown[] = [];
  const t = tool({
    name: "probe",
    description: "Probe.",
    parameters: schema as any,
    execute: async (args: unknown) => {
      seen.push(args);
      return "ran";
    },
  });
  return { t, seen };
}

describe("coercion before validation", () => {
  it("turns numeric strings into numbers and 'true'/'false' into booleans", async () => {
    const { t, seen } = recorder(z.object({ n: z.number(), i: z.number().int(), flag: z.boolean() }));
    expect((await callOnce(t, { n: "2.5", i: "7", flag: "false" })).ok).toBe(true);
    expect(seen).toEqual([{ n: 2.5, i: 7, flag: false }]);
  });

  it("parses JSON strings where an object or array is expected, and wraps a single value in an array", async () => {
    const { t, seen } = recorder(
      z.object({
        filter: z.object({ tag: z.string() }),
        ids: z.array(z.number()),
        names: z.array(z.string()),
      }),
    );
    expect((await callOnce(t, { filter: '{"tag":"x"}', ids: "[1, 2]", names: "solo" })).ok).toBe(true);
    expect(seen).toEqual([{ filter: { tag: "x" }, ids: [1, 2], names: ["solo"] }]);
  });

  it("coerces inside nested objects and arrays, following $refs", async () => {
    const { t, seen } = recorder(
      jsonSchema({
        type: "object",
        $defs: { point: { type: "object", properties: { x: { type: "number" } } } },
        properties: { points: { type: "array", items: { $ref: "#/$defs/point" } } },
      }),
    );
    expect((await callOnce(t, { points: [{ x: "1" }, { x: 2 }] })).ok).toBe(true);
    expect(seen).toEqual([{ points: [{ x: 1 }, { x: 2 }] }]);
  });

  it("applies a JSON Schema's defaults, as Zod's apply, without changing the call's arguments", async () => {
    for (const strict of [false, true]) {
      const seen: unknown[] = [];
      const t = tool({
        name: "probe",
        description: "Probe.",
        strict,
        parameters: jsonSchema<{ a: string; d?: number }>({
          type: "object",
          properties: { a: { type: "string" }, d: { type: "number", default: 9 } },
          required: ["a"],
        }),
        execute: async (args) => {
          seen.push(args);
          return "ran";
        },
      });
      const record = await callOnce(t, strict ? { a: "x", d: null } : { a: "x" });
      expect(record.ok, record.output).toBe(true);
      expect(seen).toEqual([{ a: "x", d: 9 }]);
      expect(record.call.args).toEqual(strict ? { a: "x", d: null } : { a: "x" });
    }
  });

  it("coerces inside the branch of a union of objects the value belongs to", async () => {
    const shape = z.discriminatedUnion("kind", [
      z.object({ kind: z.literal("circle"), r: z.number() }),
      z.object({ kind: z.literal("rect"), w: z.number(), h: z.number() }),
    ]);
    const { t, seen } = recorder(
      z.object({
        shape,
        // No discriminator: the branch whose keys the value has.
        size: z.union([z.object({ bytes: z.number() }), z.object({ pages: z.number(), each: z.number() })]),
      }),
    );
    const record = await callOnce(t, {
      shape: { kind: "rect", w: "3", h: "4" },
      size: { pages: "2", each: "10" },
    });
    expect(record.ok, record.output).toBe(true);
    expect(seen).toEqual([{ shape: { kind: "rect", w: 3, h: 4 }, size: { pages: 2, each: 10 } }]);
  });

  it("strict mode turns null back into absent inside a union of objects too", async () => {
    const seen: unknown[] = [];
    const t = tool({
      name: "probe",
      description: "Probe.",
      strict: true,
      parameters: z.object({
        u: z.union([z.object({ a: z.string(), b: z.number().optional() }), z.object({ c: z.string() })]),
        du: z.discriminatedUnion("kind", [
          z.object({ kind: z.literal("circle"), r: z.number() }),
          z.object({ kind: z.literal("rect"), w: z.number(), h: z.number().default(1) }),
        ]),
      }),
      execute: async (args) => {
        seen.push(args);
        return "ran";
      },
    });
    // What OpenAI's strict mode must send: every optional key, as null.
    const record = await callOnce(t, { u: { a: "x", b: null }, du: { kind: "rect", w: 2, h: null } });
    expect(record.ok, record.output).toBe(true);
    expect(seen).toEqual([{ u: { a: "x" }, du: { kind: "rect", w: 2, h: 1 } }]);
  });

  it("takes null for an optional key as absent in a non-strict tool too (many clients send it)", async () => {
    const { t, seen } = recorder(
      z.object({ q: z.string(), limit: z.number().default(5), tag: z.string().optional() }),
    );
    const record = await callOnce(t, { q: "x", limit: null, tag: null });
    expect(record.ok, record.output).toBe(true);
    expect(seen).toEqual([{ q: "x", limit: 5 }]);
    // A key that takes null keeps it.
    const { t: t2, seen: seen2 } = recorder(z.object({ note: z.string().nullable().optional() }));
    await callOnce(t2, { note: null });
    expect(seen2).toEqual([{ note: null }]);
  });

  it("stays conservative: no null → 0, no '' → false, no strings where a string is also allowed", async () => {
    const { t, seen } = recorder(
      z.object({ n: z.number(), b: z.boolean(), either: z.union([z.string(), z.number()]) }),
    );
    const record = await callOnce(t, { n: null, b: "", either: "5" });
    expect(record.ok).toBe(false);
    expect(record.error?.kind).toBe("invalid_arguments");
    expect(seen).toEqual([]);
    const { t: t2, seen: seen2 } = recorder(z.object({ either: z.union([z.string(), z.number()]) }));
    await callOnce(t2, { either: "5" });
    expect(seen2).toEqual([{ either: "5" }]);
  });
});

describe("invalid arguments", () => {
  it("never reach execute, are never retried, and tell the model what to fix as path: message lines", async () => {
    let attempts = 0;
    const t = tool({
      name: "book",
      description: "Book a room.",
      retries: 3,
      retryBackoff: { initialMs: 1 },
      parameters: z.object({
        room: z.string(),
        guests: z.number().int().min(1),
        dates: z.object({ from: z.string() }),
      }),
      execute: async () => {
        attempts++;
        return "booked";
      },
    });
    const model = new ScriptedModel([
      { toolCalls: [{ name: "book", args: { guests: 0, dates: {} } }] },
      { text: "sorry" },
    ]);
    const handle = Runner.stream(new Agent({ name: "a", model, tools: [t] }), "book");
    const started = [];
    for await (const ev of handle) if (ev.type === "tool_call_started") started.push(ev);
    const record = (await handle.result()).toolCalls[0]!;
    expect(attempts).toBe(0);
    expect(started).toEqual([]);
    expect(record.error?.kind).toBe("invalid_arguments");
    expect(record.output).toBe(
      [
        "Tool error: invalid arguments for book:",
        "- room: Invalid input: expected string, received undefined",
        "- guests: Too small: expected number to be >=1",
        "- dates.from: Invalid input: expected string, received undefined",
        "Hint: Fix the listed arguments to match the tool's schema and call it again.",
      ].join("\n"),
    );
    // The model gets the error as the tool message and sees it on its next request.
    expect(model.requests[1]?.messages.at(-1)).toMatchObject({
      role: "tool",
      isError: true,
      content: record.output,
    });
  });

  it("lists at most 10 problems", async () => {
    const shape = Object.fromEntries(Array.from({ length: 14 }, (_, i) => [`f${i}`, z.string()]));
    const { t } = recorder(z.object(shape));
    const record = await callOnce(t, {});
    expect(record.output.split("\n").filter((l) => l.startsWith("- "))).toHaveLength(10);
    expect(record.output).toContain("(4 more)");
  });

  it("rejects non-object arguments unless prepareArguments reshapes them", async () => {
    const { t } = recorder(z.object({ q: z.string() }));
    expect((await callOnce(t, "[1,2]")).output).toMatch(/arguments must be a JSON object, got an array/);
    expect((await callOnce(t, "42")).error?.kind).toBe("invalid_arguments");
  });

  it("stores malformed JSON as {} with the raw text, so the transcript replays to any provider", async () => {
    const { t, seen } = recorder(z.object({ q: z.string() }));
    const model = new ScriptedModel([
      { toolCalls: [{ name: "probe", args: '{"q": "unterminated' }] },
      { text: "ok" },
    ]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: [t] }), "go");
    expect(seen).toEqual([]);
    expect(result.toolCalls[0]).toMatchObject({
      ok: false,
      call: { args: {}, rawArgs: '{"q": "unterminated' },
      error: { kind: "malformed_json" },
    });
    const assistant = result.messages.find((m) => m.role === "assistant" && m.toolCalls);
    expect(assistant && "toolCalls" in assistant && assistant.toolCalls?.[0]?.args).toEqual({});
  });

  it("treats empty argument text as an empty object", async () => {
    const { t, seen } = recorder(z.object({}));
    expect((await callOnce(t, "")).ok).toBe(true);
    expect(seen).toEqual([{}]);
  });

  it("answers an unknown tool with the list of real ones", async () => {
    const { t } = recorder(z.object({}));
    const model = new ScriptedModel([{ toolCalls: [{ name: "teleport", args: {} }] }, { text: "ok" }]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: [t] }), "go");
    expect(result.toolCalls[0]).toMatchObject({
      ok: false,
      output: 'Tool error: there is no tool named "teleport"\nHint: Available tools: probe.',
      error: { kind: "unknown_tool" },
    });
  });
});
