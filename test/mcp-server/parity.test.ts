import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import {
  Agent,
  InProcessToolHost,
  jsonSchema,
  Runner,
  ScriptedModel,
  StandardPermissions,
  type Tool,
  ToolError,
  tool,
} from "quiver-agents";
import { type McpToolsOptions, mcpServer, type QuiverMcpServer } from "quiver-agents/mcp-server";
import { afterEach, describe, expect, it } from "vitest";

const servers: QuiverMcpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const noArgs = jsonSchema<Record<string, never>>({ type: "object", properties: {} });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A client connected in memory (any SDK transport works with `connect`). */
async function client(
  server: QuiverMcpServer,
  answer?: (message: string) => ElicitResult | Promise<ElicitResult>,
): Promise<{ client: Client; questions: string[] }> {
  servers.push(server);
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const questions: string[] = [];
  const c = new Client({ name: "memory", version: "1" }, { capabilities: answer ? { elicitation: {} } : {} });
  if (answer)
    c.setRequestHandler(ElicitRequestSchema, async (request) => {
      questions.push(String(request.params.message));
      return answer(String(request.params.message));
    });
  await c.connect(clientSide);
  return { client: c, questions };
}

function toolsServer(tools: Array<Tool | InProcessToolHost>, options: Partial<McpToolsOptions> = {}) {
  return mcpServer({ tools }, { name: "parity", version: "1.0.0", ...options });
}

const textOf = (result: unknown) =>
  ((result as { content: Array<{ type: string; text?: string }> }).content ?? [])
    .map((block) => block.text ?? `[${block.type}]`)
    .join("");

/** What a model reads for one call of `tool` with `args` (the engine, no MCP in between). */
async function modelReads(tools: Tool[], name: string, args: unknown, settings = {}): Promise<string> {
  const model = new ScriptedModel([{ toolCalls: [{ name, args }] }, { text: "" }]);
  const result = await Runner.run(new Agent({ name: "direct", model, tools, ...settings }), "go");
  return result.toolCalls[0]!.output;
}

describe("a call runs as the engine runs a model's call", () => {
  it("times out per attempt and retries, with the engine's words", async () => {
    let attempts = 0;
    const slow = tool({
      name: "slow",
      description: "Too slow.",
      parameters: noArgs,
      timeoutMs: 40,
      execute: () => sleep(1_000).then(() => "late"),
    });
    const flaky = tool({
      name: "flaky",
      description: "Fails once.",
      parameters: noArgs,
      retries: 1,
      retryBackoff: { initialMs: 1, jitter: false },
      execute: () => {
        attempts++;
        if (attempts === 1) throw new Error("the first attempt fails");
        return "second time lucky";
      },
    });
    const picky = tool({
      name: "picky",
      description: "Throws a ToolError.",
      parameters: noArgs,
      execute: () => {
        throw new ToolError("no such order", { hint: "ids look like A123" });
      },
    });
    const { client: c } = await client(toolsServer([slow, flaky, picky]));
    const timedOut = await c.callTool({ name: "slow", arguments: {} });
    expect(timedOut.isError).toBe(true);
    expect(textOf(timedOut)).toBe(await modelReads([slow], "slow", {}));
    expect(textOf(timedOut)).toMatch(/^Tool error: slow timed out after 40 ms/);
    expect(textOf(await c.callTool({ name: "flaky", arguments: {} }))).toBe("second time lucky");
    expect(attempts).toBe(2);
    expect(textOf(await c.callTool({ name: "picky", arguments: {} }))).toBe(
      "Tool error: no such order\nHint: ids look like A123",
    );
  });

  it("renders, truncates and passes images as the model would get them", async () => {
    const big = tool({
      name: "big",
      description: "A long text.",
      parameters: noArgs,
      execute: () => "x".repeat(1_000),
    });
    const rendered = tool({
      name: "rendered",
      description: "Rendered.",
      parameters: noArgs,
      execute: () => ({ total: 3 }),
      resultRenderer: (value) => `the total is ${(value as { total: number }).total}`,
    });
    const pixel =
      "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    const picture = tool({
      name: "picture",
      description: "An image.",
      parameters: noArgs,
      execute: () => ({
        content: [
          { type: "text", text: "a pixel" },
          { type: "image", data: pixel, mimeType: "image/png" },
        ],
      }),
    });
    const { client: c } = await client(toolsServer([big, rendered, picture], { maxToolOutputChars: 100 }));
    const cut = textOf(await c.callTool({ name: "big", arguments: {} }));
    expect(cut).toMatch(/\[\.\.\. tool output truncated: kept \d+ of 1,000 chars \.\.\.\]/);
    expect(cut.length).toBeLessThanOrEqual(100);
    expect(cut).toBe(await modelReads([big], "big", {}, { maxToolOutputChars: 100 }));
    expect(textOf(await c.callTool({ name: "rendered", arguments: {} }))).toBe("the total is 3");
    expect((await c.callTool({ name: "picture", arguments: {} })).content).toEqual([
      { type: "text", text: "a pixel" },
      { type: "image", data: pixel, mimeType: "image/png" },
    ]);
  });

  it("runs a parallel: false tool alone: after the calls in flight, before the calls after it", async () => {
    const log: string[] = [];
    const work = (name: string, ms: number) =>
      tool({
        name,
        description: name,
        parameters: noArgs,
        parallel: name !== "barrier",
        execute: async () => {
          log.push(`${name} start`);
          await sleep(ms);
          log.push(`${name} end`);
          return name;
        },
      });
    const { client: c } = await client(
      toolsServer([work("first", 80), work("barrier", 30), work("after", 10)]),
    );
    const first = c.callTool({ name: "first", arguments: {} });
    await sleep(20);
    const barrier = c.callTool({ name: "barrier", arguments: {} });
    await sleep(5);
    const after = c.callTool({ name: "after", arguments: {} });
    await Promise.all([first, barrier, after]);
    expect(log).toEqual([
      "first start",
      "first end",
      "barrier start",
      "barrier end",
      "after start",
      "after end",
    ]);
  });

  it("lists tools from hosts, and hides what the permissions never offer", async () => {
    const echo = tool({
      name: "echo",
      description: "Echo.",
      parameters: jsonSchema<{ text: string }>({
        type: "object",
        properties: { text: { type: "string" } },
        required: ["text"],
      }),
      execute: ({ text }) => text,
    });
    const secret = tool({ name: "secret", description: "Hidden.", parameters: noArgs, execute: () => "no" });
    const host = new InProcessToolHost([echo]);
    const { client: c } = await client(
      toolsServer([secret, host], { permissions: new StandardPermissions({ deniedTools: ["secret"] }) }),
    );
    expect((await c.listTools()).tools.map((t) => t.name)).toEqual(["echo"]);
    expect(textOf(await c.callTool({ name: "echo", arguments: { text: "hi" } }))).toBe("hi");
    await expect(c.callTool({ name: "secret", arguments: {} })).rejects.toThrow(/Unknown tool: secret/);

    // A host that lists a name the server's own tools have: the error says where each one is.
    const clash = await client(toolsServer([secret, new InProcessToolHost([secret])]));
    await expect(clash.client.listTools()).rejects.toThrow(
      /two tools are named secret \(one in the server's tools, one in tool host 1 \(InProcessToolHost\)\): an MCP server offers each name once/,
    );
  });
});

describe("approvals", () => {
  it("asks about needsApproval even in bypass mode, and not about what the mode lets through", async () => {
    const ran: string[] = [];
    const deploy = tool({
      name: "deploy",
      description: "Deploy.",
      parameters: noArgs,
      needsApproval: true,
      execute: () => {
        ran.push("deploy");
        return "deployed";
      },
    });
    const wipe = tool({
      name: "wipe",
      description: "Wipe.",
      parameters: noArgs,
      destructive: true,
      execute: () => {
        ran.push("wipe");
        return "wiped";
      },
    });
    const { client: c, questions } = await client(
      toolsServer([deploy, wipe], { permissions: new StandardPermissions({ mode: "bypass" }) }),
      () => ({ action: "accept", content: { approve: true } }),
    );
    expect(textOf(await c.callTool({ name: "wipe", arguments: {} }))).toBe("wiped");
    expect(questions).toEqual([]);
    expect(textOf(await c.callTool({ name: "deploy", arguments: {} }))).toBe("deployed");
    expect(questions).toEqual(["Call deploy with {}?\nWhy it asks: deploy needs approval."]);
    expect(ran).toEqual(["wipe", "deploy"]);
  });

  it("cancels the call, and the question, when the client cancels while it is being asked", async () => {
    let ran = false;
    const wipe = tool({
      name: "wipe",
      description: "Wipe.",
      parameters: noArgs,
      destructive: true,
      execute: () => {
        ran = true;
        return "wiped";
      },
    });
    let asked!: () => void;
    const asking = new Promise<void>((resolve) => {
      asked = resolve;
    });
    const { client: c } = await client(toolsServer([wipe]), () => {
      asked();
      // The person never answers.
      return new Promise<ElicitResult>(() => {});
    });
    const controller = new AbortController();
    const call = c.callTool({ name: "wipe", arguments: {} }, undefined, { signal: controller.signal });
    await asking;
    controller.abort();
    await expect(call).rejects.toThrow();
    await sleep(50);
    expect(ran).toBe(false);
  });

  it("lets an exposed agent's own approvalHandler answer first, and asks the client what it leaves open", async () => {
    const tools = ["staging", "production"].map((env) =>
      tool({
        name: `deploy_${env}`,
        description: `Deploy to ${env}.`,
        parameters: noArgs,
        destructive: true,
        execute: () => `deployed to ${env}`,
      }),
    );
    const turn = (request: { messages: readonly { role: string; content: unknown }[] }) => {
      const last = request.messages.at(-1)!;
      if (last.role === "tool") return { text: String(last.content) };
      return { toolCalls: [{ name: `deploy_${String(last.content)}`, args: {} }] };
    };
    const agent = new Agent({
      name: "ops",
      model: new ScriptedModel([turn, turn, turn, turn], { record: false }),
      tools,
      approvalHandler: (call) => (call.name === "deploy_staging" ? "allow" : "ask"),
    });
    const { client: c, questions } = await client(
      mcpServer({ agent }, { name: "ops", version: "1.0.0" }),
      () => ({ action: "accept", content: { approve: false, reason: "freeze week" } }),
    );
    expect(textOf(await c.callTool({ name: "ops", arguments: { input: "staging" } }))).toBe(
      "deployed to staging",
    );
    expect(questions).toEqual([]);
    expect(textOf(await c.callTool({ name: "ops", arguments: { input: "production" } }))).toBe(
      "Tool error: deploy_production was not approved: freeze week\n" +
        "Hint: Do not repeat this call. Continue without it, or ask the user how to proceed.",
    );
    expect(questions).toHaveLength(1);
  });

  it("reports an agent run that stops early as an error, with the run id", async () => {
    const looping = new ScriptedModel(
      Array.from({ length: 3 }, () => ({ text: "thinking", toolCalls: [{ name: "noop", args: {} }] })),
    );
    const noop = tool({ name: "noop", description: "Nothing.", parameters: noArgs, execute: () => "ok" });
    const agent = new Agent({ name: "looper", model: looping, tools: [noop] });
    const { client: c } = await client(mcpServer({ agent }, { name: "l", version: "1", maxTurns: 2 }));
    const result = await c.callTool({ name: "looper", arguments: { input: "go" } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(
      "Tool error: the agent looper stopped before it finished (it reached its turn limit); its last words: thinking",
    );
    expect(result._meta).toHaveProperty(["quiver-agents/runId"]);
  });
});
