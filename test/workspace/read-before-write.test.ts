import { readFileSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Agent, Runner, ScriptedModel, StandardPermissions } from "quiver-agents";
import { SqliteStore } from "quiver-agents/store";
import { workspace } from "quiver-agents/workspace";
import { describe, expect, it } from "vitest";
import { play, tempDir } from "./helpers.js";

const root = tempDir("quiver-ledger-");

describe("read before write, by content", () => {
  it("refuses to overwrite or edit an existing file this run never read", async () => {
    writeFileSync(join(root, "unread.txt"), "original\n");
    const ws = workspace({ root });
    const { records } = await play(ws.tools, [
      { name: "write_file", args: { path: "unread.txt", content: "clobbered\n" } },
      { name: "edit_file", args: { path: "unread.txt", old_string: "original", new_string: "edited" } },
    ]);
    for (const record of records) {
      expect(record.ok).toBe(false);
      expect(record.output).toContain("unread.txt exists and has not been read in this run");
      expect(record.output).toContain("read_file");
    }
    expect(readFileSync(join(root, "unread.txt"), "utf8")).toBe("original\n");
  });

  it("refuses a write when the file changed since it was read, and allows it after reading again", async () => {
    writeFileSync(join(root, "stale.txt"), "one\n");
    const ws = workspace({ root });
    const { records } = await play(
      ws.tools,
      [
        { name: "read_file", args: { path: "stale.txt" } },
        { name: "write_file", args: { path: "stale.txt", content: "mine\n" } },
        { name: "read_file", args: { path: "stale.txt" } },
        { name: "edit_file", args: { path: "stale.txt", old_string: "theirs", new_string: "mine" } },
      ],
      {},
      (ev) => {
        // Someone else changes the file after the model read it.
        if (ev.type === "tool_call_completed" && ev.call.name === "read_file" && ev.output.includes("one")) {
          writeFileSync(join(root, "stale.txt"), "theirs\n");
        }
      },
    );
    expect(records[1]!.ok).toBe(false);
    expect(records[1]!.output).toContain("stale.txt changed since it was read");
    expect(records[3]!.ok).toBe(true);
    expect(readFileSync(join(root, "stale.txt"), "utf8")).toBe("mine\n");
  });

  it("a touch that leaves the content as it was does not count as a change", async () => {
    writeFileSync(join(root, "touched.txt"), "same\n");
    const ws = workspace({ root });
    const { records } = await play(
      ws.tools,
      [
        { name: "read_file", args: { path: "touched.txt" } },
        { name: "edit_file", args: { path: "touched.txt", old_string: "same", new_string: "changed" } },
      ],
      {},
      (ev) => {
        if (ev.type === "tool_call_completed" && ev.call.name === "read_file") {
          // A formatter rewrites the file with identical bytes and a new mtime.
          writeFileSync(join(root, "touched.txt"), "same\n");
          utimesSync(join(root, "touched.txt"), new Date(), new Date(Date.now() + 60_000));
        }
      },
    );
    expect(records[1]!.ok).toBe(true);
    expect(readFileSync(join(root, "touched.txt"), "utf8")).toBe("changed\n");
  });

  it("a file this run wrote may be edited without reading it back, even in the same turn", async () => {
    const ws = workspace({ root });
    const { records } = await play(ws.tools, [
      [
        { name: "write_file", args: { path: "fresh/new.txt", content: "alpha\nbeta\n" } },
        { name: "edit_file", args: { path: "fresh/new.txt", old_string: "beta", new_string: "gamma" } },
      ],
    ]);
    expect(records.map((r) => r.ok)).toEqual([true, true]);
    expect(records[0]!.output).toContain("Created fresh/new.txt");
    expect(readFileSync(join(root, "fresh/new.txt"), "utf8")).toBe("alpha\ngamma\n");
  });

  it("another run's reads do not count", async () => {
    writeFileSync(join(root, "other-run.txt"), "x\n");
    const ws = workspace({ root });
    await play(ws.tools, [{ name: "read_file", args: { path: "other-run.txt" } }]);
    const { records } = await play(ws.tools, [
      { name: "write_file", args: { path: "other-run.txt", content: "y\n" } },
    ]);
    expect(records[0]!.ok).toBe(false);
    expect(records[0]!.output).toContain("has not been read in this run");
  });
});

describe("the read ledger survives a resume", () => {
  it("a run parked on an edit's approval, resumed by a fresh workspace (a new process), may still edit the file it read", async () => {
    writeFileSync(join(root, "resumed.txt"), "before\n");
    writeFileSync(join(root, "changed-meanwhile.txt"), "before\n");
    const store = new SqliteStore({ path: join(root, "runs.db") });
    try {
      const model = new ScriptedModel([
        {
          toolCalls: [
            { id: "r1", name: "read_file", args: { path: "resumed.txt" } },
            { id: "r2", name: "read_file", args: { path: "changed-meanwhile.txt" } },
          ],
        },
        {
          toolCalls: [
            {
              id: "e1",
              name: "edit_file",
              args: { path: "resumed.txt", old_string: "before", new_string: "after" },
            },
            {
              id: "e2",
              name: "edit_file",
              args: { path: "changed-meanwhile.txt", old_string: "before", new_string: "after" },
            },
          ],
        },
      ]);
      // Default permissions: the edits ask, nobody answers, the stored run parks.
      const first = new Agent({ name: "editor", model, tools: workspace({ root }).tools });
      const parked = await Runner.run(first, "edit", { store, runId: "ledger-resume" });
      expect(parked.stopReason).toBe("awaiting_approval");
      writeFileSync(join(root, "changed-meanwhile.txt"), "someone else\n");
      // The preflight of later calls waits for the first decision: e2 is asked after the resume.
      await Runner.decide(store, "ledger-resume", "e1", true);
      // A new workspace has an empty ledger in memory: it must rebuild it from the stored log.
      const resumedAgent = new Agent({
        name: "editor",
        model: new ScriptedModel([{ text: "done" }]),
        tools: workspace({ root }).tools,
        permissions: new StandardPermissions({ mode: "acceptEdits" }),
      });
      const resumed = await Runner.resume(resumedAgent, "ledger-resume", { store }).result();
      expect(resumed.stopReason).toBe("completed");
      const byId = new Map(resumed.toolCalls.map((r) => [r.call.id, r]));
      expect(byId.get("e1")!.ok).toBe(true);
      expect(readFileSync(join(root, "resumed.txt"), "utf8")).toBe("after\n");
      expect(byId.get("e2")!.ok).toBe(false);
      expect(byId.get("e2")!.output).toContain("changed since it was read");
      expect(readFileSync(join(root, "changed-meanwhile.txt"), "utf8")).toBe("someone else\n");
    } finally {
      await store.close();
    }
  });
});
