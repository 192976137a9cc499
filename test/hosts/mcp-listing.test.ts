// How a server's tool list is read: every page's output schemas are enforced, one broken tool
// does not lock out the others, and a listing that fails mid-run does not end the run.
import { Agent, type RunEvent, Runner, ScriptedModel, type ScriptedTurn, UserError } from "quiver-agents";
import { mcpServer } from "quiver-agents/mcp";
import { describe, expect, it } from "vitest";
import { hostileServer } from "./servers.js";

async function runWith(host: ReturnType<typeof mcpServer>, turns: ScriptedTurn[]) {
  const model = new ScriptedModel(turns);
  const agent = new Agent({ name: "a", model, tools: host, approvalHandler: () => true });
  const events: RunEvent[] = [];
  const handle = Runner.stream(agent, "go");
  for await (const ev of handle) events.push(ev);
  return { result: await handle.result(), events };
}

describe("output schemas", () => {
  it("structured content is checked against the output schema of a tool on any tools/list page", async () => {
    const host = mcpServer(hostileServer("--paged"), { prefix: "h" });
    try {
      const names = (await host.listTools()).map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(["h__out_0", "h__out_1", "h__out_2", "h__delete_all"]));
      const { result } = await runWith(host, [
        {
          toolCalls: [
            { name: "h__out_0", args: {} },
            { name: "h__out_1", args: {} },
            { name: "h__out_2", args: {} },
          ],
        },
        { text: "done" },
      ]);
      for (const call of result.toolCalls.slice(0, 2)) {
        expect(call).toMatchObject({ ok: false, error: { kind: "host_error" } });
        expect(call.output).toMatch(/does not match the tool's output schema/);
        expect(call.output).toContain("MCP server h");
      }
      expect(result.toolCalls[2]).toMatchObject({
        ok: true,
        value: { details: { structuredContent: { n: 2 } } },
      });
    } finally {
      await host.close();
    }
  });
});

describe("a tool with a broken definition", () => {
  it("a non-object or missing inputSchema is a UserError naming the server and the tool, and exclude leaves it out", async () => {
    const strict = mcpServer(hostileServer("--bad-schemas"), { prefix: "h" });
    const half = mcpServer(hostileServer("--bad-schemas"), { prefix: "h", exclude: ["arr"] });
    const fine = mcpServer(hostileServer("--bad-schemas"), { prefix: "h", exclude: ["arr", "nos"] });
    try {
      const error = await strict.listTools().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UserError);
      expect((error as Error).message).toMatch(
        /MCP server h: tool "arr" has an invalid .*exclude: \["arr"\]/,
      );
      await expect(half.listTools()).rejects.toThrow(/tool "nos" has an invalid/);
      const names = (await fine.listTools()).map((t) => t.name);
      expect(names).toContain("h__delete_all");
      expect(names).not.toContain("h__arr");
      expect(names).not.toContain("h__nos");
    } finally {
      await Promise.all([strict.close(), half.close(), fine.close()]);
    }
  });
});

describe("a listing that does not end", () => {
  it("a server that never answers tools/list fails it within timeoutMs, naming the server and the listing", async () => {
    const host = mcpServer(hostileServer("--hang-list"), { prefix: "h", timeoutMs: 1_500 });
    try {
      await expect(host.listTools()).rejects.toThrow(
        /MCP server h did not answer tools\/list within 1500 ms/,
      );
    } finally {
      await host.close();
    }
  });

  it("a server that pages for ever fails the listing after 100 pages, saying so", async () => {
    const host = mcpServer(hostileServer("--endless"), { prefix: "h" });
    try {
      await expect(host.listTools()).rejects.toThrow(/MCP server h listed more than 100 pages of tools/);
    } finally {
      await host.close();
    }
  });
});

describe("deeply nested JSON", () => {
  it("a tool definition nested too deep is a UserError naming it, and exclude leaves it out", async () => {
    const strict = mcpServer(hostileServer("--deep"), { prefix: "h" });
    const host = mcpServer(hostileServer("--deep"), { prefix: "h", exclude: ["deep_schema"] });
    try {
      const error = await strict.listTools().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UserError);
      expect((error as Error).message).toMatch(
        /tool "deep_schema" has a definition nested more than 100 levels deep/,
      );
      expect((await host.listTools()).map((t) => t.name)).toContain("h__deep_result");

      // A structured result nested 200,000 deep: a host_error naming the server, not a stack overflow.
      const { result } = await runWith(host, [
        { toolCalls: [{ name: "h__deep_result", args: {} }] },
        { text: "done" },
      ]);
      expect(result.output).toBe("done");
      expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "host_error" } });
      expect(result.toolCalls[0]!.output).toMatch(
        /MCP server h answered the call to deep_result with structured content nested more than 1000 levels deep/,
      );
    } finally {
      await Promise.all([strict.close(), host.close()]);
    }
  });
});

describe("names that clash", () => {
  it("names alike once made safe go to the same tools at every listing; a name listed twice is offered once", async () => {
    const host = mcpServer(hostileServer("--clash"), { prefix: "h" });
    try {
      const describeOf = async () =>
        Object.fromEntries(
          (await host.listTools())
            .filter((t) => t.name.startsWith("h__a_b") || t.name === "h__dup")
            .map((t) => [t.name, t.description]),
        );
      const first = await describeOf();
      const second = await describeOf(); // the server swapped the order of a.b and a_b
      expect(second).toEqual(first);
      expect(first.h__a_b).toBe("Reads a file.");
      expect(Object.keys(first)).toHaveLength(3);
      expect(first.h__dup).toBe("Listed twice.");

      // Mid-run, the duplicate is reported once.
      const { result, events } = await runWith(host, [
        { toolCalls: [{ name: "h__a_b", args: {} }] },
        { text: "done" },
      ]);
      expect(result.output).toBe("done");
      const notes = events.filter((e) => e.type === "warning" && e.code === "tool_host_tool_dropped");
      expect(notes).toEqual([
        expect.objectContaining({ message: expect.stringMatching(/"dup" more than once/) }),
      ]);
    } finally {
      await host.close();
    }
  });
});

describe("listing again mid-run", () => {
  it("a listing that fails keeps the last good tools, with a warning, and the run finishes", async () => {
    // The server does not announce changes, so it is listed before every model request.
    const host = mcpServer(hostileServer("--fail-relist"), { prefix: "h" });
    try {
      const { result, events } = await runWith(host, [
        { toolCalls: [{ name: "h__delete_all", args: {} }] },
        { toolCalls: [{ name: "h__delete_all", args: {} }] },
        { text: "done" },
      ]);
      expect(result.stopReason).toBe("completed");
      expect(result.output).toBe("done");
      expect(result.toolCalls.map((c) => c.ok)).toEqual([true, true]);
      const warnings = events.filter((e) => e.type === "warning" && e.code === "tool_host_unavailable");
      // Once per run, however many turns it fails.
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ message: expect.stringContaining("the tool registry is down") });
    } finally {
      await host.close();
    }
  });

  it("a host closed mid-run: its calls fail as host errors and the run still finishes", async () => {
    const host = mcpServer(hostileServer(), { prefix: "h" });
    const model = new ScriptedModel([
      { toolCalls: [{ name: "h__delete_all", args: {} }] },
      { toolCalls: [{ name: "h__delete_all", args: {} }] },
      { text: "done" },
    ]);
    const agent = new Agent({ name: "a", model, tools: host, approvalHandler: () => true });
    const handle = Runner.stream(agent, "go");
    const warnings: string[] = [];
    for await (const ev of handle) {
      if (ev.type === "tool_call_completed") await host.close();
      if (ev.type === "warning") warnings.push(ev.code ?? "");
    }
    const result = await handle.result();
    expect(result.output).toBe("done");
    expect(result.toolCalls.map((c) => c.ok)).toEqual([true, false]);
    expect(result.toolCalls[1]!.output).toMatch(/is closed/);
    expect(warnings).toContain("tool_host_unavailable");
  });

  it("a tool newly listed with a broken schema is left out with a warning; the run goes on", async () => {
    const host = mcpServer(hostileServer("--late-broken"), { prefix: "h" });
    try {
      const { result, events } = await runWith(host, [
        { toolCalls: [{ name: "h__delete_all", args: {} }] },
        { text: "done" },
      ]);
      expect(result.output).toBe("done");
      const dropped = events.find((e) => e.type === "warning" && e.code === "tool_host_tool_dropped");
      expect(dropped).toMatchObject({
        message: expect.stringContaining('tool "broken" has an invalid input schema'),
      });
      // At run start (no run to keep going), the same tool is a UserError, as documented.
      await expect(host.listTools()).rejects.toThrow(UserError);
    } finally {
      await host.close();
    }
  });
});
