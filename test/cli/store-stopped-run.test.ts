import { join } from "node:path";
import type { RunEvent } from "quiver-agents";
import { SqliteStore } from "quiver-agents/store";
import { describe, expect, it } from "vitest";
import { cliProjects, quiver } from "./binary.js";

const cli = cliProjects(["chatty-agent.mjs"]);

/** A project whose store holds run `stopped`: the user said hello, then the disk filled up. */
async function projectWithStoppedRun(): Promise<{ cwd: string; store: string[] }> {
  const cwd = cli.project(["chatty-agent.mjs"]);
  const store = new SqliteStore({ path: join(cwd, "runs.db") });
  const base = { runId: "stopped", agent: "chatty", at: Date.now() };
  const events: RunEvent[] = [
    { ...base, seq: 1, type: "run_started", input: [{ role: "user", content: "hello" }] },
    {
      ...base,
      seq: 2,
      type: "run_failed",
      name: "StoreError",
      message: "appending events for run stopped failed: ENOSPC: no space left on device, write",
      kind: "store_unavailable",
    },
  ];
  const lease = await store.acquireLease("stopped", "test", 60_000);
  await store.append(lease, events);
  await store.releaseLease(lease);
  await store.close();
  return { cwd, store: ["--store", "sqlite:runs.db"] };
}

describe("quiver runs on a run its store stopped", () => {
  it("list and show say it failed for the store and can be resumed; cancel ends it as cancelled", async () => {
    const { cwd, store } = await projectWithStoppedRun();

    const listed = await quiver(cli.bin, ["runs", "list", ...store], { cwd });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^stopped\s+failed \(store unavailable, resumable\)\s+chatty/m);
    expect(listed.stdout).toContain("quiver runs resume <runId> <agent-file>");
    const json = JSON.parse((await quiver(cli.bin, ["runs", "list", "--json", ...store], { cwd })).stdout);
    expect(json).toMatchObject([{ runId: "stopped", status: "failed", failureKind: "store_unavailable" }]);
    const failedOnes = await quiver(cli.bin, ["runs", "list", "--status", "failed", "--json", ...store], {
      cwd,
    });
    expect(JSON.parse(failedOnes.stdout).map((r: { runId: string }) => r.runId)).toEqual(["stopped"]);

    const shown = await quiver(cli.bin, ["runs", "show", "stopped", ...store], { cwd });
    expect(shown.stdout).toContain("failed (store unavailable, resumable)");
    expect(shown.stdout).toContain("quiver runs resume stopped <agent-file>");

    const cancelled = await quiver(cli.bin, ["runs", "cancel", "stopped", ...store], { cwd });
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stdout).toBe("cancelled stopped\n");
    const report = JSON.parse(
      (await quiver(cli.bin, ["runs", "show", "stopped", "--json", ...store], { cwd })).stdout,
    );
    expect(report).toMatchObject({ status: "completed", stopReason: "cancelled" });
    expect(report).not.toHaveProperty("error");
    const after = JSON.parse((await quiver(cli.bin, ["runs", "list", "--json", ...store], { cwd })).stdout);
    expect(after).toEqual([expect.objectContaining({ runId: "stopped", status: "completed" })]);
    expect(after[0]).not.toHaveProperty("failureKind");
  });

  it("resume continues it from its log", async () => {
    const { cwd, store } = await projectWithStoppedRun();
    const resumed = await quiver(
      cli.bin,
      ["runs", "resume", "stopped", "chatty-agent.mjs#chatty", ...store],
      {
        cwd,
      },
    );
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).not.toContain("nothing to resume");
    expect(resumed.stdout).toContain("Hello from the script! You said: hello");
    const json = JSON.parse((await quiver(cli.bin, ["runs", "list", "--json", ...store], { cwd })).stdout);
    expect(json).toMatchObject([{ runId: "stopped", status: "completed" }]);
  });
});
