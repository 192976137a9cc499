/**
 * A session whose run died with its process: the next message goes on from what that run
 * stored, and the dead run is closed with it, so a later recover or resume cannot run it on
 * beside the session (a fork: charges the conversation never sees).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import {
  Agent,
  loadSession,
  type Model,
  type ModelRequest,
  Runner,
  ScriptedModel,
  tool,
  UserError,
} from "quiver-agents";
import { SqliteStore } from "quiver-agents/store";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";

const root = resolve(import.meta.dirname, "../..");
const dir = mkdtempSync(join(tmpdir(), "quiver-session-crash-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function crashChild(db: string, effects: string): Promise<NodeJS.Signals | null> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      ["--import", "tsx", join(root, "test/fixtures/durability/session-crash-agent.ts")],
      { cwd: root, env: { ...process.env, DB: db, EFFECTS: effects }, timeout: 60_000 },
      (error) => done((error as { signal?: NodeJS.Signals } | null)?.signal ?? null),
    );
  });
}

describe("a session after its run's process died", () => {
  it("goes on from what was stored, and the dead run is closed: recover runs nothing of it", async () => {
    const db = join(dir, "shop.db");
    const effects = join(dir, "effects.log");
    writeFileSync(effects, "");
    expect(await crashChild(db, effects)).toBe("SIGKILL");
    expect(readFileSync(effects, "utf8")).toBe("r-crashed:c1:500\n");

    const store = new SqliteStore({ path: db });
    try {
      expect((await store.getRun("r-crashed"))?.status).toBe("running");
      const charged: string[] = [];
      const charge = tool({
        name: "charge",
        description: "Charge the card.",
        parameters: z.object({ cents: z.number() }),
        execute: ({ cents }, ctx) => {
          charged.push(`${ctx.runId}:${ctx.toolCallId}:${cents}`);
          return "charged";
        },
      });
      // The new message's model reads what happened to the charge the dead run made.
      let seen: ModelRequest | undefined;
      const model: Model = {
        name: "reader",
        async *stream(request) {
          seen = request;
          yield { type: "text_delta", delta: "Your first charge may have gone through." };
          yield { type: "finish", reason: "stop" };
        },
      };
      const next = await Runner.run(new Agent({ name: "shop", model, tools: [charge] }), "did it work?", {
        store,
        sessionId: "s",
      });
      expect(next.output).toBe("Your first charge may have gone through.");
      const interrupted = seen!.messages.find((m) => m.role === "tool");
      expect(String(interrupted?.content)).toMatch(
        /charge was interrupted before its result was stored: .*may have taken effect/,
      );

      // The dead run is closed: a supervisor's recover has nothing of it to run.
      expect((await store.getRun("r-crashed"))?.status).toBe("completed");
      const shop = new Agent({ name: "shop", model: new ScriptedModel([{ text: "x" }]), tools: [charge] });
      expect(await Runner.recover(store, { shop })).toEqual([]);
      expect(charged).toEqual([]);
      const said = (await loadSession(store, "s")).map((m) => m.role);
      expect(said).toEqual(["user", "assistant", "tool", "user", "assistant"]);
    } finally {
      await store.close();
    }
  }, 60_000);

  it("a resume of a session's run is refused while another run of the session runs, and stores nothing", async () => {
    const store = new SqliteStore({ path: join(dir, "busy.db") });
    try {
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      const slow: Model = {
        name: "slow",
        async *stream() {
          await held;
          yield { type: "text_delta", delta: "done" };
          yield { type: "finish", reason: "stop" };
        },
      };
      const approve = tool({
        name: "refund",
        description: "Refund.",
        parameters: z.object({}),
        needsApproval: true,
        execute: () => "refunded",
      });
      const parking = new Agent({
        name: "shop",
        model: new ScriptedModel([{ toolCalls: [{ name: "refund", args: {} }] }, { text: "ok" }]),
        tools: [approve],
      });
      const parked = await Runner.run(parking, "refund me", { store, sessionId: "b", runId: "r-parked" });
      expect(parked.stopReason).toBe("awaiting_approval");
      await Runner.decide(store, "r-parked", parked.pending![0]!.id, { approved: true });
      const before = (await store.read("r-parked")).length;

      const running = Runner.run(new Agent({ name: "shop", model: slow }), "meanwhile", {
        store,
        sessionId: "b",
      });
      await new Promise((r) => setTimeout(r, 100));
      const refused = Runner.resume(parking, "r-parked", { store });
      await expect(refused.result()).rejects.toThrow(/session b has another run in progress/);
      await expect(refused.result()).rejects.toBeInstanceOf(UserError);
      expect((await store.read("r-parked")).length).toBe(before);
      release();
      expect((await running).output).toBe("done");
      // Once it ended, the parked run resumes.
      expect((await Runner.resume(parking, "r-parked", { store }).result()).output).toBe("ok");
    } finally {
      await store.close();
    }
  });
});
