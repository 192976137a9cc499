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
