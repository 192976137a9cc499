/**
 * A sub-agent (an idempotent agent tool) cut off by a crash: the parent's resume runs the call
 * again, and the sub-agent goes on from its own log — a charge it had completed is not made
 * again, and each charge keeps its idempotency key.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { SqliteStore } from "quiver-agents/store";
import { afterAll, describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const dir = mkdtempSync(join(tmpdir(), "quiver-child-crash-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function child(env: Record<string, string>): Promise<{ signal: NodeJS.Signals | null; stdout: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      ["--import", "tsx", join(root, "test/fixtures/durability/child-crash-agent.ts")],
      { cwd: root, env: { ...process.env, ...env }, timeout: 60_000 },
      (error, stdout) =>
        done({ signal: (error as { signal?: NodeJS.Signals } | null)?.signal ?? null, stdout }),
    );
  });
}

describe("a sub-agent cut off by a crash", () => {
  it("is resumed with its parent's call: completed charges are not made again, keys stay the same", async () => {
    const env = { DB: join(dir, "bill.db"), EFFECTS: join(dir, "effects.log") };
    writeFileSync(env.EFFECTS, "");
    expect((await child({ ...env, MODE: "start", KILL: "1" })).signal).toBe("SIGKILL");
    const resumed = await child({ ...env, MODE: "resume" });
    expect(resumed.signal).toBeNull();
    expect(JSON.parse(resumed.stdout)).toMatchObject({ output: "Done.", calls: ["Billed 500 and 700."] });

    // Each charge once, under the key the sub-agent's run gave it: the completed 500 was not made
    // again, and the 700 cut off mid-call (its tool is not idempotent) was not re-run either.
    const charges = readFileSync(env.EFFECTS, "utf8").trim().split("\n");
    expect(charges).toEqual(["r-parent.p1:b1:500", "r-parent.p1:b2:700"]);

    const store = new SqliteStore({ path: env.DB });
    try {
      const runs = await store.listRuns();
      expect(runs.map((r) => [r.runId, r.status])).toEqual([
        ["r-parent", "completed"],
        ["r-parent.p1", "completed"],
      ]);
      const childEvents = await store.read("r-parent.p1");
      expect(childEvents.filter((e) => e.type === "run_resumed")).toHaveLength(1);
      const b2 = childEvents.find((e) => e.type === "tool_call_completed" && e.call.id === "b2");
      expect(b2).toMatchObject({ ok: false, error: { kind: "interrupted" } });
    } finally {
      await store.close();
    }
  }, 60_000);

  it("under an agent tool that is not idempotent, is closed when its parent's call is interrupted", async () => {
    const env = { DB: join(dir, "bill-once.db"), EFFECTS: join(dir, "effects-once.log"), IDEMPOTENT: "0" };
    writeFileSync(env.EFFECTS, "");
    expect((await child({ ...env, MODE: "start", KILL: "1" })).signal).toBe("SIGKILL");
    const resumed = await child({ ...env, MODE: "resume" });
    expect(JSON.parse(resumed.stdout).calls[0]).toMatch(/biller was interrupted by a restart/);
    expect(readFileSync(env.EFFECTS, "utf8").trim().split("\n")).toEqual([
      "r-parent.p1:b1:500",
      "r-parent.p1:b2:700",
    ]);
    const store = new SqliteStore({ path: env.DB });
    try {
      // Not left running for a later resume to act for a parent that moved on.
      expect((await store.listRuns()).map((r) => [r.runId, r.status])).toEqual([
        ["r-parent", "completed"],
        ["r-parent.p1", "completed"],
      ]);
      const end = (await store.read("r-parent.p1")).at(-1);
      expect(end).toMatchObject({ type: "run_completed", stopReason: "cancelled" });
    } finally {
      await store.close();
    }
  }, 60_000);
});
