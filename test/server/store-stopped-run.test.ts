/**
 * `GET /api/runs/:runId` of a run whose log ends with `run_failed`: the summary names the
 * failure's kind, so a client can tell a run its store stopped (resumable) from one that failed.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RunEvent, RunFailedKind } from "quiver-agents";
import { createServer } from "quiver-agents/server";
import { SqliteStore } from "quiver-agents/store";
import { afterEach, describe, expect, it } from "vitest";
import { agentWith, BASE, failingWhile } from "./helpers.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function failedRun(runId: string, kind: RunFailedKind): RunEvent[] {
  const base = { runId, agent: "helper", at: Date.now() };
  return [
    { ...base, seq: 1, type: "run_started", input: [{ role: "user", content: "hi" }] },
    { ...base, seq: 2, type: "run_failed", name: "StoreError", message: "ENOSPC", kind },
  ];
}

describe("a stored run that failed, as the server summarises it", () => {
  it("says which kind of failure ended it: store_unavailable is the store's, resumable", async () => {
    const dir = mkdtempSync(join(tmpdir(), "quiver-server-stopped-"));
    dirs.push(dir);
    const store = new SqliteStore({ path: join(dir, "runs.db") });
    for (const [runId, kind] of [
      ["stopped", "store_unavailable"],
      ["broken", "provider_error"],
    ] as const) {
      const lease = await store.acquireLease(runId, "test", 60_000);
      await store.append(lease, failedRun(runId, kind));
      await store.releaseLease(lease);
    }
    const server = createServer({ agent: agentWith([]), store });
    const summary = async (runId: string) =>
      (await (await server.fetch(new Request(`${BASE}/api/runs/${runId}`))).json()) as Record<
        string,
        unknown
      >;
    expect(await summary("stopped")).toMatchObject({ status: "failed", failureKind: "store_unavailable" });
    expect(await summary("broken")).toMatchObject({ status: "failed", failureKind: "provider_error" });
    server.close();
    await store.close();
  });
});

/** A real SQLite store, and the same store failing its leases while `down()` says so. */
function flakyStore(down: () => boolean) {
  const dir = mkdtempSync(join(tmpdir(), "quiver-server-flaky-"));
  dirs.push(dir);
  const store = new SqliteStore({ path: join(dir, "runs.db") });
  return { store, flaky: failingWhile(store, down) };
}

describe("POST /api/runs while the store is failing", () => {
  it("answers 503 store_unavailable, never a 201 with an id the store has never heard of", async () => {
    const { store, flaky } = flakyStore(() => true);
    const reported: number[] = [];
    const server = createServer({
      agent: agentWith([{ text: "hi" }]),
      store: flaky,
      runOptions: { storeWaitMs: 400 },
      onError: (_error, { status }) => reported.push(status),
    });
    const response = await server.fetch(
      new Request(`${BASE}/api/runs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ message: "hello" }),
      }),
    );
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ error: { code: "store_unavailable" } });
    // The operator hears of it; the client gets a fixed message and a request id.
    expect(reported).toEqual([503]);
    expect(await store.listRuns()).toEqual([]);
    await server.close();
    await store.close();
  });

  it("a store that comes back within storeWaitMs: the run waits for it, starts, and is answered 201", async () => {
    const until = Date.now() + 300;
    const { store, flaky } = flakyStore(() => Date.now() < until);
    const server = createServer({
      agent: agentWith([{ text: "hi" }]),
      store: flaky,
      runOptions: { storeWaitMs: 5_000 },
    });
    const response = await server.fetch(
      new Request(`${BASE}/api/runs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ message: "hello" }),
      }),
    );
    expect(response.status).toBe(201);
    const { runId } = (await response.json()) as { runId: string };
    expect(await store.getRun(runId)).toBeDefined();
    await server.close();
    await store.close();
  });
});
