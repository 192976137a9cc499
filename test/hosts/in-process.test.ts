import {
  Agent,
  InProcessToolHost,
  InvalidToolArguments,
  type RunContext,
  type RunEvent,
  Runner,
  ScriptedModel,
  ToolError,
  tool,
  UserError,
} from "quiver-agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const makeEcho = (name: string, prefix = "") =>
  tool({
    name,
    description: `Echo (${name}).`,
    parameters: z.object({ text: z.string() }),
    execute: async ({ text }) => `${prefix}${text}`,
  });

const ctx = { signal: new AbortController().signal, toolCallId: "c1", update() {} } as unknown as RunContext;

async function take<T>(iterator: AsyncIterator<T>, count: number): Promise<T[]> {
  const out: T[] = [];
  while (out.length < count) {
    const next = await iterator.next();
    if (next.done) break;
    out.push(next.value);
  }
  return out;
}

describe("InProcessToolHost", () => {
  it("lists the registered Tool objects themselves, in registration order", async () => {
    const a = makeEcho("a");
    const b = makeEcho("b");
    const host = new InProcessToolHost([a, b]);
    expect(await host.listTools()).toEqual([a, b]);
    expect((await host.listTools())[0]).toBe(a);
    expect(new InProcessToolHost(a).tools).toEqual([a]);
  });

  it("rejects a duplicate name instead of overwriting, and anything that is not a tool", () => {
    const host = new InProcessToolHost([makeEcho("a")]);
    expect(() => host.register(makeEcho("a"))).toThrow(UserError);
    expect(() => host.register(makeEcho("a"))).toThrow(/unregister\("a"\) first/);
    expect(() => new InProcessToolHost([makeEcho("x"), makeEcho("x")])).toThrow(UserError);
    expect(() => host.register({ name: "fake" } as never)).toThrow(UserError);
    expect(host.tools.map((t) => t.name)).toEqual(["a"]);
  });

  it("unregisters by name and says whether anything was removed", async () => {
    const host = new InProcessToolHost([makeEcho("a"), makeEcho("b")]);
    expect(host.unregister("a")).toBe(true);
    expect(host.unregister("a")).toBe(false);
    expect(host.has("a")).toBe(false);
    expect((await host.listTools()).map((t) => t.name)).toEqual(["b"]);
    host.register(makeEcho("a"));
    expect(host.has("a")).toBe(true);
  });

  it("watch() emits added and removed to every watcher and ends when its signal aborts", async () => {
    const host = new InProcessToolHost();
    const first = new AbortController();
    const second = new AbortController();
    const w1 = host.watch(first.signal);
    const w2 = host.watch(second.signal);
    // Subscribed at watch(), before any next(): this change is not lost.
    host.register(makeEcho("a"));
    host.register(makeEcho("b"));
    host.unregister("a");
    host.unregister("missing"); // nothing removed, nothing emitted
    expect(await take(w1, 3)).toEqual([
      { kind: "added", name: "a" },
      { kind: "added", name: "b" },
      { kind: "removed", name: "a" },
    ]);
    expect(await take(w2, 3)).toEqual([
      { kind: "added", name: "a" },
      { kind: "added", name: "b" },
      { kind: "removed", name: "a" },
    ]);
    const pending = w1.next();
    first.abort();
    expect(await pending).toEqual({ done: true, value: undefined });
    host.register(makeEcho("c"));
    expect(await w2.next()).toEqual({ done: false, value: { kind: "added", name: "c" } });
    second.abort();
    expect(await w2.next()).toMatchObject({ done: true });
    expect(await host.watch(first.signal).next()).toMatchObject({ done: true });
  });

  it("a watcher that stops reading (break) is unsubscribed", async () => {
    const host = new InProcessToolHost();
    const seen: string[] = [];
    const reading = (async () => {
      for await (const change of host.watch()) {
        seen.push(change.name);
        break;
      }
    })();
    host.register(makeEcho("a"));
    await reading;
    host.register(makeEcho("b")); // no live watcher left to queue it
    expect(seen).toEqual(["a"]);
  });

  it("call() validates with the tool's own schema and runs it; unknown names are a ToolError", async () => {
    const host = new InProcessToolHost([makeEcho("echo", "said: ")]);
    expect(await host.call("echo", { text: "hi" }, ctx)).toBe("said: hi");
    await expect(host.call("nope", {}, ctx)).rejects.toThrow(ToolError);
    await expect(host.call("nope", {}, ctx)).rejects.toMatchObject({ hint: "Registered tools: echo." });
    await expect(host.call("echo", { text: 3 }, ctx)).rejects.toThrow(InvalidToolArguments);
  });
});

describe("InProcessToolHost in a run", () => {
  it("offers a tool registered between turns from the next model request on", async () => {
    const host = new InProcessToolHost();
    const unlock = tool({
      name: "unlock_admin",
      description: "Unlock the admin tools.",
      parameters: z.object({}),
      execute: async () => {
        host.register(makeEcho("admin_echo", "admin: "));
        return "unlocked";
      },
    });
    host.register(unlock);
    const model = new ScriptedModel([
      { toolCalls: [{ name: "unlock_admin", args: {} }] },
      { toolCalls: [{ name: "admin_echo", args: { text: "hello" } }] },
      { text: "done" },
    ]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: host }), "go");
    expect(model.requests.map((r) => r.tools.map((t) => t.name))).toEqual([
      ["unlock_admin"],
      ["unlock_admin", "admin_echo"],
      ["unlock_admin", "admin_echo"],
    ]);
    expect(result.toolCalls.map((c) => [c.ok, c.output])).toEqual([
      [true, "unlocked"],
      [true, "admin: hello"],
    ]);
  });

  it("stops offering an unregistered tool, and a call to it is unknown_tool", async () => {
    const host = new InProcessToolHost([makeEcho("keep"), makeEcho("drop")]);
    const model = new ScriptedModel([
      () => {
        host.unregister("drop"); // between the run's listing and its next request
        return { toolCalls: [{ name: "keep", args: { text: "x" } }] };
      },
      { toolCalls: [{ name: "drop", args: { text: "y" } }] },
      { text: "done" },
    ]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: [host] }), "go");
    expect(model.requests[0]?.tools.map((t) => t.name)).toEqual(["keep", "drop"]);
    expect(model.requests[1]?.tools.map((t) => t.name)).toEqual(["keep"]);
    expect(result.toolCalls[1]).toMatchObject({ ok: false, error: { kind: "unknown_tool" } });
  });

  it("runs listed tools with their own options (here: a timeout) and events", async () => {
    const slow = tool({
      name: "slow",
      description: "Never finishes in time.",
      parameters: z.object({}),
      timeoutMs: 50,
      execute: (_args, c) =>
        new Promise((_resolve, reject) =>
          c.signal.addEventListener("abort", () => reject(new Error("stopped"))),
        ),
    });
    const host = new InProcessToolHost([slow]);
    const model = new ScriptedModel([{ toolCalls: [{ name: "slow", args: {} }] }, { text: "done" }]);
    const handle = Runner.stream(new Agent({ name: "a", model, tools: host }), "go");
    const types: string[] = [];
    for await (const ev of handle as AsyncIterable<RunEvent>) types.push(ev.type);
    const result = await handle.result();
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "timeout" } });
    expect(types).toContain("tool_call_started");
  });

  it("a clash between a host's tool and an agent's tool is a UserError at run start", async () => {
    const host = new InProcessToolHost([makeEcho("echo")]);
    const model = new ScriptedModel([{ text: "never" }]);
    await expect(
      Runner.run(new Agent({ name: "a", model, tools: [makeEcho("echo"), host] }), "go"),
    ).rejects.toThrow(UserError);
  });
});

describe("a tool replaced under the same name", () => {
  it("is picked up from the next model request, not served from a stale listing", async () => {
    const host = new InProcessToolHost([makeEcho("greet", "v1:")]);
    const swap = tool({
      name: "upgrade",
      description: "Swap greet for v2.",
      parameters: z.object({}),
      parallel: false,
      execute: async () => {
        host.unregister("greet");
        host.register(makeEcho("greet", "v2:"));
        return "upgraded";
      },
    });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: "greet", args: { text: "a" } },
          { name: "upgrade", args: {} },
        ],
      },
      { toolCalls: [{ name: "greet", args: { text: "b" } }] },
      { text: "done" },
    ]);
    const result = await Runner.run(new Agent({ name: "a", model, tools: [host, swap] }), "go");
    expect(result.toolCalls.map((r) => r.output)).toEqual(["v1:a", "upgraded", "v2:b"]);
  });
});

describe("host watches", () => {
  it("end when the run ends, not only when it is cancelled", async () => {
    let live = 0;
    const inner = new InProcessToolHost([makeEcho("echo")]);
    const host = {
      listTools: (signal?: AbortSignal) => inner.listTools(signal),
      call: (name: string, args: unknown, ctx: Parameters<typeof inner.call>[2]) =>
        inner.call(name, args, ctx),
      async *watch(signal?: AbortSignal) {
        live++;
        try {
          yield* inner.watch(signal);
        } finally {
          live--;
        }
      },
    };
    for (let i = 0; i < 3; i++) {
      await Runner.run(
        new Agent({ name: "a", model: new ScriptedModel([{ text: "hi" }]), tools: host }),
        "go",
      );
    }
    await new Promise((r) => setTimeout(r, 20));
    expect(live).toBe(0);
  });
});
