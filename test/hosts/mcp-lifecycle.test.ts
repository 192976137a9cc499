import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Agent, type RunContext, Runner, ScriptedModel, ToolError, type ToolHostChange } from "quiver-agents";
import { mcpServer } from "quiver-agents/mcp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alive, FIXTURE, fixtureServer, gone } from "./servers.js";

const ctx = () =>
  ({ signal: new AbortController().signal, toolCallId: "c", update() {} }) as unknown as RunContext;
const text = (output: unknown) => (output as { content: Array<{ text: string }> }).content[0]?.text;
const allow = () => true as const;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "quiver-mcp-life-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("list changes", () => {
  it("notifications/tools/list_changed become watch events, and a run offers the new tool next turn", async () => {
    const host = mcpServer(fixtureServer(), { prefix: "fx" });
    try {
      expect((await host.listTools()).map((t) => t.name)).not.toContain("fx__extra");
      const watching = new AbortController();
      const changes: ToolHostChange[] = [];
      const reading = (async () => {
        for await (const change of host.watch(watching.signal)) changes.push(change);
      })();

      const model = new ScriptedModel([
        { toolCalls: [{ name: "fx__add_tool", args: {} }] },
        { toolCalls: [{ name: "fx__extra", args: { n: 7 } }] },
        { toolCalls: [{ name: "fx__remove_tool", args: {} }] },
        { text: "done" },
      ]);
      const result = await Runner.run(
        new Agent({ name: "a", model, tools: host, approvalHandler: allow }),
        "go",
      );
      expect(result.toolCalls.map((c) => c.output)).toEqual(["added", "extra 7", "removed"]);
      const offered = model.requests.map((r) => r.tools.some((t) => t.name === "fx__extra"));
      expect(offered).toEqual([false, true, true, false]);

      watching.abort();
      await reading;
      expect(changes).toEqual([
        { kind: "added", name: "fx__extra" },
        { kind: "removed", name: "fx__extra" },
      ]);
    } finally {
      await host.close();
    }
  });

  it("a host that has been closed ends its watchers", async () => {
    const host = mcpServer(fixtureServer());
    await host.listTools();
    const watcher = host.watch();
    await host.close();
    expect(await watcher.next()).toMatchObject({ done: true });
    await expect(host.listTools()).rejects.toThrow(/closed/);
  });
});

describe("failures and reconnecting", () => {
  it("a server that dies mid-call gives a host_error at once; the next call reconnects", async () => {
    const host = mcpServer(fixtureServer(), { prefix: "fx" });
    try {
      await host.listTools();
      const firstPid = host.pid!;
      const model = new ScriptedModel([
        { toolCalls: [{ name: "fx__crash", args: {} }] },
        { toolCalls: [{ name: "fx__pid", args: {} }] },
        { text: "done" },
      ]);
      const started = Date.now();
      const result = await Runner.run(
        new Agent({ name: "a", model, tools: host, approvalHandler: allow }),
        "go",
      );
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "host_error" } });
      expect(result.toolCalls[0]?.output).toContain("went away during the call to crash");
      expect(result.toolCalls[0]?.output).toContain("exited with code 3");
      // crash is not idempotent: it was not sent again. pid is: it ran on a new process.
      expect(result.toolCalls[1]).toMatchObject({ ok: true });
      const secondPid = Number(result.toolCalls[1]?.output);
      expect(secondPid).not.toBe(firstPid);
      expect(host.pid).toBe(secondPid);
      expect(alive(firstPid)).toBe(false);
    } finally {
      await host.close();
    }
  });

  it("a read-only call cut off by a crash is sent once more to the restarted server", async () => {
    // Read-only by the server's word: only a trusted server's annotations make a call resendable.
    const host = mcpServer(fixtureServer(), { trustAnnotations: true });
    try {
      await host.listTools();
      const firstPid = host.pid;
      const marker = join(dir, "crashed-once");
      const output = await host.call("crash_once", { marker }, ctx());
      expect(text(output)).toBe(`survived in ${host.pid}`);
      expect(host.pid).not.toBe(firstPid);
    } finally {
      await host.close();
    }
  });

  it("without trustAnnotations the same call is not sent again: a server's readOnlyHint is not trusted", async () => {
    const host = mcpServer(fixtureServer());
    try {
      await host.listTools();
      const marker = join(dir, "crashed-untrusted");
      await expect(host.call("crash_once", { marker }, ctx())).rejects.toThrow(
        /may or may not have taken effect/,
      );
    } finally {
      await host.close();
    }
  });

  it("a server that does not answer within timeoutMs is an error, and the connection stays usable", async () => {
    // The bound also covers starting the server (a Node process) and listing: not too tight.
    const host = mcpServer(fixtureServer(), { timeoutMs: 1_000 });
    try {
      await host.listTools();
      const started = Date.now();
      await expect(host.call("slow", { ms: 5_000 }, ctx())).rejects.toThrow(
        /did not answer the call to slow within 1000 ms/,
      );
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(text(await host.call("slow", { ms: 1 }, ctx()))).toBe("slept");
    } finally {
      await host.close();
    }
  });

  it("an unknown or excluded tool name is a ToolError", async () => {
    const host = mcpServer(fixtureServer(), { exclude: ["crash", "crash_once"] });
    try {
      const names = (await host.listTools()).map((t) => t.name);
      expect(names).toContain("pid");
      expect(names).not.toContain("crash");
      await expect(host.call("nope", {}, ctx())).rejects.toThrow(ToolError);
      await expect(host.call("crash", {}, ctx())).rejects.toThrow(ToolError);
    } finally {
      await host.close();
    }
  });
});

describe("no orphan processes", () => {
  it("close() ends the server and what its wrapper started (process group)", async () => {
    // `sh -c` keeps the real server as a grandchild, as `npx` does.
    const host = mcpServer({ command: "sh", args: ["-c", `"${process.execPath}" "${FIXTURE}"; exit $?`] });
    await host.listTools();
    const wrapperPid = host.pid!;
    const serverPid = Number(text(await host.call("pid", {}, ctx())));
    expect(serverPid).not.toBe(wrapperPid);
    expect(alive(serverPid)).toBe(true);
    await host.close();
    expect(await gone(wrapperPid)).toBe(true);
    expect(await gone(serverPid)).toBe(true);
  });

  it("a process that exits without close() takes its servers with it", async () => {
    const script = fileURLToPath(new URL("../fixtures/hosts/exit-without-close.ts", import.meta.url));
    const child = spawn(process.execPath, ["--import", "tsx", script], {
      cwd: fileURLToPath(new URL("../..", import.meta.url)),
      stdio: ["ignore", "pipe", "inherit"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    const code = await new Promise((resolve) => child.once("exit", resolve));
    expect(code).toBe(0);
    const { wrapperPid, serverPid } = JSON.parse(output) as { wrapperPid: number; serverPid: number };
    expect(await gone(wrapperPid)).toBe(true);
    expect(await gone(serverPid)).toBe(true);
  });
});
