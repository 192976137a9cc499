import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { Agent, jsonSchema, type RunEvent, Runner, ScriptedModel, tool, UserError } from "quiver-agents";
import { mcpServer, type QuiverMcpServer } from "quiver-agents/mcp-server";
import { MemoryStore } from "quiver-agents/store";
import { afterEach, describe, expect, it } from "vitest";

const TOKEN = "s3cret-token";

const add = tool({
  name: "add",
  label: "Add numbers",
  description: "Add two numbers.",
  parameters: jsonSchema<{ a: number; b: number }>({
    type: "object",
    properties: { a: { type: "number" }, b: { type: "number" } },
    required: ["a", "b"],
  }),
  readOnly: true,
  execute: ({ a, b }) => String(a + b),
});

const deleted: string[] = [];
const deleteFile = tool({
  name: "delete_file",
  description: "Delete a file.",
  parameters: jsonSchema<{ path: string }>({
    type: "object",
    properties: { path: { type: "string" } },
    required: ["path"],
  }),
  destructive: true,
  parallel: false,
  execute: ({ path }) => {
    deleted.push(path);
    return `deleted ${path}`;
  },
});

const count = tool({
  name: "count",
  description: "Count to n, reporting each step.",
  parameters: jsonSchema<{ n: number }>({
    type: "object",
    properties: { n: { type: "integer" } },
    required: ["n"],
  }),
  idempotent: true,
  execute: async ({ n }, ctx) => {
    for (let i = 1; i <= n; i++) {
      ctx.update(`counted ${i}`);
      await new Promise((resolve) => setTimeout(resolve, 130));
    }
    // A burst faster than progress is sent: the last of it still reaches the client.
    for (let i = 1; i <= 5; i++) ctx.update({ progress: 10 + i, total: 15, message: `burst ${i}` });
    return `counted to ${n}`;
  },
});

let aborted: (() => void) | undefined;
let started: (() => void) | undefined;
const waitForCancel = tool({
  name: "wait_for_cancel",
  description: "Waits until cancelled.",
  parameters: jsonSchema<Record<string, never>>({ type: "object", properties: {} }),
  execute: (_args, ctx) =>
    new Promise<string>((resolve) => {
      started?.();
      ctx.signal.addEventListener("abort", () => {
        aborted?.();
        resolve("stopped");
      });
    }),
});

const servers: QuiverMcpServer[] = [];
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
  await Promise.all(servers.splice(0).map((s) => s.close()));
  deleted.length = 0;
});

/** A client that answers approval questions with `answer` (or declares no elicitation when it is undefined). */
async function connect(
  url: string,
  answer?: (message: string) => ElicitResult,
  headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` },
): Promise<{ client: Client; questions: string[] }> {
  const questions: string[] = [];
  const client = new Client(
    { name: "test-client", version: "1.0.0" },
    { capabilities: answer ? { elicitation: {} } : {} },
  );
  if (answer)
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      const message = String(request.params.message);
      questions.push(message);
      return answer(message);
    });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  clients.push(client);
  return { client, questions };
}

async function serveTools(): Promise<string> {
  const server = mcpServer(
    { tools: [add, deleteFile, count, waitForCancel] },
    { name: "files", version: "1.2.3" },
  );
  servers.push(server);
  return (await server.listen({ port: 0, auth: TOKEN })).url;
}

const textOf = (result: unknown) =>
  ((result as { content: Array<{ type: string; text?: string }> }).content ?? [])
    .map((block) => block.text ?? `[${block.type}]`)
    .join("");

describe("mcpServer({ tools }).listen() over streamable HTTP", () => {
  it("lists each tool with its JSON Schema, description and annotations from its hints", async () => {
    const { client } = await connect(await serveTools());
    expect(client.getServerVersion()).toMatchObject({ name: "files", version: "1.2.3" });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["add", "delete_file", "count", "wait_for_cancel"]);
    const [addTool, deleteTool, countTool] = tools;
    expect(addTool).toMatchObject({
      title: "Add numbers",
      description: "Add two numbers.",
      inputSchema: add.toSpec().parameters,
      annotations: { title: "Add numbers", readOnlyHint: true },
    });
    expect(deleteTool!.annotations).toEqual({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
    });
    expect(countTool!.annotations).toEqual({
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
    });
  });

  it("runs a call with the engine's coercion and validation, and returns the same text a model would read", async () => {
    const { client } = await connect(await serveTools());
    expect(await client.callTool({ name: "add", arguments: { a: "2", b: 3 } })).toEqual({
      content: [{ type: "text", text: "5" }],
    });
    const invalid = await client.callTool({ name: "add", arguments: { a: "two" } });
    expect(invalid.isError).toBe(true);
    // Exactly what a model reads for the same call.
    const model = new ScriptedModel([{ toolCalls: [{ name: "add", args: { a: "two" } }] }, { text: "" }]);
    const direct = await Runner.run(new Agent({ name: "direct", model, tools: [add] }), "add");
    expect(direct.toolCalls[0]!.output).toMatch(/^Tool error: invalid arguments for add:\n- b: is required/);
    expect(textOf(invalid)).toBe(direct.toolCalls[0]!.output);
    const unknown = await client.callTool({ name: "nope", arguments: {} }).catch((error: Error) => error);
    expect((unknown as Error).message).toBe("MCP error -32602: Unknown tool: nope");
  });

  it("asks the client through elicitation before a destructive call, and runs it when accepted", async () => {
    const { client, questions } = await connect(await serveTools(), () => ({
      action: "accept",
      content: { approve: true },
    }));
    const result = await client.callTool({ name: "delete_file", arguments: { path: "notes.txt" } });
    expect(result).toEqual({ content: [{ type: "text", text: "deleted notes.txt" }] });
    expect(deleted).toEqual(["notes.txt"]);
    expect(questions).toEqual([
      'Call delete_file with {"path":"notes.txt"}?\nWhy it asks: delete_file is destructive.',
    ]);
  });

  it("refuses the call when the client declines, with the reason the user gave", async () => {
    const { client } = await connect(await serveTools(), () => ({
      action: "accept",
      content: { approve: false, reason: "not today" },
    }));
    const result = await client.callTool({ name: "delete_file", arguments: { path: "notes.txt" } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(
      "Tool error: delete_file was not approved: not today\n" +
        "Hint: Do not repeat this call. Continue without it, or ask the user how to proceed.",
    );
    expect(deleted).toEqual([]);

    const { client: declining } = await connect(await serveTools(), () => ({ action: "decline" }));
    const declined = await declining.callTool({ name: "delete_file", arguments: { path: "notes.txt" } });
    expect(textOf(declined)).toContain("delete_file was not approved: the user declined");
    expect(deleted).toEqual([]);
  });

  it("refuses a call that needs approval when the client cannot be asked, naming what would allow it", async () => {
    const { client } = await connect(await serveTools());
    const result = await client.callTool({ name: "delete_file", arguments: { path: "notes.txt" } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain(
      "delete_file was not approved: delete_file needs approval (delete_file is destructive), and this MCP client cannot be asked: it did not declare the elicitation capability",
    );
    expect(textOf(result)).toContain(
      'new StandardPermissions({ mode: "acceptEdits", editTools: ["delete_file"] })',
    );
    expect(textOf(result)).toContain('{ mode: "bypass" }');
    expect(deleted).toEqual([]);
  });

  it("refuses a browser page of another origin, saying how to call it instead", async () => {
    const url = await serveTools();
    const response = await fetch(url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${TOKEN}`,
        origin: "https://app.example",
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(response.status).toBe(403);
    const { error } = (await response.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("cross_origin");
    expect(error.message).toBe(
      "requests from https://app.example are refused; an MCP server takes no browser pages' requests: call it from a server-side client, or through a proxy of your own",
    );
  });

  it("sends the tool's partial results as progress notifications", async () => {
    const { client } = await connect(await serveTools());
    const progress: Array<{ progress: number; message?: string }> = [];
    const result = await client.callTool({ name: "count", arguments: { n: 3 } }, undefined, {
      onprogress: (p) => progress.push({ progress: p.progress, ...(p.message && { message: p.message }) }),
    });
    expect(textOf(result)).toBe("counted to 3");
    expect(progress.slice(0, 3)).toEqual([
      { progress: 1, message: "counted 1" },
      { progress: 2, message: "counted 2" },
      { progress: 3, message: "counted 3" },
    ]);
    expect(progress.at(-1)).toEqual({ progress: 15, message: "burst 5" });
  });

  it("aborts the tool's signal when the client cancels the call", async () => {
    const { client } = await connect(await serveTools());
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const stopped = new Promise<void>((resolve) => {
      aborted = resolve;
    });
    const controller = new AbortController();
    const call = client.callTool({ name: "wait_for_cancel", arguments: {} }, undefined, {
      signal: controller.signal,
    });
    await running;
    controller.abort("changed my mind");
    await expect(call).rejects.toThrow();
    await stopped;
    // The connection is still usable after a cancelled call.
    expect(textOf(await client.callTool({ name: "add", arguments: { a: 1, b: 1 } }))).toBe("2");
  });

  it("answers 401 without the token, and refuses another user's session", async () => {
    const url = await serveTools();
    const bare = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(bare.status).toBe(401);
    expect(bare.headers.get("www-authenticate")).toBe("Bearer");
    await expect(connect(url, undefined, {})).rejects.toThrow();
    await expect(connect(url, undefined, { authorization: "Bearer wrong" })).rejects.toThrow();
  });

  it("starts a session only with initialize, and closes one left idle", async () => {
    const server = mcpServer({ tools: [add] }, { name: "calc", version: "1.0.0" });
    servers.push(server);
    const { url } = await server.listen({ port: 0, sessionIdleMs: 60 });
    const stray = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(stray.status).toBe(400);
    const transport = new StreamableHTTPClientTransport(new URL(url));
    const client = new Client({ name: "idle", version: "1" });
    await client.connect(transport);
    clients.push(client);
    expect((await client.listTools()).tools).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 250));
    const late = await fetch(url, {
      method: "POST",
      headers: {
        "mcp-session-id": transport.sessionId!,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
    });
    expect(late.status).toBe(404);
  });

  it("keeps a session to the user who opened it", async () => {
    const users: Record<string, string> = { "token-ann": "ann", "token-bob": "bob" };
    const server = mcpServer({ tools: [add] }, { name: "calc", version: "1.0.0" });
    servers.push(server);
    const { url } = await server.listen({
      port: 0,
      auth: (request) => users[request.headers.get("authorization")?.replace(/^Bearer /, "") ?? ""] ?? null,
    });
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { authorization: "Bearer token-ann" } },
    });
    const client = new Client({ name: "ann", version: "1" });
    await client.connect(transport);
    clients.push(client);
    const asBob = await fetch(url, {
      method: "POST",
      headers: {
        authorization: "Bearer token-bob",
        "mcp-session-id": transport.sessionId!,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list" }),
    });
    expect(asBob.status).toBe(404);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["add"]);
  });

  it("cancels the calls in progress on close(), answering them, and resolves once they have ended", async () => {
    const url = await serveTools();
    const { client } = await connect(url);
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    let stoppedAt = 0;
    aborted = () => {
      stoppedAt = Date.now();
    };
    const call = client.callTool({ name: "wait_for_cancel", arguments: {} });
    await running;
    await servers.pop()!.close();
    expect(stoppedAt).toBeGreaterThan(0);
    // The client gets an answer, not a request left to time out.
    const answer = await call;
    expect(answer.isError).toBe(true);
    expect(textOf(answer)).toBe(
      "Tool error: wait_for_cancel was stopped before it finished: the run was cancelled",
    );
  });

  it("refuses to listen beyond loopback without auth", async () => {
    const server = mcpServer({ tools: [add] }, { name: "calc", version: "1.0.0" });
    servers.push(server);
    await expect(server.listen({ port: 0, hostname: "0.0.0.0" })).rejects.toThrow(UserError);
    await expect(server.listen({ port: 0, hostname: "0.0.0.0" })).rejects.toThrow(
      /refusing to listen on 0\.0\.0\.0 without auth/,
    );
  });
});

describe("mcpServer({ agent }).listen() over streamable HTTP", () => {
  /** Every run: the model deletes the file the input names, then reports what the tool said. */
  function janitor(): Agent {
    const turn = (request: { messages: readonly { role: string; content: unknown }[] }) => {
      const last = request.messages.at(-1)!;
      if (last.role === "tool") return { text: `finished: ${String(last.content)}` };
      return { toolCalls: [{ name: "delete_file", args: { path: String(last.content) } }] };
    };
    return new Agent({
      name: "janitor",
      model: new ScriptedModel(
        Array.from({ length: 20 }, () => turn),
        { record: false },
      ),
      tools: [deleteFile],
    });
  }

  it("exposes the agent as one tool whose call is a whole run, approvals asked of the client", async () => {
    const store = new MemoryStore();
    const events: RunEvent[] = [];
    const server = mcpServer(
      { agent: janitor() },
      { name: "janitor-server", version: "1.0.0", store, onEvent: (ev) => events.push(ev) },
    );
    servers.push(server);
    const { url } = await server.listen({ port: 0, auth: TOKEN });
    const { client, questions } = await connect(url, () => ({
      action: "accept",
      content: { approve: true },
    }));

    const { tools } = await client.listTools();
    expect(tools).toHaveLength(1);
    expect(tools[0]).toMatchObject({
      name: "janitor",
      inputSchema: { type: "object", properties: { input: { type: "string" } }, required: ["input"] },
    });
    const progress: string[] = [];
    const result = await client.callTool({ name: "janitor", arguments: { input: "old.log" } }, undefined, {
      onprogress: (p) => progress.push(p.message ?? ""),
    });
    expect(textOf(result)).toBe("finished: deleted old.log");
    expect(result.isError).toBeFalsy();
    expect(deleted).toEqual(["old.log"]);
    expect(questions).toEqual([
      'The agent janitor wants to call delete_file with {"path":"old.log"}?\nWhy it asks: delete_file is destructive.',
    ]);
    expect(progress).toContain("calling delete_file");

    const runId = (result._meta as Record<string, string>)["quiver-agents/runId"]!;
    expect((await store.listRuns()).map((r) => [r.runId, r.status])).toEqual([[runId, "completed"]]);
    expect(events.find((e) => e.type === "approval_resolved")).toMatchObject({ decision: "approved" });
    expect(events.at(-1)).toMatchObject({ type: "run_completed", runId, stopReason: "completed" });
  });

  it("lets the run's model read a refusal when the client declines", async () => {
    const server = mcpServer({ agent: janitor() }, { name: "janitor-server", version: "1.0.0" });
    servers.push(server);
    const { url } = await server.listen({ port: 0, auth: TOKEN });
    const { client } = await connect(url, () => ({ action: "decline" }));
    const result = await client.callTool({ name: "janitor", arguments: { input: "old.log" } });
    expect(textOf(result)).toBe(
      "finished: Tool error: delete_file was not approved: the user declined\n" +
        "Hint: Do not repeat this call. Continue without it, or ask the user how to proceed.",
    );
    expect(deleted).toEqual([]);
    const invalid = await client.callTool({ name: "janitor", arguments: { input: 42 } });
    expect(invalid.isError).toBe(true);
    expect(textOf(invalid)).toMatch(/^Tool error: invalid arguments for janitor:\n- input: /);
  });
});
