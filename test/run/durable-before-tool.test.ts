/**
 * Write-ahead under load: when a tool starts, the store already holds its run's `run_started`
 * and the call's `tool_call_started`, as any other process reading the store sees them (a
 * second store on the same database). Many runs at once, each with a few calls, so batching,
 * group commits and a busy pool are all in play.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, getRunContext, Runner, ScriptedModel, tool } from "quiver-agents";
import { MemoryStore, PostgresStore, type RunStore, SqliteStore } from "quiver-agents/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type PostgresCluster, startPostgresCluster } from "../store/postgres-cluster.js";

let cluster: PostgresCluster;
const dir = mkdtempSync(join(tmpdir(), "quiver-write-ahead-"));
beforeAll(async () => {
  cluster = await startPostgresCluster();
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs `runs` runs of `calls` calls each at once; each call checks what `reader` holds of its run. */
async function check(writer: RunStore, reader: RunStore, runs: number, calls: number): Promise<string[]> {
  const problems: string[] = [];
  const probe = tool({
    name: "probe",
    description: "Checks the log.",
    parameters: z.object({ n: z.number() }),
    execute: async () => {
      const ctx = getRunContext();
      const log = await reader.read(ctx.runId);
      if (log[0]?.type !== "run_started") problems.push(`${ctx.runId}: run_started not stored`);
      const started = log.some((e) => e.type === "tool_call_started" && e.call.id === ctx.toolCallId);
      if (!started) problems.push(`${ctx.runId}/${ctx.toolCallId}: tool_call_started not stored`);
      return "ok";
    },
  });
  const turns = [
    ...Array.from({ length: calls }, (_, n) => ({ toolCalls: [{ name: "probe", args: { n } }] })),
    { text: "done" },
  ];
  await Promise.all(
    Array.from({ length: runs }, () => {
      const agent = new Agent({ name: "prober", model: new ScriptedModel(turns), tools: [probe] });
      return Runner.run(agent, "go", { store: writer });
    }),
  );
  return problems;
}

describe("a tool starts only once its run and its start are stored", () => {
  it("SqliteStore, 40 runs at once, read by a second connection", async () => {
    const path = join(dir, "runs.db");
    const writer = new SqliteStore({ path });
    const reader = new SqliteStore({ path });
    expect(await check(writer, reader, 40, 3)).toEqual([]);
    await reader.close();
    await writer.close();
  });

  it("PostgresStore, 40 runs at once, read by a second pool", async () => {
    const writer = new PostgresStore({ connectionString: cluster.connectionString, schema: "ahead" });
    const reader = new PostgresStore({ connectionString: cluster.connectionString, schema: "ahead" });
    expect(await check(writer, reader, 40, 3)).toEqual([]);
    await reader.close();
    await writer.close();
  }, 30_000);

  it("a resume racing the start of a run the store does not hold yet takes no lease: the run is not refused", async () => {
    const store = new MemoryStore();
    const agent = new Agent({ name: "racer", model: new ScriptedModel([{ text: "done" }]) });
    const resumed = Runner.resume(agent, "run_race", { store }).result();
    const started = Runner.run(agent, "go", { store, runId: "run_race" });
    await expect(resumed).rejects.toThrow(/the store has no run run_race/);
    expect((await started).stopReason).toBe("completed");
  });
});
