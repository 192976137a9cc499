/**
 * An agent using the tools of a real MCP server: the reference "everything" server, started
 * as a child process over stdio. Offline: the server is a devDependency and the model is
 * scripted, so what you see is exactly what Quiver does with the server's answers.
 *
 *   npx tsx examples/mcp-everything.ts
 */
import { createRequire } from "node:module";
import { Agent, Runner, ScriptedModel } from "quiver-agents";
import { mcpServer } from "quiver-agents/mcp";

// With npm you would write { command: "npx", args: ["-y", "@modelcontextprotocol/server-everything"] }.
const serverScript = createRequire(import.meta.url).resolve(
  "@modelcontextprotocol/server-everything/dist/index.js",
);

const everything = mcpServer(
  { command: process.execPath, args: [serverScript, "stdio"] },
  {
    prefix: "ev",
    // The reference server, installed from npm and vetted: its annotations may relax the guards.
    // Without this every MCP tool counts as destructive and asks.
    trustAnnotations: true,
    include: [
      "echo",
      "get-tiny-image",
      "get-structured-content",
      "trigger-long-running-operation",
      "trigger-elicitation-request",
    ],
    // The server may ask the user for input mid-call; here a stand-in user answers.
    onElicitation: (request) => {
      console.log(`  [elicitation] ${request.message}`);
      return { action: "accept", content: { name: "Ada Lovelace", check: true } };
    },
  },
);

try {
  console.log("Tools and the hints their MCP annotations became:");
  for (const t of await everything.listTools()) {
    console.log(
      `  ${t.name.padEnd(36)} readOnly=${t.readOnly} destructive=${t.destructive} idempotent=${t.idempotent}`,
    );
  }

  const model = new ScriptedModel([
    {
      toolCalls: [
        { name: "ev__echo", args: { message: "hello over MCP" } },
        { name: "ev__get-structured-content", args: { location: "Chicago" } },
        { name: "ev__get-tiny-image", args: {} },
        { name: "ev__trigger-long-running-operation", args: { duration: 1, steps: 4 } },
      ],
    },
    { toolCalls: [{ name: "ev__trigger-elicitation-request", args: {} }] },
    { text: "All five MCP tools answered." },
  ]);
  // Every tool here is annotated destructiveHint: false and the server is trusted, so nothing
  // needs approval. A tool without annotations is destructive by MCP's default, and would ask.
  const agent = new Agent({ name: "mcp-demo", model, tools: everything });

  const handle = Runner.stream(agent, "Try the server's tools.");
  for await (const ev of handle) {
    if (ev.type === "tool_call_update") console.log(`  progress ${ev.call.name}:`, ev.partial);
    if (ev.type === "tool_call_completed") {
      const shown = ev.output.length > 100 ? `${ev.output.slice(0, 100)}…` : ev.output;
      console.log(`${ev.ok ? "ok  " : "FAIL"} ${ev.call.name}: ${shown.replace(/\n/g, " ⏎ ")}`);
    }
  }
  const result = await handle.result();
  const image = result.messages.find(
    (m) => m.role === "tool" && Array.isArray(m.content) && m.content.some((b) => b.type === "image"),
  );
  console.log(`\nThe image reached the transcript as an image block: ${image !== undefined}`);
  console.log(`Output: ${result.output}`);
} finally {
  await everything.close(); // ends the server process
}
