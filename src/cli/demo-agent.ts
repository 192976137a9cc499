import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { now } from "../builtin-tools/time.js";
import { ScriptedModel } from "../model/scripted.js";
import { Agent } from "../run/config/agent.js";
import { jsonSchema } from "../tool/json-schema.js";
import { tool } from "../tool/tool.js";
import { workspace } from "../workspace/workspace.js";

/** The installed package's own folder: the demo works on a copy of some of its files. */
const packageRoot = resolve(fileURLToPath(new URL("../../", import.meta.url)));

/**
 * A demo agent with real tools — the workspace's file and shell tools on a temporary copy of
 * some of the package's files, a flaky local service (a retry) — and its cleanup. Its edit of
 * NOTES.md asks for approval with a diff.
 */
export async function demoAgent(): Promise<{ agent: Agent<any, any>; close: () => Promise<void> }> {
  const service = await flakyService();
  const root = await mkdtemp(join(tmpdir(), "quiver-demo-"));
  await copyFile(join(packageRoot, "package.json"), join(root, "package.json"));
  await copyFile(join(packageRoot, "dist/index.js"), join(root, "index.js"));
  await writeFile(join(root, "NOTES.md"), "# Notes\n\n- nothing checked yet\n");
  const ws = workspace({
    root,
    // Read-only commands (and sleep) run without asking; anything else would ask.
    shell: { allow: ["wc", "cat", "ls", "head", "sleep"], deny: ["rm -rf"], maxOutputChars: 600 },
  });

  const buildStatus = tool({
    name: "build_status",
    description: "Ask the build service (on this machine) whether the build is green.",
    parameters: jsonSchema<Record<string, never>>({ type: "object", properties: {} }),
    retries: 2,
    retryBackoff: { initialMs: 150, jitter: false },
    timeoutMs: 2_000,
    execute: async (_args, ctx) => {
      const res = await fetch(service.url, { signal: ctx.signal });
      if (!res.ok) throw new Error(`the build service answered ${res.status}`);
      return res.json();
    },
  });

  const agent = new Agent({
    name: "inspector",
    model: scriptedModel(),
    instructions: [
      "You inspect a copy of the quiver-agents package. In one turn: get the time, list and search its files, read " +
        "NOTES.md and ask the build service. Then measure the files with the shell. Finally record what you found " +
        "in NOTES.md with edit_file.",
      ws.instructions,
    ],
    tools: [now, ...ws.tools, buildStatus],
  });
  return {
    agent,
    close: async () => {
      await new Promise<void>((done) => service.server.close(() => done()));
      await rm(root, { recursive: true, force: true });
    },
  };
}

function scriptedModel(): ScriptedModel {
  return new ScriptedModel(
    [
      {
        text: "I'll check the time, list and search the files, read the notes and ask the build service, all at once.",
        toolCalls: [
          { name: "now", args: {} },
          { name: "list_files", args: {} },
          { name: "grep_files", args: { pattern: "^export", glob: "*.js" } },
          { name: "read_file", args: { path: "NOTES.md" } },
          { name: "build_status", args: {} },
        ],
      },
      {
        text: "The build service needed a retry. Now the sizes, and the files themselves.",
        toolCalls: [
          {
            name: "shell",
            args: {
              command: "wc -l package.json index.js && sleep 0.6 && cat index.js package.json",
              description: "measure and print the package files",
            },
          },
        ],
      },
      {
        text: "Recording the findings in the notes.",
        toolCalls: [
          {
            name: "edit_file",
            args: {
              path: "NOTES.md",
              old_string: "- nothing checked yet",
              new_string: "- build: green (after one retry)\n- package files measured with wc",
            },
          },
        ],
      },
      (request) => {
        const results = request.messages.filter((m) => m.role === "tool");
        const last = results.at(-1);
        const wrote = last?.role === "tool" && !last.isError;
        return {
          text: `Done: ${results.length} tool results read; ${wrote ? "the notes were updated" : "the notes were left as they were (not approved)"}.`,
        };
      },
    ],
    { name: "scripted" },
  );
}

/** A local service that answers 503 to its first request, so the tool's retry has work to do. */
async function flakyService(): Promise<{ server: Server; url: string }> {
  let requests = 0;
  const server = createServer((_req, res) => {
    requests++;
    if (requests === 1) res.writeHead(503).end("warming up");
    else
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ build: "green", requests }));
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  server.unref();
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/status` };
}
