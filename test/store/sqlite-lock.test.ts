/**
 * A SqliteStore while another process holds the file's write lock. SQLite waits for a lock on
 * the calling thread: a store that let it wait out `busyTimeoutMs` froze the whole process
 * (timers, other runs, HTTP, cancel) for that long at every attempt. The store must wait off
 * the event loop, for `busyTimeoutMs` in all, then fail retryably.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { SqliteStore, StoreError } from "quiver-agents/store";
import { afterAll, describe, expect, it } from "vitest";
import { event, started } from "./harnesses.js";
import { holdWriteLock, watchEventLoop } from "./sqlite-locker.js";

const dir = mkdtempSync(join(tmpdir(), "quiver-sqlite-lock-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let count = 0;

/** A store holding run "r" (seq 1) under a lease, and the path of its file. */
async function storeWithRun(busyTimeoutMs: number) {
  const path = join(dir, `runs-${++count}.db`);
  const store = new SqliteStore({ path, busyTimeoutMs });
  const lease = await store.acquireLease("r", "writer", 60_000);
  await store.append(lease, [started("r")]);
  return { path, store, lease };
}

describe("a SqliteStore while another process holds the write lock", () => {
  it("waits for the lock without holding up the event loop, and commits once it is free", async () => {
    const { path, store, lease } = await storeWithRun(3_000);
    const lock = await holdWriteLock(path);
    const loop = watchEventLoop();
    try {
      let appended = false;
      const append = store.append(lease, [event("r", 2)]).then(() => {
        appended = true;
      });
      // A read waits for the store's own writes made before it, not for the other process.
      const read = store.getRun("r");
      await sleep(400);
      expect(appended).toBe(false);
      await lock.release();
      await append;
      expect((await read)?.lastSeq).toBe(2);
      // 20 ms per attempt at the lock, 100 ms at most between attempts: nothing waits long
      // (the margin is for a busy test machine; SQLite's own wait held it up for seconds).
      expect(loop.maxGapMs()).toBeLessThan(250);
    } finally {
      loop.stop();
      await lock.release();
    }
    expect((await store.read("r")).map((e) => e.seq)).toEqual([1, 2]);
    await store.close();
  });

  it("fails retryably after busyTimeoutMs in all, the event loop free meanwhile, and goes on once the lock is free", async () => {
    const { path, store, lease } = await storeWithRun(600);
    const lock = await holdWriteLock(path);
    const loop = watchEventLoop();
    const sent = performance.now();
    let failure: unknown;
    try {
      failure = await store.append(lease, [event("r", 2)]).catch((e: unknown) => e);
      const waited = performance.now() - sent;
      expect(loop.maxGapMs()).toBeLessThan(250);
      expect(failure).toBeInstanceOf(StoreError);
      expect(failure).toMatchObject({ retryable: true, runId: "r" });
      expect((failure as Error).message).toMatch(
        /locked by another connection \(waited \d+ ms, busyTimeoutMs\)/,
      );
      expect(waited).toBeGreaterThanOrEqual(590);
      expect(waited).toBeLessThan(1_500);
      // Other connections read meanwhile: a store opened now answers at once.
      const reader = new SqliteStore({ path });
      expect((await reader.getRun("r"))?.lastSeq).toBe(1);
      await reader.close();
    } finally {
      loop.stop();
      await lock.release();
    }
    await store.append(lease, [event("r", 2)]);
    expect((await store.getRun("r"))?.lastSeq).toBe(2);
    await store.close();
  });

  it("commits the writes made before close() once the lock is free, before closing", async () => {
    const { path, store, lease } = await storeWithRun(3_000);
    const lock = await holdWriteLock(path);
    const appended = store.append(lease, [event("r", 2)]);
    const closed = store.close();
    await sleep(100);
    await lock.release();
    await appended;
    await closed;
    const reopened = new SqliteStore({ path });
    expect((await reopened.getRun("r"))?.lastSeq).toBe(2);
    await reopened.close();
  });
});
