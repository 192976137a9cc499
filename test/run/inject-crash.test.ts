/**
 * A message injected (and a follow-up queued) while a tool runs, then the process dies before
 * the model read them: the resumed run still delivers both, in the places the live run would
 * have — the calls that had not started are skipped for the new message, which goes in before
 * the next model request, and the follow-up when the run would otherwise stop.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Agent, type ModelRequest, Runner, replay, ScriptedModel, tool } from "quiver-agents";
import { SqliteStore } from "quiver-agents/store";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";

const root = resolve(import.meta.dirname, "../..");
const dir = mkdtempSync(join(tmpdir(), "quiver-inject-crash-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function crashChild(db: string): Promise<{ signal: NodeJS.Signals | null; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      ["--import", "tsx", join(root, "test/fixtures/durability/inject-crash-agent.ts")],
      { cwd: root, env: { ...process.env, DB: db }, timeout: 60_000 },
      (error, _stdout, stderr) =>
        done({ signal: (error as { signal?: NodeJS.Signals } | null)?.signal ?? null, stderr }),
    );
  });
}

const text = (m: ModelRequest["messages"][number]) => (typeof m.content === "string" ? m.content : "");

describe("inject() and followUp() across a crash", () => {
  it("are stored when sent, and the resumed run delivers them where the live run would have", async () => {
    const db = join(dir, "runs.db");
    const crashed = await crashChild(db);
    expect(crashed.signal, crashed.stderr).toBe("SIGKILL");

    const store = new SqliteStore({ path: db });
    try {
      const stored = await store.read("r-inject");
      expect(stored.filter((e) => e.type === "message_queued").map((e) => [e.delivery, e.message])).toEqual([
        ["inject", { role: "user", content: "Only look at 2024." }],
        ["followUp", { role: "user", content: "Then summarise in one line." }],
      ]);
      expect(replay(stored).queued).toHaveLength(2);

      const requests: ModelRequest["messages"][] = [];
      const answer = (said: string) => (request: ModelRequest) => {
        requests.push([...request.messages]);
        return { text: said };
      };
      const ran: number[] = [];
      const search = tool({
        name: "search",
        description: "Search the reports.",
        parameters: z.object({ year: z.number() }),
        idempotent: true,
        execute: ({ year }) => {
          ran.push(year);
          return `results for ${year}`;
        },
      });
      const agent = new Agent({
        name: "analyst",
        model: new ScriptedModel([answer("2024 was up 8%."), answer("Up 8% in 2024.")]),
        tools: [search],
      });
      const result = await Runner.resume(agent, "r-inject", { store }).result();

      expect(result).toMatchObject({ stopReason: "completed", output: "Up 8% in 2024." });
      // The call that was running goes on (run again: it is idempotent); the one that had not
      // started when the message came is skipped, as it was live.
      expect(ran).toEqual([2023]);
      const s2 = result.toolCalls.find((r) => r.call.id === "s2");
      expect(s2?.output).toMatch(/a new user message arrived/);
      // The injected message, after the turn's tool results, is the first thing the model reads.
      const first = requests[0]!;
      expect(first.at(-1)).toEqual({ role: "user", content: "Only look at 2024." });
      expect(first.at(-2)).toMatchObject({ role: "tool", toolCallId: "s2" });
      // The follow-up comes when the run would have stopped.
      expect(requests[1]!.map(text).slice(-2)).toEqual(["2024 was up 8%.", "Then summarise in one line."]);
      expect(requests).toHaveLength(2);

      // The log says which queued message went in, so a replay agrees with the live result.
      const log = await store.read("r-inject");
      const delivered = log.filter((e) => e.type === "message" && e.queuedSeq !== undefined);
      const queuedSeqs = log.filter((e) => e.type === "message_queued").map((e) => e.seq);
      expect(delivered.map((e) => (e.type === "message" ? e.queuedSeq : 0))).toEqual(queuedSeqs);
      const state = replay(log);
      expect(state.queued).toEqual([]);
      expect(state.messages).toEqual(result.messages);
    } finally {
      store.close();
    }
  });
});

describe("message_queued", () => {
  it("comes after run_started even for a message sent before the run began, and replay agrees with the live run", async () => {
    const { MemoryStore } = await import("quiver-agents/store");
    const store = new MemoryStore();
    const agent = new Agent({
      name: "a",
      model: new ScriptedModel([{ text: "first" }, { text: "second" }]),
    });
    const handle = Runner.stream(agent, "hello", { store });
    handle.inject("Before you start: be brief.");
    handle.followUp("One more thing.");
    const events = [];
    for await (const event of handle) events.push(event);
    const result = await handle.result();
    expect(events.slice(0, 3).map((e) => e.type)).toEqual([
      "run_started",
      "message_queued",
      "message_queued",
    ]);
    const delivered = events.filter((e) => e.type === "message" && e.queuedSeq !== undefined);
    expect(delivered.map((e) => (e.type === "message" ? e.queuedSeq : 0))).toEqual([2, 3]);
    expect(result.messages.map(text)).toEqual([
      "hello",
      "Before you start: be brief.",
      "first",
      "One more thing.",
      "second",
    ]);
    const stored = replay(await store.read(result.runId));
    expect(stored.messages).toEqual(result.messages);
    expect(stored.queued).toEqual([]);
  });
});

describe("a message sent as the run ends", () => {
  it("is refused once the run has emitted its end, not stored after it", async () => {
    const { MemoryStore } = await import("quiver-agents/store");
    const store = new MemoryStore();
    const handle = Runner.stream(
      new Agent({ name: "a", model: new ScriptedModel([{ text: "bye" }]) }),
      "hi",
      {
        store,
      },
    );
    let refused: unknown;
    for await (const event of handle) {
      if (event.type !== "run_completed") continue;
      try {
        handle.inject("one more thing");
      } catch (error) {
        refused = error;
      }
    }
    const result = await handle.result();
    expect(String(refused)).toMatch(/cannot inject\(\) into run .*: it has ended/);
    const log = await store.read(result.runId);
    expect(log.at(-1)?.type).toBe("run_completed");
    expect(log.some((e) => e.type === "message_queued")).toBe(false);
  });
});
