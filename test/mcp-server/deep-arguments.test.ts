// A client's arguments nested thousands of levels deep: an invalid-arguments result, not a
// JSON-RPC internal error from a stack overflow, and the server keeps serving.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { jsonSchema, tool } from "quiver-agents";
import { mcpServer } from "quiver-agents/mcp-server";
import { expect, it } from "vitest";

const record = tool({
  name: "record",
  description: "Records tags.",
  parameters: jsonSchema<{ tags?: Record<string, unknown> }>({
    type: "object",
    properties: { tags: { type: "object" } },
  }),
  execute: () => "recorded",
});

it("arguments nested 20,000 levels deep get an isError result, and the connection goes on", async () => {
  const server = mcpServer({ tools: [record] }, { name: "s", version: "1.0.0" });
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "c", version: "1.0.0" });
  await client.connect(clientSide);
  try {
    const deep = JSON.parse(`${"[".repeat(20_000)}${"]".repeat(20_000)}`);
    const answer = await client.callTool({ name: "record", arguments: { tags: { k: deep } } });
    expect(answer.isError).toBe(true);
    expect(JSON.stringify(answer.content)).toMatch(
      /Invalid arguments for record: they are nested too deeply/,
    );
    const fine = await client.callTool({ name: "record", arguments: { tags: { k: 1 } } });
    expect(fine).toMatchObject({ content: [{ type: "text", text: "recorded" }] });
  } finally {
    await client.close();
    await server.close();
  }
});
