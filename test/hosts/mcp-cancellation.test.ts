// What the host cancels, and how a cancelled run ends, around connecting to a server.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, Runner, ScriptedModel } from "quiver-agents";
import { mcpServer } from "quiver-agents/mcp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hostileServer } from "./servers.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "quiver-mcp-cancel-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const methods = async (file: string) =>
  (await readFile(file, "utf8").catch(() => "")).split("\n").filter(Boolean);

describe("initialize is never cancelled", () => {
  it("not after timeoutMs on an idle connection, nor on close", async () => {
    const log = join(dir, "idle.log");
    // The bound also covers starting a Node process on a busy machine: not too tight.
    const host = mcpServer(hostileServer("--log-methods", log), { timeoutMs: 1_000 });
    try {
      await host.listTools();
      await sleep(1_100); // past the bound: the handshake's timer would have fired by now
    } finally {
      await host.close();
    }
    const seen = await methods(log);
    expect(seen.some((line) => line.startsWith("initialize"))).toBe(true);
    expect(seen.filter((line) => line.startsWith("notifications/cancelled"))).toEqual([]);
  });

  it("not when the server never answers it: the host gives up without a cancellation", async () => {
    const log = join(dir, "mute.log");
    const host = mcpServer(hostileServer("--mute", "--log-methods", log), { timeoutMs: 300 });
    try {
      await expect(host.listTools()).rejects.toThrow(/handshake/);
    } finally {
      await host.close();
    }
    const seen = await methods(log);
    expect(seen.some((line) => line.startsWith("initialize"))).toBe(true);
    expect(seen.filter((line) => line.startsWith("notifications/cancelled"))).toEqual([]);
  });
});

describe("cancelling a run while a server connects", () => {
  it("resolves with stopReason cancelled, at once", async () => {
    const host = mcpServer(hostileServer("--mute"), { timeoutMs: 30_000 });
    const controller = new AbortController();
    try {
      const started = Date.now();
      setTimeout(() => controller.abort(), 200);
      const agent = new Agent({ name: "a", model: new ScriptedModel([{ text: "hi" }]), tools: host });
      const result = await Runner.run(agent, "go", { signal: controller.signal });
      expect(result.stopReason).toBe("cancelled");
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await host.close();
    }
  });

  it("resolves with stopReason cancelled when the server hangs listing its tools again mid-run", async () => {
    const host = mcpServer(hostileServer("--hang-relist"), { prefix: "h", timeoutMs: 30_000 });
    try {
      const model = new ScriptedModel([
        { toolCalls: [{ name: "h__delete_all", args: {} }] },
        { text: "done" },
      ]);
      const agent = new Agent({ name: "a", model, tools: host, approvalHandler: () => true });
      const handle = Runner.stream(agent, "go");
      for await (const ev of handle)
        if (ev.type === "tool_call_completed") setTimeout(() => handle.cancel(), 200);
      const result = await handle.result();
      expect(result.stopReason).toBe("cancelled");
      expect(result.toolCalls[0]?.ok).toBe(true);
    } finally {
      await host.close();
    }
  });

  it("resolves with stopReason cancelled when cancelled through the handle", async () => {
    const host = mcpServer(hostileServer("--mute"), { timeoutMs: 30_000 });
    try {
      const agent = new Agent({ name: "a", model: new ScriptedModel([{ text: "hi" }]), tools: host });
      const handle = Runner.stream(agent, "go");
      setTimeout(() => handle.cancel(), 200);
      const types: string[] = [];
      for await (const ev of handle) types.push(ev.type);
      expect((await handle.result()).stopReason).toBe("cancelled");
      expect(types.at(-1)).toBe("run_completed");
    } finally {
      await host.close();
    }
  });
});
