import { spawn } from "node:child_process";
import { cpSync, existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { builtPackage, project } from "../cli/binary.js";

let bin: string;
let pkgRoot: string;
const dirs: string[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  ({ bin, root: pkgRoot } = await builtPackage());
}, 150_000);

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
});

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A project with the built package installed and the janitor agent file in it. */
function freshProject(): string {
  const dir = project(pkgRoot);
  cpSync(join(import.meta.dirname, "fixtures/janitor-agent.mjs"), join(dir, "janitor-agent.mjs"));
  dirs.push(dir);
  return dir;
}

/** The SDK's own client, starting `quiver mcp …` as a desktop client would. */
async function stdioClient(
  cwd: string,
  args: string[],
  answer?: (message: string) => ElicitResult,
): Promise<{ client: Client; stderr: () => string }> {
  const client = new Client(
    { name: "desktop", version: "1.0.0" },
    { capabilities: answer ? { elicitation: {} } : {} },
  );
  if (answer)
    client.setRequestHandler(ElicitRequestSchema, async (request) => answer(String(request.params.message)));
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [bin, "mcp", "janitor-agent.mjs", ...args],
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: cwd, NO_COLOR: "1" },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  await client.connect(transport);
  clients.push(client);
  return { client, stderr: () => stderr };
}

const textOf = (result: unknown) =>
  ((result as { content: Array<{ type: string; text?: string }> }).content ?? [])
    .map((block) => block.text ?? `[${block.type}]`)
    .join("");

async function until(check: () => boolean, what: string): Promise<void> {
  // Generous: the machine running the tests may be busy starting other processes.
  const deadline = Date.now() + 15_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("quiver mcp <agent file> --tools over stdio", () => {
  it("lists the agent's tools with schemas and annotations, and runs calls as the engine does", async () => {
    const cwd = freshProject();
    const { client, stderr } = await stdioClient(cwd, ["--tools"]);
    expect(client.getServerVersion()?.name).toBe("janitor");
    const { tools } = await client.listTools();
    expect(tools.map((t) => [t.name, t.annotations])).toEqual([
      ["add", { title: "Add numbers", readOnlyHint: true }],
      ["delete_file", { readOnlyHint: false, destructiveHint: true, idempotentHint: false }],
      ["count", { readOnlyHint: false, destructiveHint: false, idempotentHint: true }],
      ["wait_for_cancel", { readOnlyHint: false, destructiveHint: false, idempotentHint: false }],
    ]);
    expect(tools[0]!.inputSchema).toEqual({
      type: "object",
      properties: { a: { type: "number" }, b: { type: "number" } },
      required: ["a", "b"],
    });
    expect(await client.callTool({ name: "add", arguments: { a: 2, b: "3" } })).toEqual({
      content: [{ type: "text", text: "5" }],
    });
    const invalid = await client.callTool({ name: "add", arguments: { a: 2 } });
    expect(invalid.isError).toBe(true);
    expect(textOf(invalid)).toMatch(/^Tool error: invalid arguments for add:\n- b: is required\nHint: /);
    // The agent file's console.log went to stderr, not into the protocol.
    expect(stderr()).toContain("loading the janitor");
  });

  it("reports progress and stops a call the client cancels", async () => {
    const cwd = freshProject();
    const { client } = await stdioClient(cwd, ["--tools"]);
    const progress: string[] = [];
    const counted = await client.callTool({ name: "count", arguments: { n: 3 } }, undefined, {
      onprogress: (p) => progress.push(`${p.progress}:${p.message}`),
    });
    expect(textOf(counted)).toBe("counted to 3");
    expect(progress).toEqual(["1:counted 1", "2:counted 2", "3:counted 3"]);

    const controller = new AbortController();
    const call = client.callTool({ name: "wait_for_cancel", arguments: {} }, undefined, {
      signal: controller.signal,
    });
    await until(() => existsSync(join(cwd, "started")), "the call to start");
    controller.abort("stop");
    await expect(call).rejects.toThrow();
    await until(() => existsSync(join(cwd, "aborted")), "the tool's signal to abort");
  });

  it("asks the client through elicitation: yes runs the call, no refuses it", async () => {
    const cwd = freshProject();
    const questions: string[] = [];
    const { client } = await stdioClient(cwd, ["--tools"], (message) => {
      questions.push(message);
      return message.includes("notes.txt")
        ? { action: "accept", content: { approve: true } }
        : { action: "decline" };
    });
    const yes = await client.callTool({ name: "delete_file", arguments: { path: "notes.txt" } });
    expect(textOf(yes)).toBe("deleted notes.txt");
    expect(existsSync(join(cwd, "deleted-notes.txt"))).toBe(true);
    const no = await client.callTool({ name: "delete_file", arguments: { path: "keep.txt" } });
    expect(no.isError).toBe(true);
    expect(textOf(no)).toMatch(/^Tool error: delete_file was not approved: the user declined\n/);
    expect(existsSync(join(cwd, "deleted-keep.txt"))).toBe(false);
    expect(questions).toHaveLength(2);
  });

  it("refuses what needs approval for a client without elicitation, and --mode bypass lets it run", async () => {
    const cwd = freshProject();
    const { client } = await stdioClient(cwd, ["--tools"]);
    const refused = await client.callTool({ name: "delete_file", arguments: { path: "notes.txt" } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain("this MCP client cannot be asked");
    expect(textOf(refused)).toContain("--mode bypass");
    expect(existsSync(join(cwd, "deleted-notes.txt"))).toBe(false);

    const { client: bypassing } = await stdioClient(cwd, ["--tools", "--mode", "bypass"]);
    expect(textOf(await bypassing.callTool({ name: "delete_file", arguments: { path: "notes.txt" } }))).toBe(
      "deleted notes.txt",
    );
  });
});

describe("quiver mcp <agent file> (the agent as one tool)", () => {
  it("runs the agent to completion, asking the client about its destructive call", async () => {
    const cwd = freshProject();
    const questions: string[] = [];
    const { client } = await stdioClient(cwd, [], (message) => {
      questions.push(message);
      return { action: "accept", content: { approve: true } };
    });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["janitor"]);
    const result = await client.callTool({ name: "janitor", arguments: { input: "old.log" } });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toBe("finished: deleted old.log");
    expect(existsSync(join(cwd, "deleted-old.log"))).toBe(true);
    expect(questions).toEqual([
      'The agent janitor wants to call delete_file with {"path":"old.log"}?\nWhy it asks: delete_file is destructive.',
    ]);
  });

  it("keeps stdout to the protocol and exits 0 when the client closes stdin", async () => {
    const cwd = freshProject();
    const child = spawn(process.execPath, [bin, "mcp", "janitor-agent.mjs"], {
      cwd,
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    child.stdin.write(
      `${JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "raw", version: "1" },
        },
      })}\n`,
    );
    await until(() => out.includes("\n"), "the initialize answer");
    child.stdin.end();
    expect(await exited).toBe(0);
    const lines = out.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ id: 1, result: { serverInfo: { name: "janitor" } } });
  });
});

describe("quiver mcp <agent file> --http", () => {
  it("serves streamable HTTP that needs the token, until SIGINT (it then ends by SIGINT: 130 in a shell)", async () => {
    const cwd = freshProject();
    const child = spawn(
      process.execPath,
      [bin, "mcp", "janitor-agent.mjs", "--http", "0", "--token", "T0k3n", "--tools"],
      { cwd, env: { ...process.env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.stderr.on("data", (d) => {
      err += d;
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on("close", (_code, signal) => resolve(signal)),
    );
    try {
      await until(() => /MCP endpoint (\S+)/.test(out), `the endpoint (${out} ${err})`);
      const url = /MCP endpoint (\S+)/.exec(out)![1]!;
      const bare = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: "{}",
      });
      expect(bare.status).toBe(401);
      const client = new Client({ name: "http", version: "1" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          requestInit: { headers: { authorization: "Bearer T0k3n" } },
        }),
      );
      clients.push(client);
      expect(textOf(await client.callTool({ name: "add", arguments: { a: 20, b: 22 } }))).toBe("42");
    } finally {
      child.kill("SIGINT");
    }
    expect(await exited).toBe("SIGINT"); // 130 in a shell
  });
});
