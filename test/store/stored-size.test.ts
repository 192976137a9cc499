/**
 * Storage amplification: a call's arguments ride on every event of the call and a result's
 * details on two events; stored whole each time, 15 MB of arguments and details became tens
 * of MB. Stores keep each large payload once and the events refer to it — and what a reader
 * of the store gets back is exactly what the run emitted.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import {
  Agent,
  loadSession,
  type ModelRequest,
  type RunEvent,
  Runner,
  replay,
  ScriptedModel,
  serializeEvent,
  tool,
} from "quiver-agents";
import { MemoryStore, PostgresStore, type RunStore, SqliteStore } from "quiver-agents/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type PostgresCluster, startPostgresCluster } from "./postgres-cluster.js";

const dir = mkdtempSync(join(tmpdir(), "quiver-stored-size-"));
let cluster: PostgresCluster;
beforeAll(async () => {
  cluster = await startPostgresCluster();
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
  if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
});

const MB = 1024 * 1024;

/** Three uploads of `size` characters each (one retried once), whose results carry `size / 4` of details. */
function uploadsAgent(size: number) {
  let failedOnce = false;
  const upload = tool({
    name: "upload",
    description: "Upload a document.",
    parameters: z.object({ name: z.string(), data: z.string() }),
    retries: 1,
    execute: async ({ name, data }) => {
      if (name === "b" && !failedOnce) {
        failedOnce = true;
        throw new Error("the upload service hiccuped");
      }
      return {
        content: [{ type: "text" as const, text: `uploaded ${name} (${data.length} chars)` }],
        details: { name, checksum: data.slice(0, size / 4) },
      };
    },
  });
  const doc = (name: string) => ({ name, data: name.repeat(size) });
  const model = new ScriptedModel(
    Array.from(
      { length: 8 },
      () => (req: ModelRequest) =>
        req.messages.some((m) => m.role === "tool")
          ? { text: "all uploaded" }
          : {
              toolCalls: [
                { id: "u1", name: "upload", args: doc("a") },
                { id: "u2", name: "upload", args: doc("b") },
                { id: "u3", name: "upload", args: doc("c") },
              ],
            },
    ),
  );
  return new Agent({ name: "uploader", model, tools: [upload] });
}

describe("a store keeps each large payload once", () => {
  it("stores 15 MB of arguments and details in about 15 MB (it was several times that), on SQLite", async () => {
    const path = join(dir, "size.db");
    const store = new SqliteStore({ path });
    const size = 4 * MB;
    const handle = Runner.stream(uploadsAgent(size), "Upload the three documents", { store });
    const live: RunEvent[] = [];
    for await (const ev of handle) live.push(ev);
    const result = await handle.result();
    expect(result.output).toBe("all uploaded");

    // The payload: three documents' arguments and their results' details, as JSON.
    const payload =
      result.toolCalls.reduce((n, r) => n + JSON.stringify(r.call.args).length, 0) +
      result.messages.reduce((n, m) => n + (m.role === "tool" ? JSON.stringify(m.details).length : 0), 0);
    expect(payload).toBeGreaterThan(14 * MB);
    // Each event stored whole, as before: every event of a call repeats its arguments.
    const whole = live.reduce((n, ev) => n + serializeEvent(ev).length, 0);
    const db = new Database(path, { readonly: true });
    const stored = db
      .prepare(
        `SELECT (SELECT sum(length(CAST(body AS BLOB))) FROM quiver_events) +
                (SELECT coalesce(sum(length(CAST(text AS BLOB))), 0) FROM quiver_artifacts) AS bytes`,
      )
      .get() as { bytes: number };
    db.close();
    const before = whole / payload;
    const after = stored.bytes / payload;
    console.info(`stored / payload: ${before.toFixed(2)} storing whole events, ${after.toFixed(2)} now`);
    expect(before).toBeGreaterThan(3);
    expect(after).toBeLessThan(1.1);

    // What the store gives back is what the run emitted, and rebuilds the same state.
    const read = await store.read(handle.runId);
    expect(read).toEqual(live.map((ev) => JSON.parse(serializeEvent(ev))));
    const state = replay(read);
    expect(state.messages).toEqual(result.messages);
    expect(state.toolCalls).toEqual(result.toolCalls.map(({ value: _, ...record }) => record));
    await store.close();
  });

  it.each<[string, () => RunStore]>([
    ["MemoryStore", () => new MemoryStore()],
    ["SqliteStore", () => new SqliteStore({ path: join(dir, "resume.db") })],
    ["PostgresStore", () => new PostgresStore({ connectionString: cluster.connectionString })],
  ])(
    "%s: a run with large arguments parks, is decided from the log, resumes and rebuilds the same transcript",
    async (_, open) => {
      const store = open();
      const size = 64 * 1024;
      const publish = tool({
        name: "publish",
        description: "Publish a document.",
        parameters: z.object({ title: z.string(), body: z.string() }),
        needsApproval: true,
        execute: async ({ title, body }) => ({
          content: [{ type: "text" as const, text: `published ${title}` }],
          details: { words: body.split(" ").length, preview: body.slice(0, 2_000) },
        }),
      });
      const body = "lorem ipsum ".repeat(size / 12);
      const turns = () =>
        Array.from(
          { length: 6 },
          () => (req: ModelRequest) =>
            req.messages.some((m) => m.role === "tool")
              ? { text: "published it" }
              : { toolCalls: [{ id: "p1", name: "publish", args: { title: "Q3", body } }] },
        );
      const agent = new Agent({ name: "editor", model: new ScriptedModel(turns()), tools: [publish] });
      const parked = await Runner.run(agent, "Publish the Q3 report", { store });
      expect(parked.stopReason).toBe("awaiting_approval");
      expect(parked.pending?.[0]?.args).toEqual({ title: "Q3", body });

      await Runner.decide(store, parked.runId, "p1", true);
      const resumed = await Runner.resume(agent.clone({ model: new ScriptedModel(turns()) }), parked.runId, {
        store,
      }).result();
      expect(resumed.output).toBe("published it");
      expect(resumed.toolCalls[0]?.call.args).toEqual({ title: "Q3", body });
      const state = replay(await store.read(parked.runId));
      expect(state.messages).toEqual(resumed.messages);
      expect(state.messages.find((m) => m.role === "tool")).toMatchObject({
        details: { words: expect.any(Number), preview: body.slice(0, 2_000) },
      });
      await store.close();
    },
  );
});

describe("a session's runs share its conversation in the store", () => {
  /** A chat of `runs` messages, each answered with a tool call and a line of text (4 messages a run). */
  async function chat(store: RunStore, sessionId: string, runs: number) {
    const lookup = tool({
      name: "lookup",
      description: "Look a word up.",
      parameters: z.object({ word: z.string() }),
      execute: async ({ word }) => `${word}: a word of ${word.length} letters, used in many sentences.`,
    });
    const model = new ScriptedModel(
      Array.from({ length: runs * 2 }, (_, i) => (req: ModelRequest) => {
        const last = req.messages.at(-1)!;
        return last.role === "user"
          ? { toolCalls: [{ id: `c${i}`, name: "lookup", args: { word: `word${i}` } }] }
          : { text: `Here is what I found about that one (${i}), in a sentence or two of ordinary length.` };
      }),
    );
    const agent = new Agent({ name: "chat", model, tools: [lookup] });
    let last: Awaited<ReturnType<typeof Runner.run>> | undefined;
    for (let i = 0; i < runs; i++) {
      last = await Runner.run(agent, `Question ${i}: what does word${i} mean, and how is it used?`, {
        store,
        sessionId,
      });
      expect(last.output).toContain(`(${2 * i + 1})`);
    }
    return last!;
  }

  it("120 runs of one chat (480 messages) store each message about once, not once per later run; every run reads back as it ran", async () => {
    const path = join(dir, "chat.db");
    const store = new SqliteStore({ path });
    const runs = 120;
    const last = await chat(store, "long-chat", runs);
    expect(last.messages).toHaveLength(runs * 4);
    const conversation = JSON.stringify(last.messages).length;

    const db = new Database(path, { readonly: true });
    const bytes = (sql: string) => (db.prepare(sql).get() as { bytes: number }).bytes;
    const events = bytes("SELECT sum(length(CAST(body AS BLOB))) AS bytes FROM quiver_events");
    const artifacts = bytes(
      "SELECT coalesce(sum(length(CAST(text AS BLOB))), 0) AS bytes FROM quiver_artifacts",
    );
    db.close();
    // Each run's input stored whole repeats every conversation before it: 65× (its other events are 6×).
    const ratio = (events + artifacts) / conversation;
    console.info(
      `120-run chat: conversation ${(conversation / 1024).toFixed(0)} KB, stored ${((events + artifacts) / 1024).toFixed(0)} KB (${ratio.toFixed(1)}×)`,
    );
    expect(ratio).toBeLessThan(16);

    // Reading back gives what ran: the session's history, and the latest run's log replayed.
    const latest = await store.read(last.runId);
    expect(latest[0]).toMatchObject({ type: "run_started" });
    expect((latest[0] as { input: unknown[] }).input).toEqual(last.messages.slice(0, runs * 4 - 3));
    expect(replay(latest).messages).toEqual(last.messages);
    expect(await loadSession(store, "long-chat")).toEqual(last.messages);
    await store.close();
  }, 60_000);

  it.each<[string, () => RunStore]>([
    ["MemoryStore", () => new MemoryStore()],
    ["PostgresStore", () => new PostgresStore({ connectionString: cluster.connectionString })],
  ])("%s: a chat's runs read back whole from blocks shared between them", async (_, open) => {
    const store = open();
    const last = await chat(store, "shared-blocks", 20);
    expect(await loadSession(store, "shared-blocks")).toEqual(last.messages);
    for (const run of await store.listRuns({ sessionId: "shared-blocks" })) {
      const state = replay(await store.read(run.runId));
      expect(state.messages).toEqual(last.messages.slice(0, state.messages.length));
    }
    await store.close();
  });
});
