/**
 * A SqliteStore whose file is deleted, replaced or overwritten while it is open. SQLite itself
 * goes on: it writes into the deleted file's inode (gone once the store closes) and serves its
 * cache over a header turned to garbage. The store must notice and fail, naming the file,
 * instead of reporting runs as completed that no file holds.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import Database from "better-sqlite3";
import { Agent, Runner, ScriptedModel, tool } from "quiver-agents";
import { SqliteStore, StoreError } from "quiver-agents/store";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { event, started } from "./harnesses.js";

const dir = mkdtempSync(join(tmpdir(), "quiver-sqlite-file-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let count = 0;

const greeter = () => new Agent({ name: "greeter", model: new ScriptedModel([{ text: "hello" }]) });

/** A store with a finished run and a lease held on another run, as a live process has. */
async function liveStore() {
  const path = join(dir, `runs-${++count}.db`);
  const store = new SqliteStore({ path });
  const first = await Runner.run(greeter(), "hi", { store });
  expect(first.stopReason).toBe("completed");
  const lease = await store.acquireLease("held", "writer", 60_000);
  await store.append(lease, [started("held")]);
  return { path, store, lease };
}

/** Writes `bytes` of garbage at the start of the file from another process, as a stray program would. */
function overwriteStart(path: string, bytes: number) {
  execFileSync(process.execPath, [
    "-e",
    `const fs = require("node:fs"); const fd = fs.openSync(process.argv[1], "r+");
     fs.writeSync(fd, Buffer.alloc(${bytes}, 0x5a), 0, ${bytes}, 0); fs.closeSync(fd);`,
    path,
  ]);
}

/** What a caller gets back from a run on `store`: its result, or the error it failed with. */
const runOn = (store: SqliteStore) => Runner.run(greeter(), "hi again", { store }).catch((e: unknown) => e);

describe("a SqliteStore whose file is deleted under it", () => {
  it("fails the next run and append with a StoreError naming the file, and stores nothing more", async () => {
    const { path, store, lease } = await liveStore();
    unlinkSync(path);

    const failure = await runOn(store);
    expect(failure).toBeInstanceOf(StoreError);
    expect(failure).toMatchObject({ retryable: false });
    expect((failure as Error).message).toContain(path);
    expect((failure as Error).message).toMatch(/deleted/);

    await expect(store.append(lease, [event("held", 2)])).rejects.toThrow(StoreError);
    await expect(store.append(lease, [event("held", 2)])).rejects.toThrow(/was deleted/);
    // Reads too: they would answer from a file that will not be there once the store closes.
    await expect(store.listRuns()).rejects.toThrow(/was deleted/);
    await store.close();

    // Nothing was reported stored that a store opened at the path cannot find.
    const reopened = new SqliteStore({ path });
    expect(await reopened.listRuns()).toEqual([]);
    await reopened.close();
  });

  it("fails the same way when it is moved away, once the path is looked up again (within 0.1 s)", async () => {
    const { path, store, lease } = await liveStore();
    renameSync(path, join(dir, `moved-${count}.db`));
    await sleep(150);
    const failure = await runOn(store);
    expect(failure).toBeInstanceOf(StoreError);
    expect((failure as Error).message).toContain(path);
    expect((failure as Error).message).toMatch(/was moved away/);
    await expect(store.append(lease, [event("held", 2)])).rejects.toThrow(/was moved away/);
    await store.close();
  });

  it("fails the same way when another file is moved over it", async () => {
    const { path, store, lease } = await liveStore();
    const copy = join(dir, `copy-${count}.db`);
    await new SqliteStore({ path: copy }).close();
    renameSync(copy, path);

    const failure = await runOn(store);
    expect(failure).toBeInstanceOf(StoreError);
    expect((failure as Error).message).toContain(path);
    expect((failure as Error).message).toMatch(/replaced by another file/);
    await expect(store.append(lease, [event("held", 2)])).rejects.toThrow(/replaced by another file/);
    await store.close();
  });
});

/** The run ids another process finds in the file at `path`: what a store opened there tomorrow would see. */
function runsSeenByAnotherProcess(path: string): string[] {
  const out = execFileSync(process.execPath, [
    "-e",
    `const Database = require("better-sqlite3"); const db = new Database(process.argv[1]);
     const tables = db.prepare("SELECT name FROM sqlite_master WHERE name = 'quiver_runs'").all();
     const runs = tables.length ? db.prepare("SELECT run_id FROM quiver_runs ORDER BY run_id").all() : [];
     process.stdout.write(JSON.stringify(runs.map((r) => r.run_id)));
     db.close();`,
    path,
  ]);
  return JSON.parse(String(out));
}

describe("a SqliteStore whose -wal or -shm is deleted under it", () => {
  it("fails a run in progress with a StoreError naming the -wal, never reporting it completed", async () => {
    const path = join(dir, `runs-${++count}.db`);
    const store = new SqliteStore({ path });
    // A cleanup script takes the -wal and -shm for temporary files while the run is under way.
    const cleanup = tool({
      name: "cleanup",
      description: "Deletes temporary files.",
      parameters: z.object({}),
      execute: async () => {
        unlinkSync(`${path}-wal`);
        unlinkSync(`${path}-shm`);
        return "cleaned";
      },
    });
    const model = new ScriptedModel([
      { toolCalls: [{ id: "c1", name: "cleanup", args: {} }] },
      { text: "done" },
    ]);
    const agent = new Agent({ name: "janitor", model, tools: [cleanup] });
    const failure = await Runner.run(agent, "clean up", { store }).catch((e: unknown) => e);

    expect(failure).toBeInstanceOf(StoreError);
    expect(failure).toMatchObject({ retryable: false });
    expect((failure as Error).message).toContain(`${path}-wal`);
    expect((failure as Error).message).toMatch(/write-ahead log .* was deleted/);
    // The whole run was in the deleted log: no other process sees it.
    expect(runsSeenByAnotherProcess(path)).toEqual([]);
    await expect(store.listRuns()).rejects.toThrow(/-wal was deleted/);
    await store.close();
  });

  it("fails the next run and append after the -wal is deleted; closing the store copies what the log held into the file", async () => {
    const { path, store, lease } = await liveStore();
    unlinkSync(`${path}-wal`);

    const failure = await runOn(store);
    expect(failure).toBeInstanceOf(StoreError);
    expect(failure).toMatchObject({ retryable: false });
    expect((failure as Error).message).toContain(`${path}-wal`);
    await expect(store.append(lease, [event("held", 2)])).rejects.toThrow(/-wal was deleted/);
    // Nobody else has the file open: SQLite checkpoints the log it still holds as it closes.
    await store.close();
    const reopened = new SqliteStore({ path });
    expect((await reopened.listRuns()).map((run) => run.runId)).toContain("held");
    expect(await reopened.read("held")).toHaveLength(1);
    await reopened.close();
  });

  it("fails the same way when only the -shm is deleted (another process would not see its locks)", async () => {
    const { path, store, lease } = await liveStore();
    unlinkSync(`${path}-shm`);
    const failure = await store.append(lease, [event("held", 2)]).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(StoreError);
    expect(failure).toMatchObject({ retryable: false });
    expect((failure as Error).message).toContain(`${path}-shm`);
    expect((failure as Error).message).toMatch(/shared-memory index .* was deleted/);
    await store.close();
  });

  it("fails when another file is moved over the -wal, once the path is looked up again (within 0.1 s)", async () => {
    const { path, store, lease } = await liveStore();
    const other = join(dir, `other-${count}.wal`);
    writeFileSync(other, "");
    renameSync(other, `${path}-wal`);
    await sleep(150);
    await expect(store.append(lease, [event("held", 2)])).rejects.toThrow(
      /-wal was replaced by another file/,
    );
    await store.close();
  });
});

describe("a SqliteStore whose file is overwritten under it", () => {
  it("fails the next run and append with a StoreError naming the file when the header is garbage", async () => {
    const { path, store, lease } = await liveStore();
    overwriteStart(path, 8_192);

    const failure = await runOn(store);
    expect(failure).toBeInstanceOf(StoreError);
    expect(failure).toMatchObject({ retryable: false });
    expect((failure as Error).message).toContain(path);
    expect((failure as Error).message).toMatch(/damaged/);
    await expect(store.append(lease, [event("held", 2)])).rejects.toThrow(/damaged/);
    await store.close();
  });

  it("reports a damaged page SQLite reads as a StoreError naming the file, and writes nothing more", async () => {
    const { path, store, lease } = await liveStore();
    // Another connection moves every page into the file and empties the WAL, so the store's
    // next transaction reads pages from the file, not from its cache or the WAL.
    const other = new Database(path);
    other.pragma("wal_checkpoint(TRUNCATE)");
    other.close();
    // Garbage over everything after the first page: the header is intact, the tables are not.
    execFileSync(process.execPath, [
      "-e",
      `const fs = require("node:fs"); const fd = fs.openSync(process.argv[1], "r+");
       const size = fs.fstatSync(fd).size; fs.writeSync(fd, Buffer.alloc(size - 4096, 0x5a), 0, size - 4096, 4096);
       fs.closeSync(fd);`,
      path,
    ]);

    const failure = await store.read("held").catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(StoreError);
    expect(failure).toMatchObject({ retryable: false });
    expect((failure as Error).message).toContain(path);
    expect((failure as Error).message).toMatch(/damaged: database disk image is malformed/);
    // Not only the statement that hit the damage: the store takes nothing more.
    await expect(store.append(lease, [event("held", 2)])).rejects.toThrow(/damaged/);
    expect(await runOn(store)).toBeInstanceOf(StoreError);
    await store.close();
  });

  it("keeps working when the file is only checkpointed, by itself or another connection", async () => {
    const { path, store, lease } = await liveStore();
    const other = new Database(path);
    other.pragma("wal_checkpoint(TRUNCATE)");
    other.close();
    await store.append(lease, [event("held", 2)]);
    expect((await runOn(store)) as { stopReason: string }).toMatchObject({ stopReason: "completed" });
    expect(await store.read("held")).toHaveLength(2);
    await store.close();
  });
});
