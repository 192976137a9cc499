/**
 * A run left running by a process that died is picked up when its owner asks for it, and only
 * then: another user who knows (or guesses) its id gets the 404 of an unknown run, and the run
 * stays exactly as it was stored.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer, type Serving, serve } from "quiver-agents/server";
import { SqliteStore } from "quiver-agents/store";
import { afterEach, describe, expect, it } from "vitest";
import { agentWith, eventually } from "./helpers.js";

const dirs: string[] = [];
const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of cleanup.splice(0)) await close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Alice's run `r-alice` in a SQLite store, left mid-turn by a process whose lease has run out. */
async function deadRun(): Promise<SqliteStore> {
  const dir = mkdtempSync(join(tmpdir(), "quiver-dead-run-"));
  dirs.push(dir);
  const store = new SqliteStore({ path: join(dir, "runs.db") });
  const lease = await store.acquireLease("r-alice", "gone-process", 100);
  const base = { runId: "r-alice", agent: "helper", at: Date.now() };
  await store.append(lease, [
    {
      ...base,
      seq: 1,
      type: "run_started",
      input: [{ role: "user", content: "hi" }],
      userId: "alice",
      sessionId: "s-alice",
    },
    { ...base, seq: 2, type: "turn_started", turn: 1 },
  ]);
  await new Promise((r) => setTimeout(r, 150)); // the lease expires
  return store;
}

describe("a dead run's id in another user's request", () => {
  it("is a 404 on every route and resumes nothing; its owner's request picks it up", async () => {
    const store = await deadRun();
    const serving: Serving = await serve(
      createServer({
        agent: agentWith([{ text: "hello alice" }]),
        store,
        auth: (request) => request.headers.get("x-user"),
      }),
      { port: 0 },
    );
    cleanup.push(async () => {
      await serving.close();
      await store.close();
    });
    const as = (user: string, method = "GET", body?: unknown) =>
      fetch(`${serving.url}/api/runs/r-alice${method === "GET" ? "" : "/cancel"}`, {
        method,
        headers: { "x-user": user, "content-type": "application/json" },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });

    const bobs = [
      await as("bob"),
      await fetch(`${serving.url}/api/runs/r-alice/events`, {
        headers: { "x-user": "bob", "last-event-id": "0" },
      }),
      await as("bob", "POST", {}),
    ];
    for (const response of bobs) {
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({ error: { code: "not_found", message: "no run r-alice" } });
    }
    // Nothing was picked up: the stored run is as the dead process left it.
    await new Promise((r) => setTimeout(r, 300));
    expect((await store.read("r-alice")).map((e) => e.type)).toEqual(["run_started", "turn_started"]);
    expect(await store.getRun("r-alice")).toMatchObject({ status: "running" });

    const alices = await as("alice");
    expect(alices.status).toBe(200);
    await eventually(async () => (await store.getRun("r-alice"))?.status === "completed");
    const types = (await store.read("r-alice")).map((e) => e.type);
    expect(types).toContain("run_resumed");
    expect(types.at(-1)).toBe("run_completed");
  });
});
