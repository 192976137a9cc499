import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  Agent,
  handoff,
  InProcessToolHost,
  type ModelRequest,
  PluginSetupError,
  plugin,
  type RunEvent,
  Runner,
  ScriptedModel,
  tool,
  UserError,
} from "quiver-agents";
import { MemoryStore } from "quiver-agents/store";
import { currentDate, FENCE_NOTE, webFetch } from "quiver-agents/tools";
import { workspace } from "quiver-agents/workspace";
import { describe, expect, it } from "vitest";
import { z } from "zod";

function echo(name: string, log?: string[]) {
  return tool({
    name,
    description: `The ${name} tool.`,
    parameters: z.object({}),
    execute: () => {
      log?.push(`tool:${name}`);
      return `${name} ran`;
    },
  });
}

async function collect(handle: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for await (const ev of handle) events.push(ev);
  return events;
}

/** A model that logs each request before it answers. */
function loggingModel(log: string[], turns: ConstructorParameters<typeof ScriptedModel>[0]) {
  return new ScriptedModel(
    turns.map((turn) => (req: ModelRequest) => {
      log.push("model");
      return typeof turn === "function" ? turn(req) : turn;
    }),
  );
}

describe("plugins", () => {
  it("bring their tools and their prompt text to the agent", async () => {
    const model = new ScriptedModel([{ toolCalls: [{ name: "search_notes", args: {} }] }, { text: "done" }]);
    const notes = plugin({
      name: "notes",
      tools: [echo("search_notes")],
      instructions: ["Search the notes before answering.", () => "Quote the note you use."],
    });
    const agent = new Agent({
      name: "a",
      model,
      instructions: "You are helpful.",
      tools: [echo("own")],
      plugins: [notes],
    });
    const result = await Runner.run(agent, "go");
    expect(result.toolCalls.map((r) => [r.call.name, r.output])).toEqual([
      ["search_notes", "search_notes ran"],
    ]);
    expect(model.requests[0]!.system).toBe(
      "You are helpful.\n\nSearch the notes before answering.\n\nQuote the note you use.",
    );
    expect(model.requests[0]!.tools.map((t) => t.name)).toEqual(["own", "search_notes"]);
  });

  it("set up once before the first model request and tear down after the run ends", async () => {
    const log: string[] = [];
    const seen: Array<string | undefined> = [];
    const db = plugin<{ tenant: string }>({
      name: "db",
      tools: [echo("query", log)],
      setup: (ctx) => {
        log.push("setup");
        seen.push(ctx.deps.tenant, ctx.agent);
      },
      teardown: async () => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        log.push("teardown");
      },
    });
    const model = loggingModel(log, [
      { toolCalls: [{ name: "query", args: {} }] },
      { toolCalls: [{ name: "query", args: {} }] },
      { text: "done" },
    ]);
    const agent = new Agent<{ tenant: string }>({ name: "a", model, plugins: [db] });
    const result = await Runner.run(agent, "go", { deps: { tenant: "acme" } });
    expect(result.stopReason).toBe("completed");
    expect(log).toEqual(["setup", "model", "tool:query", "model", "tool:query", "model", "teardown"]);
    expect(seen).toEqual(["acme", "a"]);
  });

  it("set up before the plugin's hosts are listed and its instructions evaluated", async () => {
    const log: string[] = [];
    let ready = false;
    const host = new InProcessToolHost([echo("lookup")]);
    const listTools = host.listTools.bind(host);
    host.listTools = (signal) => {
      log.push(ready ? "listed after setup" : "listed before setup");
      return listTools(signal);
    };
    const service = plugin({
      name: "service",
      tools: host,
      instructions: () => (ready ? "The service is up." : "The service is down."),
      setup: () => {
        ready = true;
      },
    });
    const model = new ScriptedModel([{ text: "ok" }]);
    await Runner.run(new Agent({ name: "a", model, plugins: [service] }), "go");
    expect(log[0]).toBe("listed after setup");
    expect(model.requests[0]!.system).toBe("The service is up.");
    expect(model.requests[0]!.tools.map((t) => t.name)).toEqual(["lookup"]);
  });

  it("a clash among tools given directly is reported before any setup runs", async () => {
    const log: string[] = [];
    const p = plugin({ name: "p", tools: [echo("same")], setup: () => void log.push("setup") });
    const agent = new Agent({ name: "a", model: new ScriptedModel([]), tools: [echo("same")], plugins: [p] });
    await expect(Runner.run(agent, "go")).rejects.toThrow(UserError);
    expect(log).toEqual([]);
  });

  it("a failing setup fails the run with a clear error, before any model request; plugins already set up are torn down", async () => {
    const log: string[] = [];
    const first = plugin({
      name: "first",
      setup: () => void log.push("setup first"),
      teardown: () => void log.push("teardown first"),
    });
    const broken = plugin({
      name: "broken",
      setup: () => {
        throw new Error("cannot reach the database");
      },
      teardown: () => void log.push("teardown broken"),
    });
    const model = loggingModel(log, [{ text: "never" }]);
    const error = await Runner.run(new Agent({ name: "a", model, plugins: [first, broken] }), "go").catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(PluginSetupError);
    expect((error as Error).message).toBe('plugin "broken" failed to set up: cannot reach the database');
    expect((error as PluginSetupError).plugin).toBe("broken");
    expect(log).toEqual(["setup first", "teardown first"]);
  });

  it("a setup that hangs past its timeout fails the run instead of holding it", async () => {
    const slow = plugin({ name: "slow", timeoutMs: 50, setup: () => new Promise<void>(() => {}) });
    const started = performance.now();
    const error = await Runner.run(
      new Agent({ name: "a", model: new ScriptedModel([{ text: "x" }]), plugins: [slow] }),
      "go",
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PluginSetupError);
    expect((error as Error).message).toMatch(/plugin "slow" did not finish its setup within 50 ms/);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it("tear down after a failed run and after a cancelled one", async () => {
    const log: string[] = [];
    const tracked = plugin({
      name: "tracked",
      setup: () => void log.push("setup"),
      teardown: () => void log.push("teardown"),
    });

    const failing = new ScriptedModel([]); // no turn left: the provider fails
    await expect(
      Runner.run(new Agent({ name: "a", model: failing, plugins: [tracked] }), "go"),
    ).rejects.toThrow(/no turn left/);
    expect(log).toEqual(["setup", "teardown"]);

    log.length = 0;
    const controller = new AbortController();
    const slowModel = new ScriptedModel([{ text: "late", delayMs: 5_000 }]);
    const handle = Runner.stream(new Agent({ name: "a", model: slowModel, plugins: [tracked] }), "go", {
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 20);
    const result = await handle.result();
    expect(result.stopReason).toBe("cancelled");
    expect(log).toEqual(["setup", "teardown"]);
  });

  it("a plugin arriving with a handoff is set up before the new agent's first request", async () => {
    const log: string[] = [];
    const billingTools = plugin({
      name: "billing-tools",
      tools: [echo("refund", log)],
      instructions: "Refunds need an order id.",
      setup: () => void log.push("setup billing"),
      teardown: () => void log.push("teardown billing"),
    });
    const billingModel = loggingModel(log, [
      { toolCalls: [{ name: "refund", args: {} }] },
      { text: "refunded" },
    ]);
    const billing = new Agent({ name: "billing", model: billingModel, plugins: [billingTools] });
    const triage = new Agent({
      name: "triage",
      model: loggingModel(log, [{ toolCalls: [{ name: "transfer_to_billing", args: {} }] }]),
      handoffs: [billing],
    });
    const result = await Runner.run(triage, "refund please");
    expect(result.output).toBe("refunded");
    expect(log).toEqual(["model", "setup billing", "model", "tool:refund", "model", "teardown billing"]);
    expect(billingModel.requests[0]!.system).toBe("Refunds need an order id.");
  });

  it("a parked run tears its plugins down; resuming sets them up again", async () => {
    const log: string[] = [];
    const tracked = plugin({
      name: "tracked",
      setup: () => void log.push("setup"),
      teardown: () => void log.push("teardown"),
    });
    const risky = tool({
      name: "risky",
      description: "Needs a yes.",
      parameters: z.object({}),
      needsApproval: true,
      execute: () => void log.push("tool:risky"),
    });
    const store = new MemoryStore();
    const model = new ScriptedModel([
      { toolCalls: [{ id: "r1", name: "risky", args: {} }] },
      { text: "done" },
    ]);
    const agent = new Agent({ name: "a", model, tools: [risky], plugins: [tracked] });
    const handle = Runner.stream(agent, "go", { store });
    await collect(handle);
    const parked = await handle.result();
    expect(parked.stopReason).toBe("awaiting_approval");
    expect(log).toEqual(["setup", "teardown"]);

    await Runner.decide(store, parked.runId, "r1", true);
    const resumed = await Runner.resume(agent, parked.runId, { store }).result();
    expect(resumed.stopReason).toBe("completed");
    expect(log).toEqual(["setup", "teardown", "setup", "tool:risky", "teardown"]);
  });

  it("a hanging teardown is abandoned after its timeout, with a warning", async () => {
    const stuck = plugin({ name: "stuck", timeoutMs: 50, teardown: () => new Promise<void>(() => {}) });
    const started = performance.now();
    const handle = Runner.stream(
      new Agent({ name: "a", model: new ScriptedModel([{ text: "hi" }]), plugins: [stuck] }),
      "go",
    );
    const events = await collect(handle);
    expect((await handle.result()).output).toBe("hi");
    expect(performance.now() - started).toBeLessThan(2_000);
    const warning = events.find((e) => e.type === "warning" && e.code === "plugin_teardown_failed");
    expect(warning && "message" in warning && warning.message).toMatch(
      /plugin "stuck" did not finish its teardown within 50 ms/,
    );
    // The warning comes before the run's end, which stays its last event (stored as streamed).
    expect(events.at(-1)?.type).toBe("run_completed");
  });

  it("a teardown's warning is stored before run_completed, on a resumed run too", async () => {
    const store = new MemoryStore();
    const broken = plugin({
      name: "broken",
      teardown: async () => {
        throw new Error("td broke");
      },
    });
    const risky = tool({
      name: "risky",
      description: "Needs approval.",
      parameters: z.object({}),
      needsApproval: true,
      execute: async () => "done",
    });
    const agent = new Agent({
      name: "a",
      model: new ScriptedModel([{ toolCalls: [{ id: "r1", name: "risky", args: {} }] }, { text: "hi" }]),
      tools: [risky],
      plugins: [broken],
    });
    const parked = await Runner.run(agent, "go", { store });
    expect(parked.stopReason).toBe("awaiting_approval");
    const atPark = (await store.read(parked.runId)).map((e) => (e.type === "warning" ? e.code : e.type));
    expect(atPark.slice(-2)).toEqual(["plugin_teardown_failed", "run_parked"]);
    await Runner.decide(store, parked.runId, "r1", true);
    await Runner.resume(agent, parked.runId, { store }).result();
    const types = (await store.read(parked.runId)).map((e) => (e.type === "warning" ? e.code : e.type));
    expect(types.at(-1)).toBe("run_completed");
    expect(types.at(-2)).toBe("plugin_teardown_failed");
  });

  it("a tool-name clash is a UserError at run start naming both sources", async () => {
    const model = new ScriptedModel([{ text: "never" }]);
    const web = plugin({ name: "web", tools: [echo("fetch")] });
    const other = plugin({ name: "other", tools: new InProcessToolHost([echo("fetch")]) });
    const target = new Agent({ name: "billing", model });

    const cases: Array<[Agent<any, any>, RegExp]> = [
      [
        new Agent({ name: "a", model, tools: [echo("fetch")], plugins: [web] }),
        /"fetch" \(one in the agent's tools, one in plugin "web"\)/,
      ],
      [
        new Agent({ name: "a", model, plugins: [web, other] }),
        /"fetch" \(one in plugin "web", one in a tool host of plugin "other"\)/,
      ],
      [
        new Agent({
          name: "a",
          model,
          plugins: [plugin({ name: "p", tools: [echo("transfer_to_billing")] })],
          handoffs: [handoff(target)],
        }),
        /"transfer_to_billing" \(one in plugin "p", one in the agent's handoffs\)/,
      ],
    ];
    for (const [agent, message] of cases) {
      const error = await Runner.run(agent, "go").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UserError);
      expect((error as Error).message).toMatch(message);
    }
    expect(model.requests).toHaveLength(0);
  });

  it("bad plugin values are rejected early", async () => {
    expect(() => plugin({ name: "" })).toThrow(UserError);
    expect(() => plugin({ name: "x", setup: "nope" as never })).toThrow(/setup must be a function/);
    const p = plugin({ name: "dup" });
    const agent = new Agent({
      name: "a",
      model: new ScriptedModel([]),
      plugins: [p, plugin({ name: "dup" })],
    });
    await expect(Runner.run(agent, "go")).rejects.toThrow(/two plugins named "dup"/);
  });

  it("a tool set with its instructions is a plugin: the web tools, and a workspace", async () => {
    const root = mkdtempSync(join(tmpdir(), "quiver-plugin-ws-"));
    try {
      writeFileSync(join(root, "notes.txt"), "the launch is on Tuesday\n");
      const web = plugin({
        name: "web",
        tools: [webFetch()],
        instructions: [FENCE_NOTE, currentDate("UTC")],
      });
      const ws = workspace({ root, readOnly: true });
      const files = plugin({ name: "workspace", tools: ws.tools, instructions: ws.instructions });
      const model = new ScriptedModel([
        { toolCalls: [{ name: "read_file", args: { path: "notes.txt" } }] },
        { text: "Tuesday" },
      ]);
      const result = await Runner.run(new Agent({ name: "coder", model, plugins: [web, files] }), "when?");
      expect(result.toolCalls[0]?.output).toContain("the launch is on Tuesday");
      const request = model.requests[0]!;
      expect(request.tools.map((t) => t.name)).toEqual(["web_fetch", ...ws.tools.map((t) => t.name)]);
      expect(request.system).toContain(FENCE_NOTE);
      expect(request.system).toMatch(/Today is \w+day, \d{4}-\d\d-\d\d \(UTC\)\./);
      expect(request.system?.endsWith(ws.instructions)).toBe(true);
      // The workspace's tools clash with the same tools given directly, naming both places.
      const twice = new Agent({
        name: "coder",
        model: new ScriptedModel([]),
        tools: ws.tools,
        plugins: [files],
      });
      await expect(Runner.run(twice, "go")).rejects.toThrow(
        /"read_file" \(one in the agent's tools, one in plugin "workspace"\)/,
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
