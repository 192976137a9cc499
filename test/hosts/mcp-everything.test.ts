import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  Agent,
  type AgentTools,
  type RunContext,
  type RunEvent,
  Runner,
  ScriptedModel,
  tool,
  UserError,
} from "quiver-agents";
import { type McpToolHost, mcpServer } from "quiver-agents/mcp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { FENCE_BEGIN, FENCE_NOTE } from "../../src/builtin-tools/fence.js";
import { everythingStdio, filesystemServer, gone, memoryServer } from "./servers.js";

const allow = () => true as const;

async function run(host: AgentTools, calls: Array<{ name: string; args: unknown }>, settings = {}) {
  const model = new ScriptedModel([{ toolCalls: calls }, { text: "done" }]);
  const handle = Runner.stream(
    new Agent({ name: "a", model, tools: host, approvalHandler: allow, ...settings }),
    "go",
  );
  const events: RunEvent[] = [];
  for await (const ev of handle) events.push(ev);
  return { result: await handle.result(), events, model };
}

describe("mcpServer over stdio: server-everything", () => {
  let everything: McpToolHost;
  beforeAll(async () => {
    // A server of our own choosing, vetted: its annotations may relax the guards.
    everything = mcpServer(everythingStdio(), { prefix: "ev", trustAnnotations: true });
    await everything.listTools();
  });
  afterAll(async () => {
    const pid = everything.pid;
    await everything.close();
    if (pid !== undefined) expect(await gone(pid)).toBe(true);
  });

  it("lists tools as prefix__name with the server's schema and annotation hints", async () => {
    const tools = await everything.listTools();
    const echo = tools.find((t) => t.name === "ev__echo");
    expect(echo).toMatchObject({
      description: "Echoes back the input string",
      label: "Echo Tool",
      readOnly: true,
      destructive: false,
      idempotent: true,
      untrustedOutput: true,
      parameters: {
        type: "object",
        properties: { message: { type: "string", description: "Message to echo" } },
        required: ["message"],
        $schema: "http://json-schema.org/draft-07/schema#",
      },
    });
    const toggle = tools.find((t) => t.name === "ev__toggle-simulated-logging");
    expect(toggle).toMatchObject({ readOnly: false, destructive: false, idempotent: false });
    // A tool that can only run as an MCP task is not offered: a plain call would fail.
    expect(tools.map((t) => t.name)).not.toContain("ev__simulate-research-query");
    expect(tools.every((t) => /^ev__[a-zA-Z0-9_-]+$/.test(t.name))).toBe(true);
  });

  it("runs a call through the runner, which validates arguments against the listed schema", async () => {
    const { result, model } = await run(everything, [
      { name: "ev__echo", args: { message: "hello" } },
      { name: "ev__echo", args: { message: 42 } },
      { name: "ev__get-sum", args: { a: "2", b: 3 } },
    ]);
    expect(model.requests[0]?.tools.map((t) => t.name)).toContain("ev__echo");
    expect(result.toolCalls[0]).toMatchObject({ ok: true, output: "Echo: hello" });
    expect(result.toolCalls[1]).toMatchObject({ ok: false, error: { kind: "invalid_arguments" } });
    expect(result.toolCalls[1]?.output).toContain("- message:");
    // Conservative coercion applies to hosted tools too ("2" → 2).
    expect(result.toolCalls[2]).toMatchObject({ ok: true });
    expect(result.toolCalls[2]?.output).toContain("5");
  });

  it("maps an image result to an image block the model receives", async () => {
    const { result } = await run(everything, [{ name: "ev__get-tiny-image", args: {} }]);
    expect(result.toolCalls[0]?.ok).toBe(true);
    const message = result.messages.find((m) => m.role === "tool");
    expect(Array.isArray(message?.content)).toBe(true);
    const blocks = message?.content as Array<{ type: string; mimeType?: string; text?: string }>;
    expect(blocks.map((b) => b.type)).toEqual(["text", "image", "text"]);
    expect(blocks[1]).toMatchObject({ type: "image", mimeType: "image/png" });
  });

  it("keeps structured content for observers and shows its text to the model", async () => {
    const { result, events } = await run(everything, [
      { name: "ev__get-structured-content", args: { location: "Chicago" } },
    ]);
    const record = result.toolCalls[0];
    expect(record?.ok).toBe(true);
    expect(JSON.parse(record?.output ?? "")).toEqual({
      temperature: 36,
      conditions: "Light rain / drizzle",
      humidity: 82,
    });
    expect(record?.value).toMatchObject({
      details: { structuredContent: { temperature: 36, conditions: "Light rain / drizzle", humidity: 82 } },
    });
    const completed = events.find((e) => e.type === "tool_call_completed");
    expect(completed).toMatchObject({ ok: true });
  });

  it("turns progress notifications into tool_call_update events", async () => {
    const { result, events } = await run(everything, [
      { name: "ev__trigger-long-running-operation", args: { duration: 0.3, steps: 3 } },
    ]);
    expect(result.toolCalls[0]?.ok).toBe(true);
    const updates = events
      .filter((e) => e.type === "tool_call_update")
      .map((e) => (e as { partial: unknown }).partial);
    expect(updates).toEqual([
      { progress: 1, total: 3 },
      { progress: 2, total: 3 },
      { progress: 3, total: 3 },
    ]);
  });

  it("declines elicitation requests when no handler is given", async () => {
    const { result } = await run(everything, [{ name: "ev__trigger-elicitation-request", args: {} }]);
    expect(result.toolCalls[0]?.ok).toBe(true);
    expect(result.toolCalls[0]?.output).toContain("declined");
  });

  it("cancelling a run cancels the call on the server and never waits for it", async () => {
    const controller = new AbortController();
    const model = new ScriptedModel([
      { toolCalls: [{ name: "ev__trigger-long-running-operation", args: { duration: 30, steps: 30 } }] },
    ]);
    setTimeout(() => controller.abort(), 300);
    const started = Date.now();
    const result = await Runner.run(
      new Agent({ name: "a", model, tools: everything, approvalHandler: allow }),
      "go",
      {
        signal: controller.signal,
      },
    );
    expect(result.stopReason).toBe("cancelled");
    expect(Date.now() - started).toBeLessThan(5_000);
    // The connection survives a cancelled call.
    const ctx = { signal: new AbortController().signal, update() {} } as unknown as RunContext;
    expect(await everything.call("ev__echo", { message: "still here" }, ctx)).toEqual({
      content: [{ type: "text", text: "Echo: still here" }],
    });
  });
});

describe("mcpServer options", () => {
  it("routes elicitation to onElicitation, with the calling run's context", async () => {
    const seen: Array<{ message: string; runId?: string }> = [];
    const host = mcpServer(everythingStdio(), {
      include: ["trigger-elicitation-request"],
      onElicitation: (request, { ctx }) => {
        seen.push({ message: request.message, runId: ctx?.runId });
        return { action: "accept", content: { name: "Ada", check: true } };
      },
    });
    try {
      const { result } = await run(host, [{ name: "trigger-elicitation-request", args: {} }]);
      expect(seen).toEqual([
        { message: "Please provide inputs for the following fields:", runId: result.runId },
      ]);
      expect(result.toolCalls[0]?.output).toContain("Ada");
    } finally {
      await host.close();
    }
  });

  it("declines an elicitation answer that does not match the requested schema", async () => {
    const host = mcpServer(everythingStdio(), {
      include: ["trigger-elicitation-request"],
      onElicitation: () => ({ action: "accept", content: { check: true } }), // "name" is required
    });
    try {
      const { result } = await run(host, [{ name: "trigger-elicitation-request", args: {} }]);
      expect(result.toolCalls[0]?.output).toContain("declined");
    } finally {
      await host.close();
    }
  });

  it("carries needsApproval, include, fence and untrustedOutput into the listing and the run", async () => {
    const host = mcpServer(everythingStdio(), {
      include: (name) => name === "echo" || name === "get-sum",
      needsApproval: ["echo"],
      fence: true,
      untrustedOutput: false,
      // get-sum is read-only by the server's (trusted) word; echo asks through needsApproval anyway.
      trustAnnotations: true,
    });
    try {
      const tools = await host.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(["echo", "get-sum"]);
      expect(tools.find((t) => t.name === "echo")).toMatchObject({
        needsApproval: true,
        untrustedOutput: false,
      });
      expect(tools.find((t) => t.name === "get-sum")?.needsApproval).toBeUndefined();
      expect(tools[0]?.description.endsWith(FENCE_NOTE)).toBe(true);

      // Runner.run has nobody to ask: the gated call is denied, the other one runs, fenced.
      const model = new ScriptedModel([
        {
          toolCalls: [
            { name: "echo", args: { message: "hi" } },
            { name: "get-sum", args: { a: 1, b: 2 } },
          ],
        },
        { text: "done" },
      ]);
      const result = await Runner.run(new Agent({ name: "a", model, tools: host }), "go");
      expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "denied" } });
      expect(result.toolCalls[1]?.ok).toBe(true);
      expect(result.toolCalls[1]?.output).toContain(FENCE_BEGIN);
      expect(result.toolCalls[1]?.output).toContain("Source: MCP server");

      const approved = new ScriptedModel([
        { toolCalls: [{ name: "echo", args: { message: "ok" } }] },
        { text: "done" },
      ]);
      const allowed = await Runner.run(
        new Agent({ name: "a", model: approved, tools: host, approvalHandler: allow }),
        "go",
      );
      expect(allowed.toolCalls[0]).toMatchObject({ ok: true });
    } finally {
      await host.close();
    }
  });

  it("rejects bad configuration up front", () => {
    expect(() => mcpServer({} as never)).toThrow(UserError);
    expect(() => mcpServer({ url: "ftp://example.com" })).toThrow(/http/);
    expect(() => mcpServer(everythingStdio(), { prefix: "no spaces" })).toThrow(UserError);
    expect(() => mcpServer(everythingStdio(), { timeoutMs: 0 })).toThrow(UserError);
  });

  it("a command that does not exist is a UserError naming it", async () => {
    const host = mcpServer({ command: "quiver-no-such-mcp-server" });
    await expect(host.listTools()).rejects.toThrow(/quiver-no-such-mcp-server" was not found/);
    await host.close();
  });
});

describe("several servers", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "quiver-mcp-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("prefixes keep names apart; without them a clash is a UserError that says how to fix it", async () => {
    const a = mcpServer(memoryServer(join(dir, "a.jsonl")));
    const b = mcpServer(memoryServer(join(dir, "b.jsonl")));
    const left = mcpServer(memoryServer(join(dir, "left.jsonl")), { prefix: "left" });
    const right = mcpServer(memoryServer(join(dir, "right.jsonl")), { prefix: "right" });
    try {
      const clash = Runner.run(
        new Agent({ name: "a", model: new ScriptedModel([{ text: "x" }]), tools: [a, b] }),
        "go",
      );
      await expect(clash).rejects.toThrow(UserError);
      await expect(clash).rejects.toThrow(/give the host a prefix/);

      const entity = { name: "Ada", entityType: "person", observations: ["wrote the first program"] };
      const { result, model } = await run(
        [left, right],
        [
          { name: "left__create_entities", args: { entities: [entity] } },
          { name: "right__read_graph", args: {} },
        ],
      );
      const names = model.requests[0]?.tools.map((t) => t.name) ?? [];
      expect(names).toContain("left__create_entities");
      expect(names).toContain("right__create_entities");
      expect(result.toolCalls.map((c) => c.ok)).toEqual([true, true]);
      expect(result.toolCalls[0]?.output).toContain("Ada");
      expect(result.toolCalls[1]?.output).not.toContain("Ada"); // a different server
    } finally {
      await Promise.all([a, b, left, right].map((h) => h.close()));
    }
  });

  it("an MCP isError result is a tool_error the model reads, and the run goes on", async () => {
    const files = mcpServer(filesystemServer(dir), { prefix: "fs" });
    const local = tool({
      name: "note",
      description: "Take a note.",
      parameters: z.object({ text: z.string() }),
      execute: ({ text }) => `noted ${text}`,
    });
    try {
      const { result } = await run(
        [files, local],
        [
          { name: "fs__read_text_file", args: { path: join(dir, "missing.txt") } },
          { name: "note", args: { text: "x" } },
        ],
      );
      expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "tool_error" } });
      expect(result.toolCalls[0]?.output).toMatch(/^Tool error: .*(ENOENT|no such file)/s);
      expect(result.toolCalls[1]).toMatchObject({ ok: true, output: "noted x" });
      expect(result.stopReason).toBe("completed");
    } finally {
      await files.close();
    }
  });
});
