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
  rmSync(dir, { recursive: true, force: true });
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
