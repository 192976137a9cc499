import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Agent, Runner, ScriptedModel, UserError } from "quiver-agents";
import { workspace } from "quiver-agents/workspace";
import { describe, expect, it } from "vitest";
import { call, play, tempDir } from "./helpers.js";

const root = tempDir("quiver-options-");

describe("workspace()", () => {
  it("offers the six pinned tools with their flags; shell only when enabled", () => {
    const ws = workspace({ root, shell: true });
    expect(ws.root).toBe(root);
    expect(ws.tools.map((t) => t.name)).toEqual([
      "read_file",
      "list_files",
      "grep_files",
      "write_file",
      "edit_file",
      "shell",
    ]);
    const byName = Object.fromEntries(ws.tools.map((t) => [t.name, t]));
    for (const name of ["read_file", "list_files", "grep_files"]) {
      expect(byName[name]).toMatchObject({ readOnly: true, idempotent: true, parallel: true });
    }
    for (const name of ["write_file", "edit_file", "shell"]) {
      expect(byName[name]).toMatchObject({ destructive: true, parallel: false });
    }
    expect(Object.keys(byName.edit_file!.parameters.properties as object)).toEqual([
      "path",
      "old_string",
      "new_string",
      "replace_all",
    ]);
    expect(Object.keys(byName.shell!.parameters.properties as object)).toEqual([
      "command",
      "timeout_ms",
      "description",
    ]);
    expect(workspace({ root }).tools.map((t) => t.name)).not.toContain("shell");
    expect(workspace({ root, readOnly: true }).tools.map((t) => t.name)).toEqual([
      "read_file",
      "list_files",
      "grep_files",
    ]);
    expect(ws.instructions).toContain(root);
    expect(ws.instructions).toContain("Read a file with read_file before you change it");
  });

  it("ws.plugin offers the same tools and puts the instructions in the system prompt", async () => {
    const dir = tempDir("quiver-plugin-");
    writeFileSync(join(dir, "notes.txt"), "plugin-read works\n");
    const ws = workspace({ root: dir });
    const model = new ScriptedModel([
      { toolCalls: [{ name: "read_file", args: { path: "notes.txt" } }] },
      { text: "done" },
    ]);
    const agent = new Agent({ name: "coder", model, instructions: "You help.", plugins: [ws.plugin] });
    const result = await Runner.run(agent, "read the notes");
    expect(ws.plugin.name).toBe("workspace");
    expect(result.toolCalls[0]).toMatchObject({ call: { name: "read_file" }, ok: true });
    expect(result.toolCalls[0]!.output).toContain("plugin-read works");
    expect(model.requests[0]!.system).toContain("You help.");
    expect(model.requests[0]!.system).toContain(ws.instructions);
    expect(model.requests[0]!.tools.map((t) => t.name)).toEqual(ws.tools.map((t) => t.name));
    // Offered twice (as tools and as the plugin), the clash names both sources.
    const twice = new Agent({
      name: "c",
      model: new ScriptedModel([{ text: "x" }]),
      tools: ws.tools,
      plugins: [ws.plugin],
    });
    await expect(Runner.run(twice, "hi")).rejects.toThrow(/read_file/);
  });

  it("bad options are a UserError that says what to do", () => {
    expect(() => workspace({ root: "" })).toThrow(UserError);
    expect(() => workspace({ root, shell: { timeoutMs: 700_000 } })).toThrow(/between 1 and 600000/);
    expect(() => workspace({ root, shell: { env: 42 as never } })).toThrow(/env must be/);
    expect(() => workspace({ root, readOnly: true, shell: true })).toThrow(/cannot have a shell/);
  });

  it("a root that does not exist is a tool error, not a crash", async () => {
    const ws = workspace({ root: join(root, "missing") });
    const record = await call(ws.tools, "list_files", {});
    expect(record.ok).toBe(false);
    expect(record.output).toContain("is not accessible");
  });

  it("the executor seam wraps every shell command, and the group kill still applies", async () => {
    const ws = workspace({
      root,
      shell: true,
      executor: ({ command, env }) => ({
        file: "bash",
        args: ["-c", `echo via-executor; ${command}`],
        env: { ...env, WRAPPED: "yes" },
      }),
    });
    const { records } = await play(ws.tools, [
      { name: "shell", args: { command: "echo $WRAPPED" } },
      { name: "shell", args: { command: "sleep 30", timeout_ms: 200 } },
    ]);
    expect(records[0]!.output).toContain("via-executor\nyes");
    // The executor replaces the built-in sandbox, and the first line says so.
    expect(records[0]!.output).toMatch(/^\[exit code 0, [\d.]+ s, custom executor\]\n/);
    expect(records[1]!.output).toContain("[timed out after");
    const missing = workspace({
      root,
      shell: true,
      executor: ({ command }) => ({ file: "no-such-sandbox", args: [command] }),
    });
    const failed = await call(missing.tools, "shell", { command: "true" });
    expect(failed.ok).toBe(false);
    expect(failed.output).toContain("could not start no-such-sandbox");
  });

  it("never blocks on a FIFO: read_file and write_file refuse it, grep_files passes it by", async () => {
    mkdirSync(join(root, "pipes"), { recursive: true });
    execFileSync("mkfifo", [join(root, "pipes/fifo")]);
    writeFileSync(join(root, "pipes/plain.txt"), "needle\n");
    const ws = workspace({ root });
    const { records } = await play(ws.tools, [
      { name: "read_file", args: { path: "pipes/fifo" } },
      { name: "write_file", args: { path: "pipes/fifo", content: "x" } },
      { name: "grep_files", args: { pattern: "needle", path: "pipes" } },
    ]);
    expect(records[0]!.output).toContain("not a regular file");
    expect(records[1]!.output).toContain("not a regular file");
    expect(records[2]!.output).toBe("pipes/plain.txt:1:needle");
  });
});
