/**
 * What only SqliteStore does: a file that outlives the process, WAL mode, lazy loading, and
 * processes racing on one file.
 */
import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { Agent, type RunEvent, Runner, ScriptedModel, tool } from "quiver-agents";
import { LeaseConflict, MemoryStore, type RunStore, SqliteStore, StoreError } from "quiver-agents/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { completed, event, failed, started } from "./harnesses.js";

const run = promisify(execFile);
const fixture = (name: string) => join(import.meta.dirname, "../fixtures/store", name);
const tsx = (script: string, args: string[]) =>
  run(process.execPath, ["--import", "tsx", fixture(script), ...args], { timeout: 30_000 });

let dir = "";
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "quiver-sqlite-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("SqliteStore", () => {
  it("keeps runs, leases and artifacts in its file across reopening", async () => {
    const path = join(dir, "nested/deeper/runs.db");
    const first = new SqliteStore({ path });
    const lease = await first.acquireLease("r", "writer", 60_000);
    await first.append(lease, [started("r", { sessionId: "s" }), event("r", 2), completed("r", 3)]);
    await first.putArtifact("r", "call-1", "the whole output");
    await first.close();
    expect(existsSync(path)).toBe(true);

    const reopened = new SqliteStore({ path });
    expect(await reopened.read("r")).toEqual([
      started("r", { sessionId: "s" }),
      event("r", 2),
      completed("r", 3),
    ]);
    expect(await reopened.getRun("r")).toMatchObject({ sessionId: "s", status: "completed", lastSeq: 3 });
    expect(await reopened.listSessions()).toMatchObject([{ sessionId: "s", runs: 1 }]);
    expect(await reopened.getArtifact("r", "call-1")).toBe("the whole output");
    await expect(reopened.acquireLease("r", "other", 60_000)).rejects.toThrow(LeaseConflict);
    await reopened.append(lease, [event("r", 4)]);
    await reopened.close();
  });

  it("opens its file in WAL mode with the tables version recorded", async () => {
    const path = join(dir, "wal.db");
    await new SqliteStore({ path }).close();
    const db = new Database(path);
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(db.pragma("user_version", { simple: true })).toBe(2);
    db.close();
  });

  it("refuses a file written by a newer Quiver instead of misreading it", () => {
    const path = join(dir, "newer.db");
    const db = new Database(path);
    db.pragma("user_version = 99");
    db.close();
    expect(() => new SqliteStore({ path })).toThrow(/created by a newer Quiver \(tables version 99/);
  });

  it("reports a file it cannot open as a StoreError naming the path", () => {
    const path = join(dir, "a-directory.db");
    mkdirSync(path);
    expect(() => new SqliteStore({ path })).toThrow(StoreError);
    expect(() => new SqliteStore({ path })).toThrow(/opening the SQLite store at .*a-directory\.db/);
  });

  it("works in memory with :memory:", async () => {
    const store = new SqliteStore({ path: ":memory:" });
    const lease = await store.acquireLease("r", "w", 1_000);
    await store.append(lease, [started("r")]);
    expect(await store.read("r")).toHaveLength(1);
    await store.close();
  });

  it("loads better-sqlite3 only when constructed, and defaults to .quiver/quiver.db", async () => {
    const cwd = join(dir, "default-path");
    mkdirSync(cwd);
    const { stdout } = await tsx("lazy-load.ts", [cwd]);
    expect(JSON.parse(stdout)).toEqual({
      afterImport: { sqlite: false, pg: false },
      afterSqlite: { sqlite: true, pg: false },
      afterPostgres: { sqlite: true, pg: true },
      path: ".quiver/quiver.db",
      created: true,
    });
  });

  it("names the install command when a driver is not installed", async () => {
    const { stdout } = await tsx("missing-drivers.ts", []);
    expect(JSON.parse(stdout)).toEqual({
      sqlite: {
        name: "UserError",
        message:
          "SqliteStore needs the optional package better-sqlite3, which is not installed: run `npm install better-sqlite3@12`",
      },
      postgres: {
        name: "UserError",
        message:
          "PostgresStore needs the optional package pg, which is not installed: run `npm install pg@8`",
      },
    });
  });
});

describe("SqliteStore commits appends in groups", () => {
  it("stores appends made together, in call order, and a read made after them sees them", async () => {
    const store = new SqliteStore({ path: join(dir, "group-order.db") });
    const lease = await store.acquireLease("r", "writer", 60_000);
    // Not awaited one by one: they share a commit, each continuing the log of the one before.
    const appends = [
      store.append(lease, [started("r")]),
      store.append(lease, [event("r", 2), event("r", 3)]),
      store.append(lease, [completed("r", 4)]),
    ];
    expect((await store.read("r")).map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    await Promise.all(appends);
    expect(await store.getRun("r")).toMatchObject({ status: "completed", lastSeq: 4 });
    await store.close();
  });

  it("summarises runs appended a few events at a time exactly as MemoryStore does, across reopening", async () => {
    // SqliteStore rewrites a run's summary row only now and then (on a change of status, or
    // when it lags far behind); what it answers must not show it.
    const path = join(dir, "summaries.db");
    let sqlite = new SqliteStore({ path });
    const memory = new MemoryStore();
    const withoutLease = ({ leaseOwner, leaseExpiresAt, ...summary }: Record<string, unknown>) => summary;
    const answers = async (store: RunStore) => ({
      long: withoutLease({ ...(await store.getRun("long")) }),
      runs: (await store.listRuns()).map(withoutLease),
      running: (await store.listRuns({ sessionId: "s", status: "running" })).map((r) => r.runId),
      sessions: await store.listSessions(),
    });
    const leases = new Map<RunStore, Awaited<ReturnType<RunStore["acquireLease"]>>[]>();
    for (const store of [sqlite, memory]) {
      leases.set(store, [
        await store.acquireLease("long", "w", 60_000),
        await store.acquireLease("short", "w", 60_000),
      ]);
    }
    const appendBoth = async (run: 0 | 1, events: RunEvent[]) => {
      for (const store of [sqlite, memory]) await store.append(leases.get(store)![run]!, events);
      expect(await answers(sqlite)).toEqual(await answers(memory));
    };
    await appendBoth(0, [started("long", { sessionId: "s", at: 5_000 })]);
    await appendBoth(1, [started("short", { sessionId: "s", at: 5_001 })]);
    let seq = 1;
    for (let i = 0; i < 70; i++) {
      // Clocks go back too: updatedAt is the latest time seen, not the last one.
      const batch = Array.from({ length: 1 + (i % 9) }, () => {
        seq++;
        return event("long", seq, 5_000 + ((seq * 37) % 700));
      });
      if (i === 40) batch.push({ ...failed("long", ++seq), kind: "store_unavailable" } as RunEvent);
      await appendBoth(0, batch);
      if (i === 20) await appendBoth(1, [event("short", 2, 9_000), completed("short", 3, 9_001)]);
    }
    expect(seq).toBeGreaterThan(300);
    expect(await sqlite.read("long")).toEqual(await memory.read("long"));
    expect(await sqlite.read("long", seq - 3)).toEqual(await memory.read("long", seq - 3));
    await sqlite.close();
    sqlite = new SqliteStore({ path });
    leases.set(sqlite, [await sqlite.acquireLease("long", "w", 60_000)]);
    expect(await answers(sqlite)).toEqual(await answers(memory));
    await appendBoth(0, [event("long", ++seq, 4_000), completed("long", ++seq, 4_001)]);
    expect(await sqlite.getRun("long")).toMatchObject({ status: "completed", lastSeq: seq });
    await sqlite.close();
  });

  it("refuses a durability level it does not know instead of choosing one", () => {
    expect(
      () => new SqliteStore({ path: join(dir, "sync.db"), synchronous: "FULL" as unknown as "full" }),
    ).toThrow(/synchronous must be "normal" or "full"/);
  });

  it("fails only the append it refuses; the others of the same commit are stored", async () => {
    const path = join(dir, "group-refusal.db");
    const store = new SqliteStore({ path });
    const ours = await store.acquireLease("a", "writer", 60_000);
    const theirs = await store.acquireLease("b", "other-writer", 60_000);
    const other = await store.acquireLease("c", "writer", 60_000);
    const outcomes = await Promise.allSettled([
      store.append(ours, [started("a")]),
      store.append({ ...theirs, owner: "writer" }, [started("b")]),
      store.append(other, [started("c"), event("c", 3)]),
      store.append(other, [event("c", 2)]),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "rejected", "rejected"]);
    expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(LeaseConflict);
    expect((outcomes[2] as PromiseRejectedResult).reason.message).toMatch(/gap/);
    const reopened = new SqliteStore({ path });
    expect((await reopened.read("a")).map((e) => e.seq)).toEqual([1]);
    expect(await reopened.read("b")).toEqual([]);
    expect(await reopened.read("c")).toEqual([]);
    await reopened.close();
    await store.close();
  });

  it("fails only the refused append among one run's appends of the same commit", async () => {
    // One run's appends of a tick are stored as one when all is well; a refusal among them
    // must still fail that append alone.
    const path = join(dir, "group-one-run.db");
    const store = new SqliteStore({ path });
    const lease = await store.acquireLease("r", "writer", 60_000);
    const outcomes = await Promise.allSettled([
      store.append(lease, [started("r")]),
      store.append(lease, [event("r", 3)]),
      store.append(lease, [event("r", 2)]),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((outcomes[1] as PromiseRejectedResult).reason.message).toMatch(/gap/);
    const reopened = new SqliteStore({ path });
    expect((await reopened.read("r")).map((e) => e.seq)).toEqual([1, 2]);
    await reopened.close();
    await store.close();
  });

  it("commits each tool_call_started before its tool runs, for runs going at once", async () => {
    const path = join(dir, "group-write-ahead.db");
    const store = new SqliteStore({ path });
    // Another connection sees only what was committed.
    const observer = new SqliteStore({ path });
    const seenAtExecute: string[] = [];
    const probe = tool({
      name: "probe",
      description: "Probe.",
      parameters: z.object({ n: z.number() }),
      execute: async ({ n }, ctx) => {
        const log = await observer.read(ctx.runId);
        const mine = log.find((e) => e.type === "tool_call_started" && e.call.id === ctx.toolCallId);
        seenAtExecute.push(mine ? "stored" : `missing in ${ctx.runId}`);
        return n;
      },
    });
    const script = [1, 2, 3].map((n) => ({ toolCalls: [{ name: "probe", args: { n } }] }));
    const runs = Array.from({ length: 20 }, () =>
      Runner.run(
        new Agent({ name: "a", model: new ScriptedModel([...script, { text: "done" }]), tools: [probe] }),
        "go",
        { store },
      ),
    );
    const results = await Promise.all(runs);
    expect(results.every((r) => r.stopReason === "completed" && r.toolCalls.every((c) => c.ok))).toBe(true);
    expect(seenAtExecute).toEqual(Array.from({ length: 60 }, () => "stored"));
    await observer.close();
    await store.close();
  });

  it("stores a call's end, the next turn and the next call's start in one append", async () => {
    const store = new SqliteStore({ path: join(dir, "one-append-per-call.db") });
    const appends: string[][] = [];
    const append = store.append.bind(store);
    store.append = (lease, events) => {
      appends.push(events.map((e) => e.type));
      return append(lease, events);
    };
    const add = tool({
      name: "add",
      description: "Add.",
      parameters: z.object({ a: z.number(), b: z.number() }),
      execute: async ({ a, b }) => a + b,
    });
    const turns = [1, 2, 3, 4].map((a) => ({ toolCalls: [{ name: "add", args: { a, b: 1 } }] }));
    const result = await Runner.run(
      new Agent({ name: "a", model: new ScriptedModel([...turns, { text: "done" }]), tools: [add] }),
      "go",
      { store },
    );
    expect(result.stopReason).toBe("completed");
    // Each append but the last ends where the run must wait for it: before a tool runs.
    expect(appends.slice(0, -1).map((types) => types.at(-1))).toEqual(Array(4).fill("tool_call_started"));
    expect(appends[1]).toEqual([
      "tool_call_completed",
      "message",
      "turn_completed",
      "turn_started",
      "message",
      "tool_call_requested",
      "tool_call_started",
    ]);
    expect(appends.at(-1)!.at(-1)).toBe("run_completed");
    await store.close();
  });
});

describe("SqliteStore checkpoints on a worker thread", () => {
  it("copies committed pages into the database file long before SQLite's own checkpoint would", async () => {
    const path = join(dir, "checkpointed.db");
    const store = new SqliteStore({ path });
    const lease = await store.acquireLease("r", "writer", 60_000);
    const before = statSync(path).size;
    // 400 commits write a few hundred WAL pages: under the 1,000 at which SQLite checkpoints
    // by itself, inside a commit, on the event loop.
    await store.append(lease, [started("r")]);
    for (let seq = 2; seq <= 400; seq++) await store.append(lease, [event("r", seq)]);
    const deadline = Date.now() + 10_000;
    while (statSync(path).size <= before && Date.now() < deadline) await sleep(20);
    expect(statSync(path).size).toBeGreaterThan(before);
    expect(await store.read("r")).toHaveLength(400);
    await store.close();
    // The worker's connection is closed too: the file opens and reads as usual.
    const reopened = new SqliteStore({ path });
    expect(await reopened.read("r")).toHaveLength(400);
    await reopened.close();
  });

  it("never keeps a process alive whose store was not closed, and checkpoints its own file after a chdir", async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), "quiver-elsewhere-"));
    const { stdout } = await tsx("unclosed-store.ts", [dir, elsewhere]);
    expect(stdout.trim()).toBe("appended, checkpointed");
    // The worker opened the store's file, not one of the same name where the process moved to.
    expect(existsSync(join(elsewhere, "unclosed.db"))).toBe(false);
    rmSync(elsewhere, { recursive: true, force: true });
    const db = new Database(join(dir, "unclosed.db"), { readonly: true });
    const rows = db.prepare("SELECT count(*) AS n FROM quiver_events").get() as { n: number };
    db.close();
    expect(rows.n).toBe(300);
  });
});

describe("a file written by an older Quiver (tables version 1)", () => {
  // tables-v1.db was written by the SqliteStore of commit 832eb00 (tables version 1), through
  // the Runner: "run-completed" (two add calls, one with a long output stored as a payload, then
  // an answer) and "run-interrupted", whose process went away while its charge call ran
  // (tool_call_started stored, no completion). tables-v1.json is what that store answered.
  const old = JSON.parse(readFileSync(join(import.meta.dirname, "fixtures/tables-v1.json"), "utf8"));
  const copyOfOldFile = (name: string) => {
    const path = join(dir, name);
    copyFileSync(join(import.meta.dirname, "fixtures/tables-v1.db"), path);
    return path;
  };
  const withoutLease = ({ leaseOwner, leaseExpiresAt, ...summary }: Record<string, unknown>) => summary;

  it("is migrated when opened: its runs, sessions and events read as the old store read them", async () => {
    const path = copyOfOldFile("v1-read.db");
    const store = new SqliteStore({ path });
    expect((await store.listRuns()).map(withoutLease)).toEqual(old.runs);
    expect(await store.listRuns({ status: "completed" })).toMatchObject([{ runId: "run-completed" }]);
    expect(await store.listSessions()).toEqual(old.sessions);
    expect(await store.read("run-completed")).toEqual(old.events["run-completed"]);
    expect(await store.read("run-interrupted")).toEqual(old.events["run-interrupted"]);
    expect(await store.read("run-interrupted", 10)).toEqual(old.events["run-interrupted"].slice(10));
    await store.close();
    const db = new Database(path);
    expect(db.pragma("user_version", { simple: true })).toBe(2);
    // The dead driver's lease moved too (it has expired, so summaries do not list it).
    expect(db.prepare("SELECT run_id FROM quiver_leases").all()).toEqual([{ run_id: "run-interrupted" }]);
    db.close();
    // Opening it again finds it migrated and reads the same.
    const reopened = new SqliteStore({ path });
    expect(await reopened.read("run-completed")).toEqual(old.events["run-completed"]);
    await reopened.close();
  });

  it("resumes its runs: the finished one returns its result, the interrupted call is not run again", async () => {
    const store = new SqliteStore({ path: copyOfOldFile("v1-resume.db") });
    const charges: number[] = [];
    const add = tool({
      name: "add",
      description: "Add two numbers.",
      parameters: z.object({ a: z.number(), b: z.number() }),
      execute: async ({ a, b }) => a + b,
    });
    const charge = tool({
      name: "charge",
      description: "Charge a card.",
      parameters: z.object({ cents: z.number() }),
      execute: async ({ cents }) => {
        charges.push(cents);
        return "charged";
      },
    });
    const adder = new Agent({ name: "adder", model: new ScriptedModel([]), tools: [add] });
    expect((await Runner.resume(adder, "run-completed", { store }).result()).output).toBe("the sum is 5");

    const biller = new Agent({
      name: "biller",
      model: new ScriptedModel([{ text: "not charged" }]),
      tools: [add, charge],
    });
    const resumed = await Runner.resume(biller, "run-interrupted", { store }).result();
    expect(resumed.stopReason).toBe("completed");
    expect(charges).toEqual([]);
    const log = await store.read("run-interrupted");
    expect(log.slice(0, 12)).toEqual(old.events["run-interrupted"]);
    expect(log.find((e) => e.type === "tool_call_completed" && e.call.name === "charge")).toMatchObject({
      ok: false,
      error: { kind: "interrupted" },
    });
    expect(await store.getRun("run-interrupted")).toMatchObject({ status: "completed", lastSeq: log.length });
    // New runs go on beside the migrated ones.
    const greeter = new Agent({ name: "greeter", model: new ScriptedModel([{ text: "hello again" }]) });
    const fresh = await Runner.run(greeter, "hi", { store, sessionId: "session-1" });
    expect((await store.read(fresh.runId)).at(-1)).toMatchObject({ type: "run_completed" });
    expect(await store.getRun(fresh.runId)).toMatchObject({ status: "completed", sessionId: "session-1" });
    expect((await store.listSessions())[0]).toMatchObject({ sessionId: "session-1", runs: 3 });
    await store.close();
  });

  it("is left unchanged when it cannot be migrated whole", () => {
    const path = copyOfOldFile("v1-orphan.db");
    const db = new Database(path);
    db.prepare("INSERT INTO quiver_events (run_id, seq, version, body) VALUES ('nobody', 1, 1, '{}')").run();
    db.close();
    expect(() => new SqliteStore({ path })).toThrow(/1 event rows of runs it has no summary for/);
    const after = new Database(path);
    expect(after.pragma("user_version", { simple: true })).toBe(1);
    expect((after.prepare("SELECT count(*) AS n FROM quiver_events").get() as { n: number }).n).toBe(33);
    after.close();
  });
});

describe("a file written before runs kept their failure kind (tables version 2, no failure_kind)", () => {
  // The tables as SqliteStore created them before the runs table had failure_kind, when a run
  // stopped by its store was kept `running` (its run_failed left in the tail after last_seq,
  // as that store left a row whose status did not change).
  const OLD_TABLES = `
    CREATE TABLE quiver_runs (
      run_key INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE, session_id TEXT, parent_run_id TEXT, agent TEXT NOT NULL,
      started_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, last_seq INTEGER NOT NULL, status TEXT NOT NULL);
    CREATE INDEX quiver_runs_by_session ON quiver_runs (session_id, started_at);
    CREATE TABLE quiver_events (event_key INTEGER PRIMARY KEY, version INTEGER NOT NULL, body TEXT NOT NULL);
    CREATE TABLE quiver_leases (
      run_id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID;
    CREATE TABLE quiver_artifacts (
      run_id TEXT NOT NULL, key TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY (run_id, key));
    PRAGMA user_version = 2;`;
  const OLD_COLUMNS = "run_key, run_id, agent, started_at, updated_at, last_seq, status";
  const outage = {
    ...failed("outage", 2),
    name: "StoreError",
    message: "ENOSPC: no space left on device",
    kind: "store_unavailable",
  } as RunEvent;

  function oldFile(name: string): string {
    const path = join(dir, name);
    const db = new Database(path);
    db.exec(OLD_TABLES);
    const runs: Array<[string, string, number, RunEvent[]]> = [
      ["outage", "running", 1, [started("outage", { at: 1 }), outage]],
      ["broken", "failed", 2, [started("broken", { at: 2 }), failed("broken", 2)]],
      ["done", "completed", 2, [started("done", { at: 3 }), completed("done", 2)]],
      ["crashed", "running", 1, [started("crashed", { at: 4 })]],
    ];
    const addRun = db.prepare(
      `INSERT INTO quiver_runs (${OLD_COLUMNS}) VALUES (?, ?, 'assistant', ?, ?, ?, ?)`,
    );
    const addEvent = db.prepare("INSERT INTO quiver_events (event_key, version, body) VALUES (?, 1, ?)");
    runs.forEach(([runId, status, lastSeq, events], i) => {
      addRun.run(i + 1, runId, i + 1, i + 1, lastSeq, status);
      for (const e of events) addEvent.run((i + 1) * 2 ** 32 + e.seq, JSON.stringify(e));
    });
    db.close();
    return path;
  }

  it("gets the column when opened, and its summaries then say what the logs end with", async () => {
    const path = oldFile("no-failure-kind.db");
    const store = new SqliteStore({ path });
    expect(await store.getRun("outage")).toMatchObject({
      status: "failed",
      failureKind: "store_unavailable",
      lastSeq: 2,
    });
    expect(await store.getRun("broken")).toMatchObject({ status: "failed", failureKind: "user_error" });
    expect(await store.getRun("done")).not.toHaveProperty("failureKind");
    expect((await store.listRuns({ status: "running" })).map((r) => r.runId)).toEqual(["crashed"]);
    expect((await store.listRuns({ status: "failed" })).map((r) => r.runId)).toEqual(["outage", "broken"]);
    expect(await store.read("outage")).toEqual([started("outage", { at: 1 }), outage]);
    await store.close();

    const db = new Database(path);
    const columns = db.pragma("table_info(quiver_runs)") as Array<{ name: string }>;
    expect(columns.map((c) => c.name)).toContain("failure_kind");
    // Still version 2: an older Quiver sharing the file goes on writing rows, naming its columns.
    expect(db.pragma("user_version", { simple: true })).toBe(2);
    db.prepare(
      `INSERT INTO quiver_runs (${OLD_COLUMNS}) VALUES (9, 'older', 'assistant', 9, 9, 0, 'running')`,
    ).run();
    db.close();
    const reopened = new SqliteStore({ path });
    expect(await reopened.getRun("older")).toMatchObject({ status: "running" });
    expect(await reopened.getRun("outage")).toMatchObject({ failureKind: "store_unavailable" });
    await reopened.close();
  });

  it("Runner.recover resumes the run its store stopped, and the crashed one", async () => {
    const store = new SqliteStore({ path: oldFile("no-failure-kind-recover.db") });
    const agent = new Agent({ name: "assistant", model: new ScriptedModel([{ text: "a" }, { text: "b" }]) });
    const handles = await Runner.recover(store, { assistant: agent });
    expect(handles.map((h) => h.runId)).toEqual(["outage", "crashed"]);
    for (const handle of handles) expect(await handle.result()).toMatchObject({ stopReason: "completed" });
    const resumed = await store.getRun("outage");
    expect(resumed).toMatchObject({ status: "completed" });
    expect(resumed).not.toHaveProperty("failureKind");
    expect(await store.getRun("broken")).toMatchObject({ status: "failed", failureKind: "user_error" });
    await store.close();
  });
});

describe("processes racing on one SQLite file", () => {
  const race = async (mode: "leases" | "append", count: number, owners: string[]) => {
    const path = join(dir, `race-${mode}.db`);
    await new SqliteStore({ path }).close(); // tables exist before the race starts
    const startAt = String(Date.now() + 1_500); // after every process has started
    const outputs = await Promise.all(
      owners.map((owner) => tsx("race-writers.ts", [path, owner, startAt, mode, `${count}`])),
    );
    return { path, results: outputs.map(({ stdout }) => JSON.parse(stdout)) };
  };

  it("gives each run's lease to exactly one process", async () => {
    const { results } = await race("leases", 40, ["p1", "p2", "p3"]);
    const won = (results as number[][]).flat().sort((a, b) => a - b);
    expect(won).toEqual(Array.from({ length: 40 }, (_, i) => i));
  });

  it("never lets two processes write the same seq", async () => {
    // All three share one owner (so all pass the lease check) to race on seq alone.
    const { path, results } = await race("append", 30, ["shared", "shared", "shared"]);
    const store = new SqliteStore({ path });
    const log = await store.read("shared");
    expect(log.map((e) => e.seq)).toEqual(Array.from({ length: 90 }, (_, i) => i + 1));
    expect(new Set(log.map((e) => e.agent)).size).toBe(3);
    expect(results.every((retries) => typeof retries === "number")).toBe(true);
    await store.close();
  });
});
