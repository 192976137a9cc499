import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { Agent, type RunEvent, Runner, replay, ScriptedModel, tool } from "quiver-agents";
import { MemoryStore, SqliteStore } from "quiver-agents/store";
import { describe, expect, it } from "vitest";
import { z } from "zod";

type Cart = { items: string[] };

const addItem = tool({
  name: "add_item",
  description: "Put an item in the shared cart.",
  parameters: z.object({ item: z.string() }),
  execute: ({ item }, ctx) => {
    ctx.setState((previous: unknown) => ({
      items: [...((previous as Cart | undefined)?.items ?? []), item],
    }));
    return `cart: ${(ctx.state as Cart).items.join(", ")}`;
  },
});

const addTurns = (...items: string[]) => [
  { toolCalls: items.map((item, i) => ({ id: `c${i}`, name: "add_item", args: { item } })) },
  { text: "Done." },
];

describe("shared state (ctx.state, ctx.setState)", () => {
  it("tools read and replace it; each change is a state_updated event; the result carries the end state", async () => {
    const initial = { items: ["bread"] };
    const agent = new Agent({
      name: "shop",
      model: new ScriptedModel(addTurns("milk", "eggs")),
      tools: [addItem],
    });
    const handle = Runner.stream(agent, "Add milk and eggs.", { state: initial });
    initial.items.push("changed by the caller after the start");
    const events: RunEvent[] = [];
    for await (const event of handle) events.push(event);
    const result = await handle.result();

    const started = events.find((e) => e.type === "run_started");
    expect(started?.type === "run_started" && started.state).toEqual({ items: ["bread"] });
    const updates = events.filter((e) => e.type === "state_updated");
    expect(updates.map((e) => e.type === "state_updated" && e.state)).toEqual([
      { items: ["bread", "milk"] },
      { items: ["bread", "milk", "eggs"] },
    ]);
    expect(updates.map((e) => e.type === "state_updated" && e.call?.id)).toEqual(["c0", "c1"]);
    expect(result.state).toEqual({ items: ["bread", "milk", "eggs"] });
    expect(result.toolCalls.map((r) => r.output)).toEqual(["cart: bread, milk", "cart: bread, milk, eggs"]);
    // Rebuilt from the events alone, as a store's log would.
    expect(replay(events).state).toEqual(result.state);
  });

  it("is frozen plain JSON: a tool cannot change it behind the log's back", async () => {
    const sneaky = tool({
      name: "sneaky",
      description: "Tries to change the state in place.",
      parameters: z.object({}),
      execute: (_, ctx) => {
        ctx.setState({ at: new Date(0), items: ["a"] });
        try {
          (ctx.state as Cart).items.push("b");
          return "changed";
        } catch (error) {
          return `refused: ${(error as Error).name}`;
        }
      },
    });
    const agent = new Agent({
      name: "a",
      model: new ScriptedModel([{ toolCalls: [{ id: "c1", name: "sneaky", args: {} }] }, { text: "ok" }]),
      tools: [sneaky],
    });
    const result = await Runner.run(agent, "go");
    expect(result.toolCalls[0]?.output).toBe("refused: TypeError");
    expect(result.state).toEqual({ at: "1970-01-01T00:00:00.000Z", items: ["a"] });
  });

  it("a session's next run starts from where the last one left it, unless given a state; a resumed run keeps it", async () => {
    const store = new MemoryStore();
    const agent = (turns: ReturnType<typeof addTurns>) =>
      new Agent({ name: "shop", model: new ScriptedModel(turns), tools: [addItem] });
    const session = { store, sessionId: "cart-1" };
    await Runner.run(agent(addTurns("milk")), "Add milk.", { ...session, state: { items: [] } });
    const second = await Runner.run(agent(addTurns("eggs")), "Add eggs.", session);
    expect(second.state).toEqual({ items: ["milk", "eggs"] });
    const fresh = await Runner.run(agent(addTurns("tea")), "Start over with tea.", {
      ...session,
      state: { items: [] },
    });
    expect(fresh.state).toEqual({ items: ["tea"] });
    expect(replay(await store.read(fresh.runId)).state).toEqual({ items: ["tea"] });

    // Parked after a change: the resumed run (another agent object, as after a restart) has it.
    const checkout = tool({
      name: "checkout",
      description: "Pay for the cart.",
      parameters: z.object({}),
      needsApproval: true,
      execute: (_, ctx) => `paid for ${(ctx.state as Cart).items.length} items`,
    });
    const turns = [
      { toolCalls: [{ id: "a1", name: "add_item", args: { item: "jam" } }] },
      { toolCalls: [{ id: "p1", name: "checkout", args: {} }] },
      { text: "Paid." },
    ];
    const parked = await Runner.run(
      new Agent({ name: "shop", model: new ScriptedModel(turns), tools: [addItem, checkout] }),
      "Add jam and pay.",
      { store, sessionId: "cart-2", state: { items: ["bread"] } },
    );
    expect(parked.stopReason).toBe("awaiting_approval");
    expect(parked.state).toEqual({ items: ["bread", "jam"] });
    await Runner.decide(store, parked.runId, "p1", true);
    const resumed = await Runner.resume(
      new Agent({ name: "shop", model: new ScriptedModel(turns.slice(2)), tools: [addItem, checkout] }),
      parked.runId,
      { store },
    ).result();
    expect(resumed.toolCalls.at(-1)?.output).toBe("paid for 2 items");
    expect(resumed.state).toEqual({ items: ["bread", "jam"] });
  });

  it("an agent used as a tool shares its root run's state, and the root's log records its changes", async () => {
    const helper = new Agent({
      name: "helper",
      model: new ScriptedModel([
        { toolCalls: [{ id: "h1", name: "add_item", args: { item: "salt" } }] },
        { text: "Added." },
      ]),
      tools: [addItem],
    });
    const root = new Agent({
      name: "root",
      model: new ScriptedModel([
        { toolCalls: [{ id: "r1", name: "helper", args: { input: "add salt" } }] },
        { text: "Done." },
      ]),
      tools: [helper.asTool({ description: "Adds things." })],
    });
    const handle = Runner.stream(root, "Add salt.", { state: { items: ["pepper"] } });
    const own: RunEvent[] = [];
    for await (const event of handle) if (event.runId === handle.runId) own.push(event);
    const result = await handle.result();
    expect(result.state).toEqual({ items: ["pepper", "salt"] });
    const update = own.find((e) => e.type === "state_updated");
    expect(update).toMatchObject({ type: "state_updated", state: { items: ["pepper", "salt"] } });
    expect(update?.type === "state_updated" && update.call).toBeUndefined();
    expect(replay(own).state).toEqual({ items: ["pepper", "salt"] });
  });

  it("a large state is stored once beside the log, however many events carry it, and reads back whole", async () => {
    const dir = mkdtempSync(join(tmpdir(), "quiver-state-"));
    try {
      const path = join(dir, "runs.db");
      const store = new SqliteStore({ path });
      const notes = "n".repeat(200_000);
      const touch = tool({
        name: "touch",
        description: "Set the state to the same large value.",
        parameters: z.object({}),
        execute: (_, ctx) => {
          ctx.setState({ notes });
          return "ok";
        },
      });
      const turns = [
        { toolCalls: [{ id: "t1", name: "touch", args: {} }] },
        { toolCalls: [{ id: "t2", name: "touch", args: {} }] },
        { text: "Done." },
      ];
      const result = await Runner.run(
        new Agent({ name: "a", model: new ScriptedModel(turns), tools: [touch] }),
        "go",
        { store, sessionId: "big", state: { notes } },
      );
      expect(replay(await store.read(result.runId)).state).toEqual({ notes });
      await store.close();
      const db = new Database(path, { readonly: true });
      const events = db.prepare("SELECT sum(length(body)) AS bytes FROM quiver_events").get() as {
        bytes: number;
      };
      const large = db
        .prepare("SELECT count(*) AS n FROM quiver_artifacts WHERE length(text) > 100000")
        .get() as { n: number };
      db.close();
      // run_started and two state_updated events carry it; the text is kept once.
      expect(events.bytes).toBeLessThan(20_000);
      expect(large.n).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
