/**
 * A session continues from its latest run: two runs of one session at once would each extend
 * the conversation they read, and the next run would lose one of the two exchanges. A session's
 * run holds the session while it runs; another one meanwhile is refused, whoever starts it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, loadSession, type Model, Runner, ScriptedModel, UserError } from "quiver-agents";
import { type Lease, MemoryStore, PostgresStore, type RunStore, SqliteStore } from "quiver-agents/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PostgresCluster, startPostgresCluster } from "../store/postgres-cluster.js";

const dir = mkdtempSync(join(tmpdir(), "quiver-session-busy-"));
let cluster: PostgresCluster;
let schemas = 0;
beforeAll(async () => {
  cluster = await startPostgresCluster();
}, 60_000);
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await cluster?.stop();
});

/** A model that answers each question after `ms`, quoting it. */
function slowEcho(ms: number): Model {
  return {
    name: "slow-echo",
    async *stream(request) {
      await new Promise((resolve) => setTimeout(resolve, ms));
      const last = request.messages.at(-1);
      yield { type: "text_delta", delta: `heard: ${typeof last?.content === "string" ? last.content : "?"}` };
      yield { type: "finish", reason: "stop" };
    },
  };
}

describe.each([
  ["MemoryStore", () => new MemoryStore()],
  ["SqliteStore", () => new SqliteStore({ path: join(dir, `${Math.random()}.db`) })],
  [
    "PostgresStore",
    () => new PostgresStore({ connectionString: cluster.connectionString, schema: `busy_${schemas++}` }),
  ],
] as Array<[string, () => RunStore]>)("%s: one run of a session at a time", (_, open) => {
  it("refuses a second run while the first runs, and loses no exchange", async () => {
    const store = open();
    const agent = new Agent({ name: "a", model: slowEcho(150) });
    await Runner.run(agent, "base", { store, sessionId: "s" });
    const first = Runner.run(agent, "question A", { store, sessionId: "s" });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = Runner.run(agent, "question B", { store, sessionId: "s" });
    await expect(second).rejects.toBeInstanceOf(UserError);
    await expect(second).rejects.toThrow(/session s has a run in progress/);
    expect((await first).output).toBe("heard: question A");
    // Once it ended, the session goes on from it: both earlier exchanges are there.
    await Runner.run(agent, "what did I ask?", { store, sessionId: "s" });
    const said = (await loadSession(store, "s")).map((m) => m.content);
    expect(said).toEqual([
      "base",
      "heard: base",
      "question A",
      "heard: question A",
      "what did I ask?",
      "heard: what did I ask?",
    ]);
    await store.close();
  });

  it("of two started at the same moment, exactly one runs", async () => {
    const store = open();
    // Each run lasts long enough to be running when the other finds the session taken: one
    // that had already ended by then would be waited for instead (see the handover below).
    const agent = new Agent({ name: "a", model: slowEcho(400) });
    await Runner.run(agent, "base", { store, sessionId: "t" });
    const outcomes = await Promise.allSettled([
      Runner.run(agent, "A", { store, sessionId: "t" }),
      Runner.run(agent, "B", { store, sessionId: "t" }),
    ]);
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
    const refused = outcomes.find((o) => o.status === "rejected");
    expect(refused?.status === "rejected" && refused.reason).toBeInstanceOf(UserError);
    // Sessions other than this one, and runs without a session, are not held up.
    const other = new Agent({ name: "b", model: new ScriptedModel([{ text: "ok" }, { text: "ok" }]) });
    await Promise.all([Runner.run(other, "x", { store, sessionId: "u" }), Runner.run(other, "y", { store })]);
    await store.close();
  });

  it("a message sent the moment the previous run's end arrives goes on from it", async () => {
    // The end is stored and streamed before its process gives the session back (a round trip
    // later); a chat page sends the next message on that end. Here the give-back takes 300 ms.
    const store = slowToLetGoOfSessions(open(), 300);
    const agent = new Agent({ name: "a", model: slowEcho(5) });
    for (const question of ["one", "two", "three"]) {
      for await (const event of Runner.stream(agent, question, { store, sessionId: "v" })) {
        if (event.type === "run_completed") break;
      }
    }
    const said = (await loadSession(store, "v")).map((m) => m.content);
    expect(said).toEqual(["one", "heard: one", "two", "heard: two", "three", "heard: three"]);
    await store.close();
  });

  it("a run started the moment another process sees the previous run's end in the store goes on from it", async () => {
    // A server tailing the store, or a worker, sees the end before the driver has given the
    // session back (here 300 ms later); the next message waits for that instead of failing.
    const store = slowToLetGoOfSessions(open(), 300);
    const agent = new Agent({ name: "a", model: slowEcho(5) });
    const first = Runner.run(agent, "one", { store, sessionId: "w" });
    await completedInStore(store, "w");
    const second = await Runner.run(agent, "two", { store, sessionId: "w" });
    expect(second.output).toBe("heard: two");
    await first;
    const said = (await loadSession(store, "w")).map((m) => m.content);
    expect(said).toEqual(["one", "heard: one", "two", "heard: two"]);
    await store.close();
  });

  it("a driver that ended its run but never lets go of the session: the next run says so after its wait", async () => {
    const store = slowToLetGoOfSessions(open(), 6_500);
    const agent = new Agent({ name: "a", model: slowEcho(5) });
    const first = Runner.run(agent, "one", { store, sessionId: "x" });
    await completedInStore(store, "x");
    const asked = Date.now();
    const second = Runner.run(agent, "two", { store, sessionId: "x" });
    await expect(second).rejects.toThrow(
      /session x is still held by the driver of its run run_\S+, which has ended .* did not give the session back within 3000 ms/,
    );
    expect(Date.now() - asked).toBeGreaterThanOrEqual(2_900);
    expect((await first).output).toBe("heard: one");
    await store.close();
  }, 30_000);
});

/** The store, giving back a session's hold `ms` late (its run's own lease at once). */
function slowToLetGoOfSessions(store: RunStore, ms: number): RunStore {
  return new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target);
      if (key !== "releaseLease") return typeof value === "function" ? value.bind(target) : value;
      return async (lease: Lease) => {
        if (lease.runId.startsWith("quiver.session:"))
          await new Promise((resolve) => setTimeout(resolve, ms));
        return target.releaseLease(lease);
      };
    },
  });
}

/** Resolves as soon as a run of the session shows as completed in the store (as another process sees it). */
async function completedInStore(store: RunStore, sessionId: string): Promise<void> {
  while (!(await store.listRuns({ sessionId })).some((r) => r.status === "completed"))
    await new Promise((resolve) => setTimeout(resolve, 2));
}
