// The bound on open streamable HTTP sessions: a client that keeps opening sessions cannot grow
// the server without limit, and cannot push another user's sessions out.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { jsonSchema, tool, UserError } from "quiver-agents";
import { mcpServer, type QuiverMcpServer } from "quiver-agents/mcp-server";
import { afterEach, describe, expect, it } from "vitest";

const echo = tool({
  name: "echo",
  description: "Echo.",
  parameters: jsonSchema<{ text: string }>({ type: "object", properties: { text: { type: "string" } } }),
  readOnly: true,
  execute: ({ text }) => text,
});

const servers: QuiverMcpServer[] = [];
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const users: Record<string, string> = { "token-a": "alice", "token-b": "bob", "token-c": "carol" };

async function serve(caps: { maxSessions?: number; maxSessionsPerUser?: number }): Promise<string> {
  const server = mcpServer({ tools: [echo] }, { name: "echo", version: "1.0.0" });
  servers.push(server);
  const auth = (request: Request) =>
    users[request.headers.get("authorization")?.replace(/^Bearer /, "") ?? ""] ?? null;
  return (await server.listen({ port: 0, auth, ...caps })).url;
}

async function connect(url: string, token: string): Promise<Client> {
  const client = new Client({ name: "c", version: "1.0.0" });
  const headers = { authorization: `Bearer ${token}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  clients.push(client);
  return client;
}

/** A bare `initialize`, to read the HTTP status. */
async function initialize(url: string, token: string): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
    }),
  });
}

const alive = (client: Client) =>
  client.ping().then(
    () => true,
    () => false,
  );

describe("open session caps", () => {
  it("past a user's cap, that user's oldest idle session is closed to make room", async () => {
    const url = await serve({ maxSessionsPerUser: 2 });
    const first = await connect(url, "token-a");
    const second = await connect(url, "token-a");
    const bobs = await connect(url, "token-b");
    const third = await connect(url, "token-a");
    expect(await alive(first)).toBe(false);
    expect(await alive(second)).toBe(true);
    expect(await alive(third)).toBe(true);
    expect(await alive(bobs)).toBe(true);
  });

  it("past the total cap, a user with no idle session of their own gets a 503, and nobody else's session goes", async () => {
    const url = await serve({ maxSessions: 3 });
    const a1 = await connect(url, "token-a");
    const a2 = await connect(url, "token-a");
    const b1 = await connect(url, "token-b");
    const refused = await initialize(url, "token-c");
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBeTruthy();
    expect(JSON.stringify(await refused.json())).toMatch(/too many open MCP sessions/);
    for (const client of [a1, a2, b1]) expect(await alive(client)).toBe(true);
    // A user with an idle session of their own makes room by closing it.
    const b2 = await connect(url, "token-b");
    expect(await alive(b1)).toBe(false);
    expect(await alive(b2)).toBe(true);
  });

  it("refuses caps that are not positive integers", async () => {
    const server = mcpServer({ tools: [echo] }, { name: "echo", version: "1.0.0" });
    servers.push(server);
    await expect(server.listen({ port: 0, maxSessions: 0 })).rejects.toThrow(UserError);
  });
});
