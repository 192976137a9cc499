import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { Agent, type RunContext, Runner, ScriptedModel } from "quiver-agents";
import { type McpToolHost, mcpServer } from "quiver-agents/mcp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, startEverythingHttp, stop } from "./servers.js";

const ctx = () =>
  ({ signal: new AbortController().signal, toolCallId: "c", update() {} }) as unknown as RunContext;
const text = (output: unknown) => (output as { content: Array<{ text: string }> }).content[0]?.text;

describe("mcpServer over streamable HTTP: server-everything on 127.0.0.1", () => {
  let port: number;
  let server: ChildProcess;
  let host: McpToolHost;

  beforeAll(async () => {
    port = await freePort();
    server = await startEverythingHttp(port);
    host = mcpServer({ url: `http://127.0.0.1:${port}/mcp` }, { prefix: "web", trustAnnotations: true });
  });
  afterAll(async () => {
    await host.close();
    await stop(server);
  });

  it("lists and calls tools, progress included", async () => {
    const tools = await host.listTools();
    expect(tools.find((t) => t.name === "web__echo")).toMatchObject({ readOnly: true, destructive: false });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: "web__echo", args: { message: "over http" } },
          { name: "web__trigger-long-running-operation", args: { duration: 0.2, steps: 2 } },
        ],
      },
      { text: "done" },
    ]);
    const handle = Runner.stream(new Agent({ name: "a", model, tools: host }), "go");
    const updates: unknown[] = [];
    for await (const ev of handle) if (ev.type === "tool_call_update") updates.push(ev.partial);
    const result = await handle.result();
    expect(result.toolCalls.map((c) => c.ok)).toEqual([true, true]);
    expect(result.toolCalls[0]?.output).toBe("Echo: over http");
    expect(updates).toEqual([
      { progress: 1, total: 2 },
      { progress: 2, total: 2 },
    ]);
  });

  it("a server that dies mid-call fails the call promptly, and a restarted one is reconnected to", async () => {
    await host.listTools();
    const call = host.call("web__trigger-long-running-operation", { duration: 20, steps: 20 }, ctx());
    const started = Date.now();
    setTimeout(() => void stop(server, "SIGKILL"), 300);
    await expect(call).rejects.toThrow(/MCP server web/);
    // Bounded by the transport noticing, not by the 60 s call timeout.
    expect(Date.now() - started).toBeLessThan(15_000);

    // Nothing listens: connecting fails (after its backoff), as an error, not a hang.
    await expect(host.call("web__echo", { message: "x" }, ctx())).rejects.toThrow(/could not/);

    server = await startEverythingHttp(port);
    expect(text(await host.call("web__echo", { message: "back" }, ctx()))).toBe("Echo: back");
  });

  it("a server restarted between calls is reconnected to", async () => {
    expect(text(await host.call("web__echo", { message: "before" }, ctx()))).toBe("Echo: before");
    await stop(server);
    server = await startEverythingHttp(port);
    expect(text(await host.call("web__echo", { message: "after" }, ctx()))).toBe("Echo: after");
  });
});

/**
 * A server that forgets its sessions on request while its connections stay up: what a
 * restart behind a load balancer looks like. A call on a forgotten session gets a 404 —
 * the server provably did not run it — so even a non-idempotent call is sent again.
 */
describe("a session the server no longer knows", () => {
  let http: Server;
  let url: string;
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  let increments = 0;
  const authorizations = new Set<string>();

  beforeAll(async () => {
    http = createServer(async (req, res) => {
      authorizations.add(String(req.headers.authorization));
      const id = req.headers["mcp-session-id"];
      const known = typeof id === "string" ? sessions.get(id) : undefined;
      if (known) return known.handleRequest(req, res);
      if (id !== undefined || req.method !== "POST") {
        res.writeHead(404, { "content-type": "application/json" });
        return res.end(
          JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }),
        );
      }
      const server = new McpServer({ name: "counter", version: "1.0.0" });
      server.registerTool(
        "increment",
        { description: "Adds one (not idempotent).", annotations: { destructiveHint: false } },
        async () => ({ content: [{ type: "text", text: String(++increments) }] }),
      );
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sessionId) => void sessions.set(sessionId, transport),
      });
      await server.connect(transport);
      await transport.handleRequest(req, res);
    });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  });
  afterAll(async () => {
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
  });

  it("is re-initialised and the call, which never ran, is sent once more", async () => {
    const host = mcpServer({ url, headers: { authorization: "Bearer t0ken" } });
    try {
      expect(text(await host.call("increment", {}, ctx()))).toBe("1");
      sessions.clear();
      expect(text(await host.call("increment", {}, ctx()))).toBe("2");
      expect(increments).toBe(2); // ran once per call: the 404'd attempt did nothing
      expect(sessions.size).toBe(1);
      expect([...authorizations]).toEqual(["Bearer t0ken"]); // on every request, new session too
    } finally {
      await host.close();
    }
  });
});
