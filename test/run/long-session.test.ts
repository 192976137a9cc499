/**
 * A chat kept for months is one session of thousands of runs. Its next message needs the
 * session's owner (its first run) and its conversation (its latest run), not every run in
 * between: listing them all made each message cost more than the one before.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, Runner, ScriptedModel } from "quiver-agents";
import { type RunFilter, type RunStore, SqliteStore } from "quiver-agents/store";
import { afterAll, describe, expect, it } from "vitest";

const dir = mkdtempSync(join(tmpdir(), "quiver-long-session-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What a store was asked while `body` ran: run summaries listed, runs read. */
async function counting(store: RunStore, body: () => Promise<unknown>) {
  let listed = 0;
  const reads: string[] = [];
  const listRuns = store.listRuns.bind(store);
  const read = store.read.bind(store);
  store.listRuns = async (filter?: RunFilter) => {
    const runs = await listRuns(filter);
    listed += runs.length;
    return runs;
  };
  store.read = async (runId: string, afterSeq?: number) => {
    reads.push(runId);
    return read(runId, afterSeq);
  };
  try {
    await body();
  } finally {
    store.listRuns = listRuns;
    store.read = read;
  }
  return { listed, reads };
}

describe("a session of many runs", () => {
  it("starts its next message from its ends: a few run summaries and one run read, whatever its length", async () => {
    const store = new SqliteStore({ path: join(dir, "chat.db") });
    const turns = 150;
    const replies = Array.from({ length: turns + 1 }, (_, i) => ({ text: `reply ${i}` }));
    const model = new ScriptedModel(replies);
    const agent = new Agent({ name: "assistant", model });
    for (let i = 0; i < turns; i++)
      await Runner.run(agent, `message ${i}`, { store, sessionId: "s", userId: "ann" });

    const { listed, reads } = await counting(store, () =>
      Runner.run(agent, "and now?", { store, sessionId: "s", userId: "ann" }),
    );
    expect(listed).toBeLessThanOrEqual(3);
    // The latest run's log, and at most once the first run's (its owner, then remembered).
    expect(reads.length).toBeLessThanOrEqual(2);
    // The whole conversation went on: the first message is still in the model's request.
    const request = model.requests.at(-1)!.messages;
    expect(request.length).toBe(2 * turns + 1);
    expect(JSON.stringify(request[0])).toContain("message 0");
    expect(JSON.stringify(request.at(-1))).toContain("and now?");
    await store.close();
  });
});
