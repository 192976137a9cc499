/**
 * `npm run demo`: an agent doing real work with real tools — the workspace's file and shell
 * tools on a copy of this checkout's files (parallel reads and a search, a shell command the
 * allow list lets through, a paged read of a huge file, a shell output cut to head + tail), a
 * local HTTP service that fails once (a retry), a web page it serves itself read with web_fetch
 * (opened with `allowHosts`, since web_fetch refuses private addresses by default) and a report
 * written with write_file, which asks for approval in the terminal with a diff — with every
 * event printed as it happens.
 *
 * With QUIVER_MODEL set (e.g. "openai:gpt-4.1-mini", "anthropic:claude-sonnet-4-5",
 * "ollama:qwen3") a real model drives it; otherwise a ScriptedModel plays a fixed script.
 */
import { cp, mkdtemp } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline/promises";
import { Agent, type Model, type RunEvent, Runner, ScriptedModel, tool } from "quiver-agents";
import { HttpReader, webFetch } from "quiver-agents/tools";
import { workspace } from "quiver-agents/workspace";
import { z } from "zod";

const checkout = resolve(import.meta.dirname, "..");
const modelId = process.env.QUIVER_MODEL;

// The agent works on a copy of a few of this checkout's files, so nothing it writes lands in the repository.
const root = await mkdtemp(join(tmpdir(), "quiver-demo-"));
for (const file of ["README.md", "package.json", "package-lock.json", "src/index.ts"]) {
  await cp(join(checkout, file), join(root, file), { recursive: true });
}
const ws = workspace({
  root,
  // Read-only commands run without asking; anything else asks; these never run.
  shell: { allow: ["wc", "cat", "ls", "head"], deny: ["rm -rf", "git push"], maxOutputChars: 1_200 },
});

const RELEASE_NOTES = `<!doctype html><html><head><title>Release notes</title></head><body>
<nav><a href="/">Home</a></nav><main><h1>Release 0.1</h1>
<p>The first release: typed tools, the agent loop, and <a href="/docs/runs">streamed events</a>.</p>
<ul><li>Parallel calls with barriers</li><li>Retries and timeouts</li></ul></main></body></html>`;

/**
 * A local service: /status answers 503 on its first request (so the tool's retry has work to
 * do), /notes serves a web page for web_fetch.
 */
async function startStatusService() {
  let requests = 0;
  const server = createServer((req, res) => {
    if (req.url === "/notes") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(RELEASE_NOTES);
      return;
    }
    requests++;
    if (requests === 1) {
      res.writeHead(503).end("warming up");
      return;
    }
    res
      .writeHead(200, { "content-type": "application/json" })
      .end(JSON.stringify({ build: "green", requests }));
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { server, url: `${origin}/status`, notesUrl: `${origin}/notes` };
}
const service = await startStatusService();

const buildStatus = tool({
  name: "build_status",
  description: "Ask the build service (running on this machine) whether the build is green.",
  parameters: z.object({}),
  retries: 2,
  retryBackoff: { initialMs: 100 },
  timeoutMs: 2_000,
  execute: async (_args, ctx) => {
    const res = await fetch(service.url, { signal: ctx.signal });
    if (!res.ok) throw new Error(`build service answered ${res.status}`);
    return res.json();
  },
});

/** The script a ScriptedModel plays when no real model is configured. */
function scriptedModel(): Model {
  return new ScriptedModel([
    {
      text: "I'll look at the project files and ask the build service, all at once.",
      toolCalls: [
        { name: "list_files", args: {} },
        { name: "grep_files", args: { pattern: "^export \\{", path: "src" } },
        { name: "read_file", args: { path: "README.md", limit: 5 } },
        { name: "build_status", args: {} },
      ],
    },
    {
      text: "Now the size of the lock file, and its first lines.",
      toolCalls: [
        {
          name: "shell",
          args: {
            command: "wc -l package-lock.json && cat package-lock.json",
            description: "measure the lock file",
          },
        },
        { name: "read_file", args: { path: "package-lock.json", limit: 8 } },
      ],
    },
    { text: "And the release notes.", toolCalls: [{ name: "web_fetch", args: { url: service.notesUrl } }] },
    {
      text: "Now the report.",
      toolCalls: [
        {
          name: "write_file",
          args: {
            path: "report.md",
            content:
              "# Project check\n\nFiles listed and searched, build service asked, lock file measured, release notes read.\n",
          },
        },
      ],
    },
    (request) => {
      const results = request.messages.filter((m) => m.role === "tool");
      const report = results.at(-1);
      const wrote = report?.role === "tool" && !report.isError;
      return {
        text: `Done: ${results.length} tool results read; ${wrote ? `report written to ${join(root, "report.md")}` : "the report was not approved"}.`,
      };
    },
  ]);
}

const notesReader = new HttpReader({ allowHosts: ["127.0.0.1"] });
const agent = new Agent({
  name: "inspector",
  model: modelId ?? scriptedModel(),
  instructions: [
    "You inspect a software project. List and search its files, read the start of README.md and ask the " +
      "build service for its status (all at once); measure package-lock.json with the shell; read the release " +
      `notes at ${service.notesUrl}; then write a short report to report.md with write_file.`,
    ws.instructions,
  ],
  // web_fetch refuses private addresses by default; this reader opens only the demo's own server.
  tools: [...ws.tools, buildStatus, webFetch(notesReader)],
});

console.log(
  modelId
    ? `Quiver demo — model: ${modelId} (a real model; set by QUIVER_MODEL).`
    : "Quiver demo — no model configured: a ScriptedModel replays a fixed script (not a language model). Set QUIVER_MODEL=openai:gpt-4.1-mini (or anthropic:…, ollama:…) to use a real one.",
);

const started = performance.now();
const stamp = () => `+${String(Math.round(performance.now() - started)).padStart(5)} ms`;
const callLabel = (ev: { call: { name: string; args: unknown } }) =>
  `${ev.call.name}(${JSON.stringify(ev.call.args)})`;
const short = (text: string, n = 90) => {
  const flat = text.replace(/\s+/g, " ");
  return flat.length > n ? `${flat.slice(0, n)}…` : flat;
};

function print(ev: RunEvent): void {
  switch (ev.type) {
    case "turn_started":
      console.log(`${stamp()}  ── turn ${ev.turn} ──`);
      break;
    case "text_delta":
      console.log(`${stamp()}  model says: ${short(ev.delta)}`);
      break;
    case "tool_call_started":
      console.log(`${stamp()}  ▶ ${callLabel(ev)}${ev.attempt > 1 ? ` (attempt ${ev.attempt})` : ""}`);
      break;
    case "tool_call_update":
      console.log(
        `${stamp()}  … ${ev.call.name} output: ${short(String((ev.partial as { output?: string }).output ?? ""), 60)}`,
      );
      break;
    case "tool_call_retry":
      console.log(`${stamp()}  ↻ ${ev.call.name} failed (${ev.error.message}); retrying in ${ev.delayMs} ms`);
      break;
    case "tool_call_completed": {
      const mark = ev.ok ? "✓" : "✗";
      const cut = ev.truncated
        ? ` [truncated from ${ev.truncated.originalChars.toLocaleString("en-US")} chars]`
        : "";
      console.log(`${stamp()}  ${mark} ${ev.call.name} in ${ev.durationMs} ms${cut}: ${short(ev.output)}`);
      break;
    }
    case "run_completed":
      console.log(`${stamp()}  ■ run completed (${ev.stopReason}): ${ev.output}`);
      break;
    case "approval_resolved":
      console.log(
        `${stamp()}  ${ev.decision === "approved" ? "✓" : "✗"} ${ev.call.name} ${ev.decision} (by ${ev.by})`,
      );
      break;
    case "run_tainted":
      console.log(
        `${stamp()}  ! the run read untrusted content (${ev.source}): destructive tools now always ask`,
      );
      break;
    case "warning":
      console.log(`${stamp()}  ! ${ev.message}`);
      break;
  }
}

/**
 * Asks in the terminal. Without one (CI, a pipe) nobody can answer, so the call is denied: an
 * approval never defaults to allow (QUIVER_DEMO_APPROVE=1 approves, for a non-interactive tour).
 */
async function decide(question: string): Promise<boolean> {
  if (!process.stdin.isTTY) {
    const approve = process.env.QUIVER_DEMO_APPROVE === "1";
    console.log(
      `${stamp()}  ? ${question} — no terminal to ask in: ${approve ? "approved by QUIVER_DEMO_APPROVE=1" : "denied (set QUIVER_DEMO_APPROVE=1 to approve)"}`,
    );
    return approve;
  }
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  const answer = await rl.question(`${stamp()}  ? ${question} [y/N] `);
  rl.close();
  return /^y(es)?$/i.test(answer.trim());
}

try {
  const handle = Runner.stream(agent, "Check this project and write the report.");
  for await (const ev of handle) {
    print(ev);
    // write_file is destructive, so the default permissions ask before it runs (with a diff).
    if (ev.type === "approval_required") {
      const diff = (ev.details as { diff?: string } | undefined)?.diff;
      if (diff) console.log(diff.trimEnd().replace(/^/gm, "             │ "));
      if (await decide(`${ev.description ?? callLabel(ev)}? (${ev.reason})`)) ev.approve();
      else ev.reject(process.stdin.isTTY ? "the operator said no" : "there was no terminal to ask in");
    }
  }
  const result = await handle.result();
  console.log(`\n${result.toolCalls.length} tool calls; results went back to the model in request order:`);
  for (const record of result.toolCalls) console.log(`  ${record.ok ? "✓" : "✗"} ${record.call.name}`);
} finally {
  await notesReader.close();
  service.server.close();
}
