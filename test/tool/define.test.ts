import { Agent, jsonSchema, Runner, ScriptedModel, Tool, tool, UserError } from "quiver-agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const noop = async () => "ok";

describe("tool names", () => {
  it("takes the name from a named function", () => {
    const t = tool({
      description: "Add.",
      parameters: z.object({}),
      execute: async function add() {
        return 1;
      },
    });
    expect(t.name).toBe("add");
  });

  it.each([
    ["an arrow function in an object literal (named 'execute')", { execute: async () => 1 }],
    [
      "an anonymous function",
      {
        execute: (
          () => async () =>
            1
        )(),
      },
    ],
    ["a bound function", { execute: async function real() {}.bind(null) }],
  ])("never uses %s as a name", (_label, part) => {
    const execute = part.execute as () => Promise<unknown>;
    expect(() => tool({ description: "x", parameters: z.object({}), execute })).toThrow(UserError);
  });

  it.each(["has space", "", "a".repeat(65), "dots.not.allowed", "ünïcode"])(
    "rejects %j at definition",
    (name) => {
      expect(() => tool({ name, description: "x", parameters: z.object({}), execute: noop })).toThrow(
        /invalid tool name/,
      );
    },
  );

  it("accepts letters, digits, underscores and dashes up to 64 characters", () => {
    expect(
      tool({ name: `a-b_C9${"x".repeat(58)}`, description: "x", parameters: z.object({}), execute: noop })
        .name,
    ).toHaveLength(64);
  });
});

describe("parameters", () => {
  it("derives one JSON Schema from Zod with descriptions and without the run context", () => {
    const t = tool({
      name: "lookup_order",
      description: "Look up an order by id.",
      parameters: z.object({ orderId: z.string().describe("The order id"), verbose: z.boolean().optional() }),
      execute: async ({ orderId }, ctx) => `${orderId} ${ctx.runId}`,
    });
    expect(t.toSpec()).toEqual({
      name: "lookup_order",
      description: "Look up an order by id.",
      parameters: {
        type: "object",
        properties: {
          orderId: { type: "string", description: "The order id" },
          verbose: { type: "boolean" },
        },
        required: ["orderId"],
      },
    });
  });

  it("accepts typed raw JSON Schema and bare JSON Schema, validated with ajv", async () => {
    const typed = tool({
      name: "weather",
      description: "Weather.",
      parameters: jsonSchema<{ city: string }>({
        type: "object",
        properties: { city: { type: "string", description: "City name" } },
        required: ["city"],
      }),
      execute: async ({ city }) => city.toUpperCase(),
    });
    expect(typed.parameters.properties).toEqual({ city: { type: "string", description: "City name" } });
    expect(await typed.parseArguments({ city: 3 })).toMatchObject({ ok: false, issues: [{ path: "city" }] });
    const bare = tool({
      name: "bare",
      description: "Bare.",
      parameters: { type: "object", properties: { n: { type: "integer", minimum: 1 } }, required: ["n"] },
      execute: noop,
    });
    expect(await bare.parseArguments({ n: 0 })).toEqual({
      ok: false,
      issues: [{ path: "n", message: "must be >= 1" }],
    });
    expect(await bare.parseArguments({})).toEqual({
      ok: false,
      issues: [{ path: "n", message: "is required" }],
    });
  });

  it("rejects a broken JSON Schema and a non-object schema when the tool is defined", () => {
    expect(() =>
      tool({
        name: "x",
        description: "",
        parameters: { type: "object", properties: { a: { type: "nope" } } },
        execute: noop,
      }),
    ).toThrow(/invalid JSON Schema/);
    expect(() => tool({ name: "x", description: "", parameters: { type: "string" }, execute: noop })).toThrow(
      /must describe an object/,
    );
  });

  it("rejects, at definition and naming the tool and the fix, parameters that do not describe an object", () => {
    const define =
      (parameters: unknown, extra: object = {}) =>
      () =>
        tool({ name: "lookup", description: "", parameters, execute: noop, ...extra } as never);
    expect(define(z.string())).toThrow(UserError);
    expect(define(z.string())).toThrow(/tool "lookup".*describes type "string".*z\.object/);
    expect(define(z.array(z.string()))).toThrow(/tool "lookup".*type "array"/);
    expect(define(z.union([z.object({ a: z.string() }), z.object({ b: z.number() })]))).toThrow(
      /tool "lookup".*a union/,
    );
    expect(define({ city: z.string() })).toThrow(
      /tool "lookup".*plain object of schema fields \("city".*z\.object/,
    );
    expect(define(undefined, { inputSchema: z.object({ city: z.string() }) })).toThrow(
      /tool "lookup": "inputSchema" is not an option; pass the schema as parameters/,
    );
    expect(define(undefined)).toThrow(/tool "lookup": parameters is missing/);
    expect(
      define({
        type: "object",
        properties: { address: { $ref: "#/$defs/Address" } },
        $defs: { Adress: { type: "object" } },
      }),
    ).toThrow(/tool "lookup".*\$ref "#\/\$defs\/Address" points at nothing/);
    // A $ref that resolves is fine.
    expect(
      define({
        type: "object",
        properties: { address: { $ref: "#/$defs/Address" } },
        $defs: { Address: { type: "object", properties: { city: { type: "string" } } } },
      }),
    ).not.toThrow();
  });

  it("names the way out for a date or a bigint, which JSON cannot carry", () => {
    for (const d of [z.date(), z.coerce.date()])
      expect(() => tool({ name: "when", parameters: z.object({ d }), execute: noop })).toThrow(
        /tool "when": its parameters cannot be expressed as JSON Schema: Date cannot be represented in JSON Schema: a model sends dates as text, so take a string \(z\.iso\.datetime\(\) or z\.iso\.date\(\)\)/,
      );
    expect(() => tool({ name: "big", parameters: z.object({ n: z.bigint() }), execute: noop })).toThrow(
      /take z\.number\(\) or a digit string/,
    );
  });

  it("tells a Zod 3 user to install zod 4.6, also from zod 3.25's early zod/v4", () => {
    // What a Zod 3.24 schema looks like to a library: Standard Schema v1 without JSON Schema.
    const zod3 = {
      _def: { typeName: "ZodObject" },
      safeParse: () => ({ success: true }),
      "~standard": { version: 1 as const, vendor: "zod", validate: (v: unknown) => ({ value: v }) },
    };
    expect(() => tool({ name: "x", description: "", parameters: zod3, execute: noop })).toThrow(
      /Zod 3 schema.*npm install zod@\^4\.6/,
    );
    const { "~standard": _, ...olderZod3 } = zod3;
    expect(() => tool({ name: "x", description: "", parameters: olderZod3 as never, execute: noop })).toThrow(
      /Zod 3 schema/,
    );
    // zod 3.25's "zod/v4": a Zod 4 core of 4.0, still without Standard JSON Schema.
    const early = { ...zod3, _zod: { version: { major: 4, minor: 0, patch: 0 } } };
    expect(() => tool({ name: "x", description: "", parameters: early, execute: noop })).toThrow(
      /an early Zod 4 core \(4\.0, as zod 3\.25's "zod\/v4" is\).*npm install zod@\^4\.6/,
    );
  });

  it("rejects a JSON Schema written as a map of properties, naming the wrapping", () => {
    const define = (parameters: unknown) => () =>
      tool({ name: "weather", description: "", parameters, execute: noop } as never);
    expect(define({ city: { type: "string", description: "City name" } })).toThrow(
      /tool "weather": parameters look like a map of properties \("city" is not a JSON Schema keyword\); wrap them: \{ type: "object", properties: \{ city: … \}, required: \["city"\] \}/,
    );
    expect(define({ orderId: "string", count: "integer" })).toThrow(
      /"orderId", "count" are not JSON Schema keywords/,
    );
    // Keywords and extensions are not properties.
    expect(
      define({ properties: { city: { type: "string" } }, "x-vendor": { type: "string" } }),
    ).not.toThrow();
  });

  it("rejects a Standard Schema that cannot emit JSON Schema", () => {
    const opaque = {
      "~standard": { version: 1 as const, vendor: "custom", validate: (v: unknown) => ({ value: v }) },
    };
    expect(() => tool({ name: "x", description: "", parameters: opaque, execute: noop })).toThrow(
      /cannot emit JSON Schema/,
    );
  });
});

describe("class form", () => {
  class Search extends Tool<{ query: string }> {
    constructor() {
      super({
        name: "search",
        label: "Search",
        description: "Search the docs.",
        parameters: z.object({ query: z.string() }),
      });
    }
    override prepareArguments(raw: unknown) {
      return typeof raw === "string" ? { query: raw } : raw;
    }
    override async execute({ query }: { query: string }) {
      return `results for ${query}`;
    }
  }

  it("runs execute with prepared, validated arguments", async () => {
    const model = new ScriptedModel([
      { toolCalls: [{ name: "search", args: JSON.stringify("zod") }] },
      { text: "done" },
    ]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: new Search() }), "go");
    expect(result.toolCalls[0]).toMatchObject({ ok: true, output: "results for zod" });
    expect(new Search().label).toBe("Search");
  });

  it("builds tools from functions, pi style", async () => {
    const calc = Tool.fromFunction({
      name: "calculate",
      label: "Calculator",
      description: "Add two numbers.",
      parameters: z.object({ a: z.number(), b: z.number() }),
      fn: ({ a, b }) => String(a + b),
    });
    expect(calc.label).toBe("Calculator");
    const model = new ScriptedModel([
      { toolCalls: [{ name: "calculate", args: { a: 2, b: 3 } }] },
      { text: "5" },
    ]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: [calc] }), "2+3");
    expect(result.toolCalls[0]?.output).toBe("5");
  });

  it("lets a subclass override toSpec", () => {
    class Custom extends Search {
      override toSpec() {
        return { ...super.toSpec(), description: "custom" };
      }
    }
    expect(new Custom().toSpec().description).toBe("custom");
  });
});

describe("strict mode", () => {
  it("sends the OpenAI strict shape and maps nulls back to absent before validation", async () => {
    const seen: unknown[] = [];
    const t = tool({
      name: "search_docs",
      description: "Search.",
      strict: true,
      parameters: z.object({
        query: z.string(),
        limit: z.number().int().default(5),
        filter: z.object({ tag: z.string().optional() }).optional(),
      }),
      execute: async (args) => {
        seen.push(args);
        return "ok";
      },
    });
    expect(t.toSpec().strict).toBe(true);
    expect(t.parameters).toEqual({
      type: "object",
      properties: {
        query: { type: "string" },
        limit: {
          type: ["integer", "null"],
          minimum: expect.any(Number),
          maximum: expect.any(Number),
          description: "(default: 5)",
        },
        filter: {
          type: ["object", "null"],
          properties: { tag: { type: ["string", "null"] } },
          required: ["tag"],
          additionalProperties: false,
        },
      },
      required: ["query", "limit", "filter"],
      additionalProperties: false,
    });
    const model = new ScriptedModel([
      { toolCalls: [{ name: "search_docs", args: { query: "q", limit: null, filter: { tag: null } } }] },
      { text: "done" },
    ]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: [t] }), "go");
    expect(result.toolCalls[0]?.ok).toBe(true);
    expect(seen).toEqual([{ query: "q", limit: 5, filter: {} }]);
  });

  it("sends a record schema non-strict with a warning instead of failing", async () => {
    const t = tool({
      name: "tags",
      description: "Set tags.",
      strict: true,
      parameters: z.object({ tags: z.record(z.string(), z.string()) }),
      execute: noop,
    });
    expect(t.toSpec().strict).toBe(false);
    expect(t.parameters.additionalProperties).toBeUndefined();
    const model = new ScriptedModel([{ text: "hi" }]);
    const handle = Runner.stream(new Agent({ name: "a", model, tools: [t] }), "go");
    const warnings = [];
    for await (const ev of handle) if (ev.type === "warning") warnings.push(ev.message);
    expect(warnings).toEqual([
      expect.stringMatching(/tool "tags" is sent non-strict: `propertyNames` at tags has no strict form/),
    ]);
  });
});
