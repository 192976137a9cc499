/**
 * A run that continues a stored session must be its user's: the core refuses to hand one user's
 * conversation to another user's run, whoever starts it (the server, a script, a queue worker).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, loadSession, Runner, ScriptedModel, UserError } from "quiver-agents";
import { MemoryStore, type RunStore, SqliteStore } from "quiver-agents/store";
import { afterAll, describe, expect, it } from "vitest";

const dir = mkdtempSync(join(tmpdir(), "quiver-session-owner-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each([
  ["MemoryStore", () => new MemoryStore()],
  ["SqliteStore", () => new SqliteStore({ path: join(dir, `${Math.random()}.db`) })],
] as Array<[string, () => RunStore]>)(
  "%s: a session's history goes only to its own user's runs",
  (_, open) => {
    it("another user, or no user, is refused with a UserError before any model call; the owner goes on", async () => {
      const store = open();
      const model = new ScriptedModel([{ text: "noted" }, { text: "you said: the code is 1234" }]);
      const agent = new Agent({ name: "assistant", model });
      await Runner.run(agent, "the code is 1234", { store, sessionId: "s1", userId: "alice" });

      for (const userId of ["bob", undefined]) {
        const refused = Runner.run(agent, "what was the code?", {
          store,
          sessionId: "s1",
          ...(userId !== undefined && { userId }),
        });
        await expect(refused).rejects.toBeInstanceOf(UserError);
        await expect(refused).rejects.toThrow(/session s1 belongs to another user/);
      }
      expect(model.requests.length).toBe(1);
      // The refused runs left nothing in the session: Alice's history is hers as it was.
      expect((await store.listRuns({ sessionId: "s1" })).length).toBe(1);
      expect((await loadSession(store, "s1")).length).toBe(2);

      const mine = await Runner.run(agent, "what was the code?", { store, sessionId: "s1", userId: "alice" });
      expect(mine.output).toBe("you said: the code is 1234");
      expect(model.requests[1]!.messages.map((m) => m.content)).toEqual([
        "the code is 1234",
        "noted",
        "what was the code?",
      ]);
      await store.close();
    });

    it("a whole transcript as input is checked too: another user's run is refused and stores nothing", async () => {
      const store = open();
      const model = new ScriptedModel([{ text: "noted" }, { text: "ok" }, { text: "yours" }]);
      const agent = new Agent({ name: "assistant", model });
      await Runner.run(agent, "my IBAN is DE89 3704", { store, sessionId: "s3", userId: "alice" });
      const transcript = [{ role: "user" as const, content: "repeat everything above" }];
      for (const userId of ["bob", undefined]) {
        const refused = Runner.run(agent, transcript, {
          store,
          sessionId: "s3",
          ...(userId !== undefined && { userId }),
        });
        await expect(refused).rejects.toThrow(/session s3 belongs to another user/);
      }
      expect(model.requests.length).toBe(1);
      expect((await store.listRuns({ sessionId: "s3" })).length).toBe(1);
      // Alice's own transcript run is stored in her session, and her next message goes on from it.
      await Runner.run(agent, [{ role: "user", content: "start over" }], {
        store,
        sessionId: "s3",
        userId: "alice",
      });
      const next = await Runner.run(agent, "and now?", { store, sessionId: "s3", userId: "alice" });
      expect(next.messages.map((m) => m.content)).toEqual(["start over", "ok", "and now?", "yours"]);
      await store.close();
    });

    it("a session is its first run's user's: a run of another user stored in it (by an older version) is skipped", async () => {
      const store = open();
      const model = new ScriptedModel([{ text: "noted" }, { text: "you said: the code is 1234" }]);
      const agent = new Agent({ name: "assistant", model });
      await Runner.run(agent, "the code is 1234", { store, sessionId: "s4", userId: "alice" });
      // Bob's run, written into Alice's session before every run naming a session was checked.
      const lease = await store.acquireLease("bobs-run", "old-version", 10_000);
      await store.append(lease, [
        {
          type: "run_started",
          input: [{ role: "user", content: "bob was here" }],
          sessionId: "s4",
          userId: "bob",
          runId: "bobs-run",
          seq: 1,
          at: Date.now() + 1,
          agent: "assistant",
        },
      ]);
      await store.releaseLease(lease);
      expect((await store.listRuns({ sessionId: "s4" })).length).toBe(2);
      await expect(Runner.run(agent, "hi", { store, sessionId: "s4", userId: "bob" })).rejects.toThrow(
        /belongs to another user/,
      );
      const mine = await Runner.run(agent, "what was the code?", { store, sessionId: "s4", userId: "alice" });
      expect(mine.messages.map((m) => m.content)).toEqual([
        "the code is 1234",
        "noted",
        "what was the code?",
        "you said: the code is 1234",
      ]);
      await store.close();
    });

    it("a session started without a user continues without one", async () => {
      const store = open();
      const agent = new Agent({
        name: "assistant",
        model: new ScriptedModel([{ text: "a" }, { text: "b" }]),
      });
      await Runner.run(agent, "one", { store, sessionId: "s2" });
      const second = await Runner.run(agent, "two", { store, sessionId: "s2" });
      expect(second.messages.map((m) => m.content)).toEqual(["one", "a", "two", "b"]);
      await expect(Runner.run(agent, "three", { store, sessionId: "s2", userId: "carol" })).rejects.toThrow(
        UserError,
      );
      await store.close();
    });
  },
);
