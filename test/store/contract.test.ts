/**
 * The RunStore contract, run against every store: the same test, three implementations.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import type { RunEvent } from "quiver-agents";
import {
  EVENT_SCHEMA_VERSION,
  LeaseConflict,
  leaseOwner,
  type RunStore,
  StoreError,
} from "quiver-agents/store";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  completed,
  event,
  failed,
  memoryHarness,
  postgresHarness,
  type StoreHarness,
  sqliteHarness,
  started,
} from "./harnesses.js";

const LONG = 60_000;

describe.each([memoryHarness, sqliteHarness(), postgresHarness()])(
  "$name keeps the RunStore contract",
  (harness: StoreHarness) => {
    const opened: RunStore[] = [];
    const open = async () => {
      const store = await harness.open();
      opened.push(store);
      return store;
    };
    const sibling = async (store: RunStore) => {
      const other = await harness.openSibling(store);
      opened.push(other);
      return other;
    };
    /** A store holding run `r` with events 1…n, and the lease that wrote them. */
    const storeWithRun = async (n: number, runId = "r") => {
      const store = await open();
      const lease = await store.acquireLease(runId, "writer", LONG);
      await store.append(lease, [started(runId), ...range(2, n).map((seq) => event(runId, seq))]);
      return { store, lease };
    };

    beforeAll(() => harness.setUp(), 60_000);
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((store) => store.close()));
    });
    afterAll(() => harness.tearDown());

    describe("the event log", () => {
      it("reads back what was appended, in order, and from after a seq", async () => {
        const { store, lease } = await storeWithRun(3);
        await store.append(lease, [event("r", 4)]);
        const all = await store.read("r");
        expect(all.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
        expect(all[0]).toEqual(started("r"));
        expect((await store.read("r", 2)).map((e) => e.seq)).toEqual([3, 4]);
        expect(await store.read("r", 4)).toEqual([]);
        expect(await store.read("unknown")).toEqual([]);
      });

      it("never stores a call's raw result, and hands out copies", async () => {
        const store = await open();
        const lease = await store.acquireLease("r", "writer", LONG);
        const call = { id: "c1", name: "add", args: { a: 1 } };
        const done: RunEvent = {
          ...{ type: "tool_call_completed", runId: "r", seq: 2, at: 5, agent: "assistant" },
          ...{ call, ok: true, output: "2", result: { secret: "raw" }, durationMs: 1 },
        };
        await store.append(lease, [started("r"), done]);
        const [, read] = await store.read("r");
        expect(read).toEqual({ ...done, result: undefined });
        expect(read).not.toHaveProperty("result");
        (read as { output: string }).output = "changed";
        expect((await store.read("r"))[1]).toMatchObject({ output: "2" });
      });

      it("refuses a gap or a repeat in seq, and stores nothing of a refused batch", async () => {
        const store = await open();
        const lease = await store.acquireLease("r", "writer", LONG);
        await expect(store.append(lease, [event("r", 2)])).rejects.toThrow(/gap.*next event must be seq 1/);
        await store.append(lease, [started("r"), event("r", 2)]);
        await expect(store.append(lease, [event("r", 2)])).rejects.toThrow(/repeats seq 2/);
        await expect(store.append(lease, [event("r", 3), event("r", 5)])).rejects.toThrow(StoreError);
        await expect(store.append(lease, [event("r", 3), event("r", 3)])).rejects.toThrow(/repeats seq 3/);
        expect((await store.read("r")).map((e) => e.seq)).toEqual([1, 2]);
        expect((await store.getRun("r"))?.lastSeq).toBe(2);
        await store.append(lease, [event("r", 3)]);
        expect((await store.read("r")).map((e) => e.seq)).toEqual([1, 2, 3]);
      });

      it("refuses events of another run", async () => {
        const store = await open();
        const lease = await store.acquireLease("r", "writer", LONG);
        await expect(store.append(lease, [started("other")])).rejects.toThrow(
          /event of run other .* to run r/,
        );
      });

      it("refuses a bad afterSeq", async () => {
        const { store } = await storeWithRun(1);
        await expect(store.read("r", -1)).rejects.toThrow(StoreError);
        await expect(store.read("r", 1.5)).rejects.toThrow(StoreError);
      });
    });

    describe("large payloads are stored once", () => {
      const args = { document: "x".repeat(5_000), n: 1 };
      const call = { id: "c1", name: "upload", args };
      const callEvents = (runId: string): RunEvent[] => [
        started(runId),
        { type: "tool_call_requested", runId, seq: 2, at: 2, agent: "assistant", call, index: 0 },
        { type: "tool_call_started", runId, seq: 3, at: 3, agent: "assistant", call, attempt: 1 },
        {
          ...{ type: "tool_call_completed", runId, seq: 4, at: 4, agent: "assistant", call, ok: true },
          ...{ output: "y".repeat(3_000), details: { echo: args.document }, durationMs: 1 },
        },
      ];

      it("reads back events that carry them exactly as appended, from any seq", async () => {
        const store = await open();
        const lease = await store.acquireLease("r", "writer", LONG);
        const events = callEvents("r");
        await store.append(lease, events.slice(0, 2));
        await store.append(lease, events.slice(2));
        expect(await store.read("r")).toEqual(events);
        expect(await store.read("r", 3)).toEqual(events.slice(3));
        expect(await (await sibling(store)).read("r", 1)).toEqual(events.slice(1));
      });

      it("a session's runs share what they carry: every run reads back whole, before and after another session is cleared", async () => {
        const store = await open();
        const inSession = (runId: string, sessionId: string): RunEvent[] => {
          const events = callEvents(runId);
          events[0] = started(runId, { sessionId });
          return events;
        };
        const write = async (runId: string, sessionId: string) => {
          const lease = await store.acquireLease(runId, "writer", LONG);
          await store.append(lease, inSession(runId, sessionId).slice(0, 2));
          await store.append(lease, inSession(runId, sessionId).slice(2));
        };
        await write("a1", "chat-a");
        await write("a2", "chat-a");
        await write("b1", "chat-b");
        const reader = await sibling(store);
        for (const [runId, sessionId] of [
          ["a1", "chat-a"],
          ["a2", "chat-a"],
          ["b1", "chat-b"],
        ] as const) {
          expect(await reader.read(runId)).toEqual(inSession(runId, sessionId));
          expect(await reader.read(runId, 2)).toEqual(inSession(runId, sessionId).slice(2));
        }
        // Clearing one session leaves another that carried the same payload whole, and the
        // cleared session can start again with it.
        await store.clearSession("chat-a");
        expect(await reader.read("a1")).toEqual([]);
        expect(await reader.read("b1")).toEqual(inSession("b1", "chat-b"));
        await write("a3", "chat-a");
        expect(await reader.read("a3")).toEqual(inSession("a3", "chat-a"));
      });

      it("refuses a log whose payload was altered or lost, naming the run and seq", async () => {
        const store = await open();
        const lease = await store.acquireLease("r", "writer", LONG);
        await store.append(lease, callEvents("r"));
        const key = `quiver:payload:${createHash("sha256").update(JSON.stringify(args)).digest("hex")}`;
        expect(await store.getArtifact("r", key)).toBe(JSON.stringify(args));
        await store.putArtifact("r", key, JSON.stringify({ ...args, n: 2 }));
        await expect(store.read("r")).rejects.toThrow(
          /run r: event seq 2 is damaged: its payload .* does not match/,
        );
      });
    });

    describe("damaged rows are errors naming the run and seq, never skipped", () => {
      const expectDamage = async (store: RunStore, pattern: RegExp) => {
        const error = await store.read("r").catch((e: unknown) => e);
        expect(error).toBeInstanceOf(StoreError);
        expect((error as StoreError).runId).toBe("r");
        expect((error as Error).message).toMatch(pattern);
        // Reading from before the damage fails too; from after it, the intact rows still read.
        await expect(store.read("r", 1)).rejects.toThrow(StoreError);
        expect((await store.read("r", 2)).map((e) => e.seq)).toEqual([3]);
      };

      it("a row that cannot be decoded", async () => {
        const { store } = await storeWithRun(3);
        await harness.damage(store, "r", 2, { body: '{"type":"text_del' });
        await expectDamage(store, /run r: event seq 2 is damaged and cannot be decoded/);
      });

      it("a row of an unknown schema version", async () => {
        const { store } = await storeWithRun(3);
        await harness.damage(store, "r", 2, { version: EVENT_SCHEMA_VERSION + 1 });
        await expectDamage(
          store,
          new RegExp(`run r: event seq 2 is stored in event schema version ${EVENT_SCHEMA_VERSION + 1}`),
        );
      });

      it("a row that decodes to something other than this event", async () => {
        const { store } = await storeWithRun(3);
        await harness.damage(store, "r", 2, { body: JSON.stringify(event("r", 7)) });
        await expectDamage(store, /run r: event seq 2 is damaged: it carries seq 7/);
        await harness.damage(store, "r", 2, { body: "[1,2]" });
        await expectDamage(store, /run r: event seq 2 is damaged: it is not an event object/);
      });

      it("a row that is JSON of the wrong shape for its type", async () => {
        const { store } = await storeWithRun(3);
        const requested = { type: "tool_call_requested", runId: "r", seq: 2, at: 1_002, agent: "assistant" };
        await harness.damage(store, "r", 2, { body: JSON.stringify({ ...requested, call: 42, index: 0 }) });
        await expectDamage(
          store,
          /run r: event seq 2 \(tool_call_requested\) is damaged: its `call` is 42, not a tool call/,
        );
        await harness.damage(store, "r", 2, { body: JSON.stringify({ ...requested, index: 0 }) });
        await expectDamage(
          store,
          /run r: event seq 2 \(tool_call_requested\) is damaged: its `call` is missing/,
        );
        const message = { role: "user", content: { text: "hi" } };
        await harness.damage(store, "r", 2, {
          body: JSON.stringify({ ...event("r", 2), type: "message", message }),
        });
        await expectDamage(store, /run r: event seq 2 \(message\) is damaged: its `message` is \{"role"/);
      });

      it("an event of a type this Quiver does not know (a newer Quiver's)", async () => {
        const { store } = await storeWithRun(3);
        await harness.damage(store, "r", 2, {
          body: JSON.stringify({ ...event("r", 2), type: "run_teleported" }),
        });
        await expectDamage(
          store,
          /run r: event seq 2 has type "run_teleported", which this Quiver does not know: it was written by a newer Quiver/,
        );
      });

      it("a missing row", async () => {
        const { store } = await storeWithRun(3);
        await harness.damage(store, "r", 2, { remove: true });
        await expectDamage(store, /run r: event seq 2 is missing/);
      });

      it("a missing last row", async () => {
        const { store } = await storeWithRun(3);
        await harness.damage(store, "r", 3, { remove: true });
        await expect(store.read("r")).rejects.toThrow(/run r: event seq 3 is missing/);
      });
    });

    describe("leases: one writer per run", () => {
      it("refuses a second owner while the first holds the lease, and lets the holder re-acquire", async () => {
        const store = await open();
        const first = await store.acquireLease("r", "a", LONG);
        expect(first).toMatchObject({ runId: "r", owner: "a" });
        expect(first.expiresAt).toBeGreaterThan(Date.now() + LONG - 5_000);
        const conflict = await store.acquireLease("r", "b", LONG).catch((e: unknown) => e);
        expect(conflict).toBeInstanceOf(LeaseConflict);
        expect(conflict).toMatchObject({ runId: "r", owner: "a", expiresAt: first.expiresAt });
        expect((conflict as Error).message).toMatch(
          /run r is being driven by another process \(lease owner a/,
        );
        await expect(store.acquireLease("r", "a", LONG)).resolves.toMatchObject({ owner: "a" });
        await expect(store.acquireLease("other-run", "b", LONG)).resolves.toMatchObject({ owner: "b" });
      });

      it("needs the current lease to append", async () => {
        const store = await open();
        const fake = { runId: "r", owner: "a", expiresAt: Date.now() + LONG };
        await expect(store.append(fake, [started("r")])).rejects.toThrow(/a does not hold the run's lease/);
        await expect(store.append(fake, [])).rejects.toThrow(StoreError);
        await store.acquireLease("r", "b", LONG);
        await expect(store.append(fake, [started("r")])).rejects.toThrow(LeaseConflict);
        expect(await store.read("r")).toEqual([]);
      });

      it("lets an expired lease be taken over, after which the old holder cannot write", async () => {
        const store = await open();
        const old = await store.acquireLease("r", "crashed", 30);
        await store.append(old, [started("r")]);
        await sleep(80);
        const taken = await store.acquireLease("r", "rescuer", LONG);
        await expect(store.append(old, [event("r", 2)])).rejects.toThrow(LeaseConflict);
        await expect(store.renewLease(old, LONG)).rejects.toThrow(LeaseConflict);
        await store.append(taken, [event("r", 2)]);
        expect((await store.read("r")).map((e) => e.seq)).toEqual([1, 2]);
      });

      it("says with each lease whether the run is stored (a redelivered job resumes instead of starting over)", async () => {
        const store = await open();
        const first = await store.acquireLease("r", "a", LONG);
        expect(first.stored).toBe(false);
        await store.append(first, [started("r")]);
        await store.releaseLease(first);
        expect((await store.acquireLease("r", "b", LONG)).stored).toBe(true);
        // A takeover of an expired lease says it too.
        const old = await store.acquireLease("other", "crashed", 30);
        await store.append(old, [started("other")]);
        await sleep(80);
        expect((await store.acquireLease("other", "rescuer", LONG)).stored).toBe(true);
        expect((await store.acquireLease("never-started", "c", LONG)).stored).toBe(false);
      });

      it("refuses writes and renewal on an expired lease nobody took over", async () => {
        const store = await open();
        const lease = await store.acquireLease("r", "slow", 30);
        await sleep(80);
        await expect(store.append(lease, [started("r")])).rejects.toThrow(/lease of slow expired/);
        await expect(store.renewLease(lease, LONG)).rejects.toThrow(/lease of slow expired/);
        const again = await store.acquireLease("r", "slow", LONG);
        await store.append(again, [started("r")]);
      });

      it("renews a lease for a new ttl", async () => {
        const store = await open();
        const lease = await store.acquireLease("r", "a", LONG);
        const longer = await store.renewLease(lease, 2 * LONG);
        expect(longer.expiresAt).toBeGreaterThan(lease.expiresAt);
        const shorter = await store.renewLease(longer, 30);
        expect(shorter.expiresAt).toBeLessThan(lease.expiresAt);
        await sleep(80);
        await expect(store.acquireLease("r", "b", LONG)).resolves.toMatchObject({ owner: "b" });
      });

      it("frees a released lease, and releasing someone else's lease does nothing", async () => {
        const store = await open();
        const a = await store.acquireLease("r", "a", LONG);
        await store.releaseLease({ ...a, owner: "stranger" });
        await expect(store.acquireLease("r", "b", LONG)).rejects.toThrow(LeaseConflict);
        await store.releaseLease(a);
        await expect(store.append(a, [started("r")])).rejects.toThrow(StoreError);
        await expect(store.acquireLease("r", "b", LONG)).resolves.toMatchObject({ owner: "b" });
      });

      it("frees at once the lease of a process on this machine that no longer exists, not a live one's", async () => {
        const store = await open();
        const dead = await deadProcessOwner();
        await store.acquireLease("r", dead, LONG);
        const taken = await store.acquireLease("r", leaseOwner(), LONG);
        expect(taken.expiresAt).toBeGreaterThan(Date.now() + LONG - 5_000);
        // This process is alive: its lease holds, whichever driver of it asks.
        const conflict = await store.acquireLease("r", leaseOwner(), LONG).catch((e: unknown) => e);
        expect(conflict).toBeInstanceOf(LeaseConflict);
        expect(conflict).toMatchObject({ owner: taken.owner });
      });

      it("gives a lease to exactly one of many owners racing for it", async () => {
        const store = await open();
        const other = await sibling(store);
        const attempts = range(1, 8).map((i) =>
          (i % 2 ? store : other).acquireLease("r", `owner-${i}`, LONG),
        );
        const outcomes = await Promise.allSettled(attempts);
        const won = outcomes.filter((o) => o.status === "fulfilled");
        expect(won).toHaveLength(1);
        for (const o of outcomes) if (o.status === "rejected") expect(o.reason).toBeInstanceOf(LeaseConflict);
      });

      it("refuses a lease without an owner or a positive ttl", async () => {
        const store = await open();
        await expect(store.acquireLease("r", "", LONG)).rejects.toThrow(StoreError);
        await expect(store.acquireLease("r", "a", 0)).rejects.toThrow(/positive ttlMs/);
        await expect(store.acquireLease("", "a", LONG)).rejects.toThrow(StoreError);
      });
    });

    describe("runs and sessions", () => {
      it("summarises a run from its events", async () => {
        const store = await open();
        expect(await store.getRun("r")).toBeUndefined();
        const lease = await store.acquireLease("r", "w", LONG);
        await store.append(lease, [started("r", { sessionId: "s", agent: "planner", at: 500 })]);
        expect(await store.getRun("r")).toEqual({
          ...{ runId: "r", sessionId: "s", agent: "planner" },
          ...{ startedAt: 500, updatedAt: 500, lastSeq: 1, status: "running" },
          ...{ leaseOwner: "w", leaseExpiresAt: lease.expiresAt },
        });
        await store.append(lease, [event("r", 2, 600), completed("r", 3, 700)]);
        expect(await store.getRun("r")).toMatchObject({ lastSeq: 3, updatedAt: 700, status: "completed" });
        const other = await store.acquireLease("f", "w", LONG);
        await store.append(other, [started("f"), failed("f", 2)]);
        const summary = await store.getRun("f");
        expect(summary).toMatchObject({ status: "failed", failureKind: "user_error", agent: "assistant" });
        expect(summary).not.toHaveProperty("sessionId");
        expect(summary).not.toHaveProperty("parentRunId");
      });

      it("tracks parked and resumed runs; a store outage is a failure that says it is resumable", async () => {
        const store = await open();
        const lease = await store.acquireLease("p", "w", LONG);
        const base = { runId: "p", agent: "assistant", at: 1_000 };
        await store.append(lease, [started("p"), { ...base, seq: 2, type: "run_parked", pending: [] }]);
        expect(await store.getRun("p")).toMatchObject({ status: "parked" });
        await store.append(lease, [{ ...base, seq: 3, type: "run_resumed", fromSeq: 2 }]);
        expect(await store.getRun("p")).toMatchObject({ status: "running" });
        const outage = { name: "StoreError", message: "ENOSPC", kind: "store_unavailable" as const };
        await store.append(lease, [{ ...base, seq: 4, type: "run_failed", ...outage }]);
        // The summary says what the log ends with, and another process reads the same.
        const other = await sibling(store);
        for (const reader of [store, other]) {
          expect(await reader.getRun("p")).toMatchObject({
            status: "failed",
            failureKind: "store_unavailable",
          });
          expect(await reader.listRuns({ status: "failed" })).toMatchObject([
            { runId: "p", failureKind: "store_unavailable" },
          ]);
          expect(await reader.listRuns({ status: "running" })).toEqual([]);
        }
        await store.append(lease, [{ ...base, seq: 5, type: "run_resumed", fromSeq: 4 }]);
        for (const reader of [store, other]) {
          const resumed = await reader.getRun("p");
          expect(resumed).toMatchObject({ status: "running", lastSeq: 5 });
          expect(resumed).not.toHaveProperty("failureKind");
          expect((await reader.listRuns({ status: "running" })).map((r) => r.runId)).toEqual(["p"]);
          expect(await reader.listRuns({ status: "failed" })).toEqual([]);
        }
        await store.append(lease, [completed("p", 6)]);
        const done = await other.getRun("p");
        expect(done).toMatchObject({ status: "completed" });
        expect(done).not.toHaveProperty("failureKind");
      });

      it("lists runs by status, with the lease of those being driven", async () => {
        const store = await open();
        const statuses: Array<[string, RunEvent | undefined]> = [
          ["done", completed("done", 2)],
          ["broken", failed("broken", 2)],
          [
            "waiting",
            { runId: "waiting", seq: 2, at: 1_002, agent: "assistant", type: "run_parked", pending: [] },
          ],
          ["busy", undefined],
        ];
        let at = 100;
        for (const [runId, end] of statuses) {
          const lease = await store.acquireLease(runId, `driver-${runId}`, LONG);
          await store.append(lease, [started(runId, { at: at++ }), ...(end ? [end] : [])]);
          if (runId !== "busy") await store.releaseLease(lease);
        }
        const ids = async (filter: Parameters<RunStore["listRuns"]>[0]) =>
          (await store.listRuns(filter)).map((r) => r.runId);
        expect(await ids({ status: "running" })).toEqual(["busy"]);
        expect(await ids({ status: "parked" })).toEqual(["waiting"]);
        expect(await ids({ status: ["completed", "failed"] })).toEqual(["done", "broken"]);
        expect(await ids({ status: "failed", sessionId: "none" })).toEqual([]);
        const [busy] = await store.listRuns({ status: "running" });
        expect(busy).toMatchObject({ leaseOwner: "driver-busy" });
        expect(busy!.leaseExpiresAt).toBeGreaterThan(Date.now());
        const [done] = await store.listRuns({ status: "completed" });
        expect(done).not.toHaveProperty("leaseOwner");
        expect(done).not.toHaveProperty("leaseExpiresAt");
        await expect(store.listRuns({ status: "finished" as never })).rejects.toThrow(
          /unknown status "finished"/,
        );
      });

      it("lists runs started in the same millisecond in the order they were stored, not by id", async () => {
        // A session continues from its last run: listed swapped, it would lose the last exchange.
        const store = await open();
        for (const runId of ["z-first", "m-second", "a-third"]) {
          const lease = await store.acquireLease(runId, "writer", LONG);
          await store.append(lease, [started(runId, { sessionId: "same-ms", at: 1_000 })]);
        }
        const ids = (await store.listRuns({ sessionId: "same-ms" })).map((r) => r.runId);
        expect(ids).toEqual(["z-first", "m-second", "a-third"]);
        const other = await sibling(store);
        expect((await other.listRuns({ sessionId: "same-ms" })).map((r) => r.runId)).toEqual(ids);
      });

      it("marks a child run with its parent, so a session can be continued from its root runs", async () => {
        const store = await open();
        const lease = await store.acquireLease("child", "w", LONG);
        await store.append(lease, [{ ...started("child", { sessionId: "s" }), parentRunId: "root" }]);
        expect(await store.getRun("child")).toMatchObject({ sessionId: "s", parentRunId: "root" });
        expect((await store.listRuns({ sessionId: "s" }))[0]).toMatchObject({ parentRunId: "root" });
      });

      it("lists a session's top-level runs, or only their first and last ones, in the order of the whole list", async () => {
        // What a session's next message needs (its owner's first run, its latest run), however
        // many runs lie between; runs started in the same millisecond keep their stored order.
        const store = await open();
        const runs: Array<[string, number, string?]> = [
          ["r1", 100],
          ["r1-child", 150, "r1"],
          ["r2", 200],
          ["r3", 300],
          ["r4", 300],
          ["r4-child", 400, "r4"],
          ["r5", 300],
        ];
        for (const [runId, at, parentRunId] of runs) {
          const lease = await store.acquireLease(runId, "w", LONG);
          await store.append(lease, [
            { ...started(runId, { sessionId: "long", at }), ...(parentRunId && { parentRunId }) },
          ]);
        }
        const ids = async (filter: Parameters<RunStore["listRuns"]>[0]) =>
          (await store.listRuns(filter)).map((r) => r.runId);
        expect(await ids({ sessionId: "long" })).toEqual([
          "r1",
          "r1-child",
          "r2",
          "r3",
          "r4",
          "r5",
          "r4-child",
        ]);
        expect(await ids({ sessionId: "long", topLevel: true })).toEqual(["r1", "r2", "r3", "r4", "r5"]);
        expect(await ids({ sessionId: "long", topLevel: true, first: 1, last: 2 })).toEqual([
          "r1",
          "r4",
          "r5",
        ]);
        expect(await ids({ sessionId: "long", topLevel: true, last: 1 })).toEqual(["r5"]);
        expect(await ids({ sessionId: "long", first: 2 })).toEqual(["r1", "r1-child"]);
        expect(await ids({ sessionId: "long", topLevel: true, first: 4, last: 4 })).toEqual([
          "r1",
          "r2",
          "r3",
          "r4",
          "r5",
        ]);
        expect(await ids({ sessionId: "long", first: 0, last: 0 })).toEqual([]);
        expect(await ids({ sessionId: "long", status: "completed", last: 3 })).toEqual([]);
        await expect(store.listRuns({ last: -1 })).rejects.toThrow(/last must be a whole number/);
        await expect(store.listRuns({ first: 1.5 })).rejects.toThrow(StoreError);
      });

      it("lists runs oldest first, optionally of one session, and lists sessions", async () => {
        const store = await open();
        const runs = [
          { runId: "b", sessionId: "s1", at: 300 },
          { runId: "a", sessionId: "s2", at: 100 },
          { runId: "c", sessionId: "s1", at: 200 },
          { runId: "d", at: 50 },
        ];
        for (const { runId, sessionId, at } of runs) {
          const lease = await store.acquireLease(runId, "w", LONG);
          await store.append(lease, [
            started(runId, { ...(sessionId && { sessionId }), at }),
            event(runId, 2, at + 10),
          ]);
        }
        expect((await store.listRuns()).map((r) => r.runId)).toEqual(["d", "a", "c", "b"]);
        expect((await store.listRuns({ sessionId: "s1" })).map((r) => r.runId)).toEqual(["c", "b"]);
        expect(await store.listRuns({ sessionId: "none" })).toEqual([]);
        expect(await store.listSessions()).toEqual([
          { sessionId: "s2", runs: 1, startedAt: 100, updatedAt: 110 },
          { sessionId: "s1", runs: 2, startedAt: 200, updatedAt: 310 },
        ]);
      });

      it("clears a session: its runs' events, leases and artifacts go, other runs stay", async () => {
        const store = await open();
        for (const [runId, sessionId] of [
          ["x1", "s"],
          ["x2", "s"],
          ["y", "other"],
        ] as const) {
          const lease = await store.acquireLease(runId, "w", LONG);
          await store.append(lease, [started(runId, { sessionId }), event(runId, 2)]);
          await store.putArtifact(runId, "call-1", `full text of ${runId}`);
        }
        await store.clearSession("s");
        expect(await store.listSessions()).toMatchObject([{ sessionId: "other", runs: 1 }]);
        expect((await store.listRuns()).map((r) => r.runId)).toEqual(["y"]);
        expect(await store.read("x1")).toEqual([]);
        expect(await store.getRun("x2")).toBeUndefined();
        expect(await store.getArtifact("x1", "call-1")).toBeUndefined();
        // The lease went too: another owner may start the run afresh from seq 1.
        const fresh = await store.acquireLease("x1", "someone-else", LONG);
        await store.append(fresh, [started("x1")]);
        expect(await store.getArtifact("y", "call-1")).toBe("full text of y");
        expect(await store.read("y")).toHaveLength(2);
        await store.clearSession("no-such-session");
      });
    });

    describe("artifacts, sharing and closing", () => {
      it("stores, overwrites and reads artifacts by run and key", async () => {
        const store = await open();
        const big = "x".repeat(300_000) + "é\u0000end";
        await store.putArtifact("r", "c1", big);
        await store.putArtifact("r", "c2", "second");
        expect(await store.getArtifact("r", "c1")).toBe(big);
        await store.putArtifact("r", "c2", "replaced");
        expect(await store.getArtifact("r", "c2")).toBe("replaced");
        expect(await store.getArtifact("r", "c3")).toBeUndefined();
        expect(await store.getArtifact("other", "c1")).toBeUndefined();
      });

      it("shares one log between two stores on the same data", async () => {
        const { store, lease } = await storeWithRun(2);
        const other = await sibling(store);
        expect((await other.read("r")).map((e) => e.seq)).toEqual([1, 2]);
        await expect(other.acquireLease("r", "intruder", LONG)).rejects.toThrow(LeaseConflict);
        await other.append(lease, [event("r", 3)]);
        expect((await store.read("r")).map((e) => e.seq)).toEqual([1, 2, 3]);
      });

      it("refuses every operation once closed", async () => {
        const { store, lease } = await storeWithRun(1);
        await store.close();
        await store.close();
        await expect(store.read("r")).rejects.toThrow(/closed/);
        await expect(store.append(lease, [event("r", 2)])).rejects.toThrow(StoreError);
        await expect(store.acquireLease("r2", "a", LONG)).rejects.toThrow(StoreError);
        await expect(store.listRuns()).rejects.toThrow(StoreError);
        await expect(store.getArtifact("r", "k")).rejects.toThrow(StoreError);
      });
    });
  },
);

function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);
}

/** A lease owner id of a process that ran on this machine and has exited (and been reaped). */
async function deadProcessOwner(): Promise<string> {
  const child = spawn(process.execPath, ["-e", "0"], { stdio: "ignore" });
  const pid = child.pid!;
  await once(child, "exit");
  const [host, , nonce, machine] = leaseOwner().split(":");
  return [host, String(pid), nonce, machine].filter((part) => part !== undefined).join(":");
}
