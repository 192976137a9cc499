import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ToolError } from "../errors.js";
import { ScriptedModel } from "../model/scripted.js";
import { Agent } from "../run/agent.js";
import { jsonSchema } from "../tool/json-schema.js";
import { tool } from "../tool/tool.js";
import { now } from "../tools/time.js";

/** The installed package's own folder: the demo measures its files. */
const packageRoot = resolve(fileURLToPath(new URL("../../", import.meta.url)));

function inPackage(path: string): string {
  const full = resolve(packageRoot, path);
  if (relative(packageRoot, full).startsWith(".."))
    throw new ToolError(`${path} is outside the package`, {
      hint: "Use a path relative to the package folder.",
    });
  return full;
}

const pathArgument = jsonSchema<{ path: string }>({
  type: "object",
  properties: { path: { type: "string", description: "A path relative to the package folder" } },
  required: ["path"],
});

/** A demo agent with real tools (files, a flaky local service, a slow task, a gated write) and its cleanup. */
export async function demoAgent(): Promise<{ agent: Agent<any, any>; close: () => Promise<void> }> {
  const service = await flakyService();
  const outDir = await mkdtemp(join(tmpdir(), "quiver-demo-"));
  const notePath = join(outDir, "notes.md");
  await writeFile(notePath, "# Notes\n\n- nothing checked yet\n");

  const fileStats = tool({
    name: "file_stats",
    description: "Count the lines and bytes of a file of the package and give its SHA-256.",
    parameters: pathArgument,
    readOnly: true,
    execute: async ({ path }) => {
      const data = await readFile(inPackage(path));
      return {
        path,
        bytes: data.length,
        lines: data.toString("utf8").split("\n").length,
        sha256: createHash("sha256").update(data).digest("hex").slice(0, 16),
      };
    },
  });
  const readText = tool({
    name: "read_text",
    description: "Read a text file of the package.",
    parameters: pathArgument,
    readOnly: true,
    maxOutputChars: 600, // a tripwire: the model gets head and tail of anything longer
    execute: async ({ path }) => readFile(inPackage(path), "utf8"),
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
  const runChecks = tool({
    name: "run_checks",
    description: "Run the project's checks; reports progress while it runs.",
    parameters: jsonSchema<{ steps: number }>({
      type: "object",
      properties: { steps: { type: "integer", minimum: 1, maximum: 20 } },
      required: ["steps"],
    }),
    execute: async ({ steps }, ctx) => {
      for (let step = 1; step <= steps; step++) {
        ctx.update({
          tail: `check ${step} of ${steps}: ${["types", "lint", "unit", "docs", "pack"][step % 5]} … ok`,
        });
        await new Promise((ok) => setTimeout(ok, 250));
        ctx.signal.throwIfAborted();
      }
      return `${steps} checks passed`;
    },
  });
  const editNotes = tool({
    name: "edit_notes",
    description: "Replace the notes file (in a temporary folder) with new text.",
    parameters: jsonSchema<{ content: string }>({
      type: "object",
      properties: { content: { type: "string" } },
      required: ["content"],
    }),
    destructive: true,
    parallel: false,
    execute: async ({ content }) => {
      const before = await readFile(notePath, "utf8");
      await writeFile(notePath, content);
      return {
        content: [{ type: "text", text: `wrote ${notePath}` }],
        details: { diff: diffLines("notes.md", before, content) },
      };
    },
  });

  const agent = new Agent({
    name: "inspector",
    model: scriptedModel(),
    instructions:
      "You inspect the quiver-agents package. In one turn: get the time, measure README.md and package.json, and ask the " +
      "build service. Then run 5 checks and read package.json. Finally record what you found with edit_notes.",
    tools: [now, fileStats, readText, buildStatus, runChecks, editNotes],
  });
  return {
    agent,
    close: async () => {
      await new Promise<void>((done) => service.server.close(() => done()));
      await rm(outDir, { recursive: true, force: true });
    },
  };
}

function scriptedModel(): ScriptedModel {
  return new ScriptedModel(
    [
      {
        text: "I'll check the time, measure two files and ask the build service, all at once.",
        toolCalls: [
          { name: "now", args: {} },
          { name: "file_stats", args: { path: "README.md" } },
          { name: "file_stats", args: { path: "package.json" } },
          { name: "build_status", args: {} },
        ],
      },
      {
        text: "The build service needed a retry. Now the checks, and package.json itself.",
        toolCalls: [
          { name: "run_checks", args: { steps: 5 } },
          { name: "read_text", args: { path: "package.json" } },
        ],
      },
      {
        text: "Recording the findings in the notes.",
        toolCalls: [
          {
            name: "edit_notes",
            args: {
              content:
                "# Notes\n\n- build: green (after one retry)\n- checks: 5 passed\n- package.json: read (truncated)\n",
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

/** A whole-file unified diff (small files: every old line out, every new line in, common ends kept). */
function diffLines(path: string, before: string, after: string): string {
  const a = before.replace(/\n$/, "").split("\n");
  const b = after.replace(/\n$/, "").split("\n");
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const lines = [
    `--- a/${path}`,
    `+++ b/${path}`,
    `@@ -${start + 1},${endA - start} +${start + 1},${endB - start} @@`,
    ...a.slice(start, endA).map((l) => `-${l}`),
    ...b.slice(start, endB).map((l) => `+${l}`),
  ];
  return `${lines.join("\n")}\n`;
}
