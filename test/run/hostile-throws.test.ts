import { Agent, Runner, ScriptedModel, type Tool, tool } from "quiver-agents";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";

/** Values a buggy or hostile tool might throw; none may crash the process or hang a run. */
function hostileValues(): Array<[string, () => unknown]> {
  const throwingTrap = () => {
    throw new Error("trap");
  };
  return [
    [
      "an Error whose message getter throws",
      () => {
        const error = new Error("x");
        Object.defineProperty(error, "message", { get: throwingTrap });
        Object.defineProperty(error, "name", { get: throwingTrap });
        return error;
      },
    ],
    [
      "a Proxy whose every trap throws",
      () =>
        new Proxy(
          {},
          {
            get: throwingTrap,
            getPrototypeOf: throwingTrap,
            has: throwingTrap,
            ownKeys: throwingTrap,
            getOwnPropertyDescriptor: throwingTrap,
          },
        ),
    ],
    ["an object that cannot become a primitive", () => Object.create(null)],
    ["an object whose toJSON and toString throw", () => ({ toJSON: throwingTrap, toString: throwingTrap })],
    ["undefined", () => undefined],
    ["a bigint", () => 10n],
  ];
}

let unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeEach(() => {
  unhandled = [];
  process.on("unhandledRejection", onUnhandled);
});
afterEach(() => {
  process.off("unhandledRejection", onUnhandled);
});

const settle = () => new Promise((r) => setTimeout(r, 20));

function agentCalling(tools: Tool[], extra: Partial<ConstructorParameters<typeof Agent>[0]> = {}) {
  return new Agent({
    name: "victim",
    model: new ScriptedModel([{ toolCalls: [{ name: tools[0]!.name, args: {} }] }, { text: "recovered" }]),
    tools,
    ...extra,
  });
}

describe("whatever a tool throws, the run goes on", () => {
  for (const [label, make] of hostileValues()) {
    it(`execute throws ${label}: an error result, then the next turn`, async () => {
      const bad = tool({
        name: "bad",
        description: "Throws.",
        parameters: z.object({}),
        execute: async () => {
          throw make();
        },
      });
      const result = await Runner.run(agentCalling([bad]), "go");
      expect(result.output).toBe("recovered");
      expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "tool_error" } });
      expect(typeof result.toolCalls[0]?.output).toBe("string");
      await settle();
      expect(unhandled).toEqual([]);
    });

    it(`a sync execute throws ${label} in a streamed run`, async () => {
      const bad = tool({
        name: "bad_sync",
        description: "Throws.",
        parameters: z.object({}),
        execute: () => {
          throw make();
        },
      });
      const handle = Runner.stream(agentCalling([bad]), "go");
      const types: string[] = [];
      for await (const ev of handle) types.push(ev.type);
      expect(types.at(-1)).toBe("run_completed");
      expect((await handle.result()).toolCalls[0]?.error?.kind).toBe("tool_error");
      await settle();
      expect(unhandled).toEqual([]);
    });
  }

  it("a hostile value thrown by a policy, a predicate, a renderer or a handler is contained too", async () => {
    const [, proxy] = hostileValues()[1]!;
    const guarded = (name: string, options: object) =>
      tool({
        name,
        description: "A tool around hostile hooks.",
        parameters: z.object({}),
        execute: async () => "ran",
        ...options,
      });
    const tools = [
      guarded("via_policy", {
        policies: [
          async () => {
            throw proxy();
          },
        ],
      }),
      guarded("via_predicate", {
        needsApproval: () => {
          throw proxy();
        },
      }),
      guarded("via_renderer", {
        resultRenderer: () => {
          throw proxy();
        },
      }),
      guarded("via_handler", { needsApproval: true }),
    ];
    const agent = new Agent({
      name: "victim",
      model: new ScriptedModel([
        { toolCalls: tools.map((t) => ({ name: t.name, args: {} })) },
        { text: "recovered" },
      ]),
      tools,
      approvalHandler: () => {
        throw proxy();
      },
    });
    const result = await Runner.run(agent, "go");
    expect(result.output).toBe("recovered");
    expect(result.toolCalls.map((r) => r.ok)).toEqual([false, false, false, false]);
    await settle();
    expect(unhandled).toEqual([]);
  });

  it("a hostile value thrown by the model's stream fails the run cleanly (result() rejects, no crash)", async () => {
    const [, proxy] = hostileValues()[1]!;
    const agent = new Agent({
      name: "victim",
      model: {
        name: "hostile",
        stream() {
          throw proxy();
        },
      },
    });
    const handle = Runner.stream(agent, "go");
    const types: string[] = [];
    const iteration = (async () => {
      for await (const ev of handle) types.push(ev.type);
    })();
    await expect(handle.result()).rejects.toBeInstanceOf(Error);
    await expect(iteration).rejects.toBeInstanceOf(Error);
    expect(types.at(-1)).toBe("run_failed");
    await settle();
    expect(unhandled).toEqual([]);
  });
});

describe("whatever a tool returns, its events stay plain JSON", () => {
  it("details with a bigint, a Date, a Map and a cycle reach every event as plain JSON", async () => {
    const details: Record<string, unknown> = { big: 10n, when: new Date(0), m: new Map([["k", 1]]) };
    details.self = details;
    const odd = tool({
      name: "odd",
      description: "Returns odd details.",
      parameters: z.object({}),
      execute: async () => ({ content: [{ type: "text" as const, text: "ok" }], details }),
    });
    const agent = new Agent({
      name: "a",
      model: new ScriptedModel([{ toolCalls: [{ name: "odd", args: {} }] }, { text: "done" }]),
      tools: [odd],
    });
    const handle = Runner.stream(agent, "go");
    const events = [];
    for await (const event of handle) events.push(event);
    await handle.result();
    // `result` is the raw value, live only (never stored, dropped by serializeEvent): the rest is JSON.
    for (const event of events)
      expect(() => JSON.stringify({ ...event, result: undefined }), event.type).not.toThrow();
    const completed = events.find((e) => e.type === "tool_call_completed");
    expect(completed?.type === "tool_call_completed" && completed.details).toEqual({
      big: "10",
      when: "1970-01-01T00:00:00.000Z",
      m: { k: 1 },
      self: "[Circular]",
    });
  });
});
