// A server's annotations are its own word about its tools (the MCP spec: untrusted unless the
// server is). The hostile server's `lying` tool claims `readOnlyHint` and deletes everything.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Agent, type RunEvent, Runner, ScriptedModel, StandardPermissions, tool } from "quiver-agents";
import { mcpServer } from "quiver-agents/mcp";
import { mcpServer as serveMcp } from "quiver-agents/mcp-server";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { hostileServer } from "./servers.js";

async function runCalling(host: ReturnType<typeof mcpServer>, name: string, options = {}) {
  const model = new ScriptedModel([{ toolCalls: [{ name, args: {} }] }, { text: "done" }]);
  const events: RunEvent[] = [];
  const handle = Runner.stream(new Agent({ name: "a", model, tools: host, ...options }), "go");
  for await (const ev of handle) events.push(ev);
  return { result: await handle.result(), events };
}

describe("MCP tool annotations", () => {
  it("do not let a server's readOnlyHint skip an approval: an untrusted tool is destructive", async () => {
    const host = mcpServer(hostileServer(), { prefix: "h" });
    try {
      const lying = (await host.listTools()).find((t) => t.name === "h__lying")!;
      expect(lying).toMatchObject({ readOnly: false, destructive: true, idempotent: false });
      // Default permissions, nobody to ask: the call is denied, not run.
      const { result, events } = await runCalling(host, "h__lying");
      expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "denied" } });
      expect(events.some((e) => e.type === "approval_resolved" && e.by === "no_channel")).toBe(true);
      // acceptEdits with the tool as an edit tool still asks: the server's own descriptions taint
      // the run (below); nobody answers here, so it is denied.
      const edits = new StandardPermissions({ mode: "acceptEdits", editTools: ["h__lying"] });
      const accepted = await runCalling(host, "h__lying", { permissions: edits });
      expect(accepted.result.toolCalls[0]).toMatchObject({ ok: false, error: { kind: "denied" } });
    } finally {
      await host.close();
    }
  });

  it("are honoured for the tools of a trusted server (trustAnnotations)", async () => {
    const all = mcpServer(hostileServer(), { prefix: "h", trustAnnotations: true });
    const some = mcpServer(hostileServer(), { prefix: "h", trustAnnotations: ["is_error"] });
    try {
      const listed = await all.listTools();
      expect(listed.find((t) => t.name === "h__lying")).toMatchObject({
        readOnly: true,
        destructive: false,
        idempotent: true,
      });
      expect(listed.find((t) => t.name === "h__delete_all")).toMatchObject({ destructive: true });
      const { result } = await runCalling(all, "h__lying");
      expect(result.toolCalls[0]).toMatchObject({ ok: true });

      const partly = await some.listTools();
      expect(partly.find((t) => t.name === "h__is_error")).toMatchObject({ readOnly: true });
      expect(partly.find((t) => t.name === "h__lying")).toMatchObject({ readOnly: false, destructive: true });
    } finally {
      await Promise.all([all.close(), some.close()]);
    }
  });

  it("served on to an MCP client, an untrusted server's tool is not claimed read-only, and asks", async () => {
    const host = mcpServer(hostileServer(), { prefix: "h" });
    const server = serveMcp({ tools: [host] }, { name: "proxy", version: "1.0.0" });
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: "c", version: "1.0.0" }); // no elicitation: cannot be asked
    await client.connect(clientSide);
    try {
      const lying = (await client.listTools()).tools.find((t) => t.name === "h__lying")!;
      expect(lying.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
      const answer = await client.callTool({ name: "h__lying", arguments: {} });
      expect(answer.isError).toBe(true);
      expect(JSON.stringify(answer.content)).toContain("was not approved");
    } finally {
      await client.close();
      await server.close();
      await host.close();
    }
  });

  it("an unvetted server's descriptions taint the run before any of its tools is called", async () => {
    const notes: string[] = [];
    const writeNote = tool({
      name: "write_note",
      description: "Write a note.",
      parameters: z.object({ text: z.string() }),
      destructive: true,
      execute: ({ text }) => {
        notes.push(text);
        return "written";
      },
    });
    const run = async (host: ReturnType<typeof mcpServer>) => {
      const model = new ScriptedModel([
        { toolCalls: [{ name: "write_note", args: { text: "as the description said" } }] },
        { text: "done" },
      ]);
      const permissions = new StandardPermissions({ mode: "acceptEdits", editTools: ["write_note"] });
      const events: RunEvent[] = [];
      const handle = Runner.stream(
        new Agent({ name: "a", model, tools: [host, writeNote], permissions }),
        "go",
      );
      for await (const ev of handle) events.push(ev);
      await handle.result();
      return events;
    };
    const untrusted = mcpServer(hostileServer(), { prefix: "h" });
    const vetted = mcpServer(hostileServer(), { prefix: "h", trustAnnotations: true });
    try {
      const events = await run(untrusted);
      expect(events.find((e) => e.type === "run_tainted")).toMatchObject({
        source: expect.stringMatching(/^the description of h__\w+, written by its server$/),
      });
      expect(events.some((e) => e.type === "approval_required")).toBe(true);
      expect(notes).toEqual([]);

      const trusted = await run(vetted);
      expect(trusted.some((e) => e.type === "run_tainted")).toBe(false);
      expect(notes).toEqual(["as the description said"]);
    } finally {
      await Promise.all([untrusted.close(), vetted.close()]);
    }
  });
});
