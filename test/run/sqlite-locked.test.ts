/**
 * A run on a SqliteStore whose file another process holds locked (`BEGIN IMMEDIATE`: the
 * `quiver` command, a backup, another worker). The store waits for the lock off the event loop,
 * so `cancel()` is heard at once; a cancelled run whose last events the store did not take
 * settles within 2 s with the documented retryable error, and once the lock lets go its log is
 * completed from where it stopped (the lease kept for the retry), not left half-written.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Agent, Runner, ScriptedModel, tool } from "quiver-agents";
import { SqliteStore, StoreError } from "quiver-agents/store";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { holdWriteLock, watchEventLoop } from "../store/sqlite-locker.js";

const dir = mkdtempSync(join(tmpdir(), "quiver-sqlite-locked-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a run on a SqliteStore another process holds locked", () => {
  it("hears cancel() at once and settles within 2 s with the retryable 'did not confirm' error; the log is finished once the lock lets go", async () => {
    const path = join(dir, "runs.db");
    // Short waits: the store gives up on the lock after 500 ms; the run retries for 30 s, so that
    // on a busy machine (another test file beside this one) it outlasts the lock.
    const store = new SqliteStore({ path, busyTimeoutMs: 500 });
    let lock: Awaited<ReturnType<typeof holdWriteLock>> | undefined;
    const ran: string[] = [];
    const charge = tool({
      name: "charge",
      description: "Charges the card.",
      parameters: z.object({ cents: z.number() }),
      execute: async ({ cents }, ctx) => {
        ran.push(ctx.idempotencyKey);
        // The lock is taken while the first call runs: its completion cannot be stored.
        if (lock === undefined) lock = await holdWriteLock(path);
        return `charged ${cents}`;
      },
    });
    const model = new ScriptedModel([
      { toolCalls: [{ id: "c1", name: "charge", args: { cents: 100 } }] },
      { toolCalls: [{ id: "c2", name: "charge", args: { cents: 200 } }] },
      { text: "done" },
    ]);
    const agent = new Agent({ name: "billing", model, tools: [charge] });
    const handle = Runner.stream(agent, "bill", { store, storeWaitMs: 30_000 });
    const loop = watchEventLoop();
    try {
      while (lock === undefined) await sleep(10);
      await sleep(200);
      const cancelledAt = performance.now();
      handle.cancel("stop");
      const failure = await handle.result().catch((e: unknown) => e);
      const settledAfter = performance.now() - cancelledAt;

      expect(failure).toBeInstanceOf(StoreError);
      expect(failure).toMatchObject({ retryable: true });
      expect((failure as Error).message).toMatch(/did not confirm the last events/);
      expect(settledAfter).toBeLessThan(2_400);
      expect(loop.maxGapMs()).toBeLessThan(250);
      // The second call waited for its start to be stored: it never ran.
      expect(ran).toHaveLength(1);
    } finally {
      loop.stop();
      await lock?.release();
    }
    // The run goes on settling behind the handle: once the lock lets go, its retried appends
    // (under the lease it still holds for them) store what it did, up to its cancelled end.
    const fresh = new SqliteStore({ path });
    let summary = await fresh.getRun(handle.runId);
    // Bounded by the run's storeWaitMs (30 s): its retries are spaced out, and a busy machine
    // stretches them.
    for (let i = 0; i < 600 && summary?.status !== "completed"; i++) {
      await sleep(50);
      summary = await fresh.getRun(handle.runId);
    }
    expect(summary?.status).toBe("completed");
    const events = await fresh.read(handle.runId);
    expect(events.at(-1)).toMatchObject({ type: "run_completed", stopReason: "cancelled" });
    // The second call's start was stored behind the lock and the call stopped before it ran.
    const c2 = events.find((e) => e.type === "tool_call_completed" && e.call.id === "c2");
    expect(c2).toMatchObject({ ok: false });
    expect(ran).toHaveLength(1);
    await fresh.close();
    await store.close();
  }, 60_000);
});
