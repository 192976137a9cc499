/**
 * A parked run whose stored `tool_call_requested` row was changed behind the store's back into
 * valid JSON of the wrong shape (`"call": 42`). It was read as it was: `decide` said the call
 * did not exist, resume asked the model again, the CLI printed `undefined`. Every reader must
 * refuse the log with a StoreError naming the run and seq instead.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { Agent, Runner, ScriptedModel, tool } from "quiver-agents";
import { SqliteStore, StoreError } from "quiver-agents/store";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";

const dir = mkdtempSync(join(tmpdir(), "quiver-damaged-event-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const charged: string[] = [];
const agent = () =>
  new Agent({
    name: "billing",
    model: new ScriptedModel([
      { toolCalls: [{ id: "c1", name: "charge", args: { cents: 100 } }] },
      { text: "done" },
    ]),
    tools: [
      tool({
        name: "charge",
        description: "Charges the card.",
        parameters: z.object({ cents: z.number() }),
        needsApproval: true,
        execute: async ({ cents }) => {
          charged.push(String(cents));
          return "charged";
        },
      }),
    ],
  });

describe("a stored event of the wrong shape", () => {
  it("is refused by read, decide and resume with a StoreError naming the run and seq", async () => {
    const path = join(dir, "runs.db");
    const store = new SqliteStore({ path });
    const parked = await Runner.run(agent(), "bill", { store });
    expect(parked.stopReason).toBe("awaiting_approval");
    const requested = (await store.read(parked.runId)).find((e) => e.type === "tool_call_requested")!;
    await store.close();

    // Another connection rewrites the row: still JSON, no longer a tool call.
    const db = new Database(path);
    const { run_key } = db.prepare("SELECT run_key FROM quiver_runs WHERE run_id = ?").get(parked.runId) as {
      run_key: number;
    };
    db.prepare(
      "UPDATE quiver_events SET body = json_set(body, '$.call', 42) WHERE event_key = (? << 32) + ?",
    ).run(run_key, requested.seq);
    db.close();

    const reopened = new SqliteStore({ path });
    const damage = new RegExp(
      `run ${parked.runId}: event seq ${requested.seq} \\(tool_call_requested\\) is damaged: its \`call\` is 42`,
    );
    for (const attempt of [
      () => reopened.read(parked.runId),
      () => Runner.decide(reopened, parked.runId, "c1", true),
      () => Runner.resume(agent(), parked.runId, { store: reopened }).result(),
    ]) {
      const failure = await attempt().catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(StoreError);
      expect(failure).toMatchObject({ retryable: false, runId: parked.runId });
      expect((failure as Error).message).toMatch(damage);
    }
    expect(charged).toEqual([]);
    await reopened.close();
  });
});
