import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { rejectLikeOpenAI, validateChatRequest } from "../providers/openai-chat-api.js";
import {
  closedAfterEach,
  errorReply,
  fixture,
  startReplayServer,
  streamFixture,
} from "../providers/replay-server.js";
import { cliProjects, project, quiver } from "./binary.js";

const cli = cliProjects(["gated-agent.mjs", "chatty-agent.mjs", "typed-agent.ts"]);

const lines = (text: string) => text.split("\n").filter((l) => l.trim());

const servers = closedAfterEach();

describe("quiver run", () => {
  it("--json prints one parseable event per line, ending with run_completed", async () => {
    const cwd = cli.project();
    const ran = await quiver(cli.bin, ["run", "chatty-agent.mjs#chatty", "hi there", "--json"], { cwd });
    expect(ran.code, ran.stderr).toBe(0);
    const events = lines(ran.stdout).map((line) => JSON.parse(line));
    expect(events.length).toBeGreaterThan(4);
    expect(events[0].type).toBe("run_started");
    expect(events.at(-1)).toMatchObject({
      type: "run_completed",
      stopReason: "completed",
      output: "Hello from the script! You said: hi there",
    });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  });

  it("streams the assistant's text to stdout and the calls to stderr", async () => {
    const cwd = cli.project();
    const ran = await quiver(
      cli.bin,
      ["run", "chatty-agent.mjs#chatty", "please charge it", "--mode", "bypass"],
      {
        cwd,
      },
    );
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toBe("Charging the card.\nDone: charged 42.\n");
    expect(ran.stderr).toMatch(/● charge_card\(amount: 42\)\n {2}⎿ charged 42 \(1 line · \d+ ms\)/);
  });

  it("shows each change of the run's shared state under the call that made it", async () => {
    const cwd = cli.project();
    const ran = await quiver(cli.bin, ["run", "chatty-agent.mjs#chatty", "plan it"], { cwd });
    expect(ran.code, ran.stderr).toBe(0);
    // The result names its call again: a line came between them.
    expect(ran.stderr).toMatch(
      /● plan_step\(\)\n {2}◆ state \{"steps":\["pack"\]\}\n {2}⎿ plan_step: planned/,
    );
  });

  it("shows an edit tool's diff from its result's details", async () => {
    const cwd = cli.project();
    const ran = await quiver(cli.bin, ["run", "chatty-agent.mjs#chatty", "edit it", "--mode", "bypass"], {
      cwd,
    });
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stderr).toContain(
      "  ⎿ edited notes.md (1 line · 0 ms)\n".replace("0 ms", ran.stderr.match(/\d+ ms/)![0]),
    );
    expect(ran.stderr).toMatch(
      / {4}--- a\/notes.md\n {4}\+\+\+ b\/notes.md\n {4}@@ -1,2 \+1,2 @@\n {4} # Notes\n {4}-old line\n {4}\+new line\n/,
    );
  });

  it("chat reads messages from a pipe too, one per line", async () => {
    const cwd = cli.project();
    const ran = await quiver(cli.bin, ["chat", "chatty-agent.mjs#chatty", "--store", "memory"], {
      cwd,
      input: "first message\nsecond message\n/exit\n",
    });
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain("it plays a fixed script and is not a language model");
    expect(ran.stdout).toContain("Hello from the script! You said: first message");
    expect(ran.stdout).toContain("Hello from the script! You said: second message");
  });

  it("reads the prompt from stdin with -", async () => {
    const cwd = cli.project();
    const ran = await quiver(cli.bin, ["run", "chatty-agent.mjs#chatty", "-"], {
      cwd,
      input: "from a pipe\n",
    });
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain("You said: from a pipe");
  });

  it("hides reasoning unless --show-reasoning", async () => {
    const cwd = cli.project();
    const hidden = await quiver(cli.bin, ["run", "chatty-agent.mjs#chatty", "hello"], { cwd });
    expect(hidden.stdout + hidden.stderr).not.toContain("The user greeted me.");
    const shown = await quiver(cli.bin, ["run", "chatty-agent.mjs#chatty", "hello", "--show-reasoning"], {
      cwd,
    });
    expect(shown.stderr).toContain("The user greeted me.");
  });

  it("with no terminal and no store, an approval is denied, never allowed", async () => {
    const cwd = cli.project();
    const effects = join(cwd, "effects.txt");
    const ran = await quiver(cli.bin, ["run", "gated-agent.mjs", "charge it", "--json"], {
      cwd,
      env: { SIDE_EFFECTS_FILE: effects },
    });
    expect(ran.code, ran.stderr).toBe(0);
    const events = lines(ran.stdout).map((line) => JSON.parse(line));
    expect(events.find((e) => e.type === "approval_resolved")).toMatchObject({ decision: "denied" });
    expect(events.find((e) => e.type === "tool_call_completed")).toMatchObject({
      ok: false,
      error: { kind: "denied" },
    });
    expect(() => readFileSync(effects, "utf8")).toThrow();
  });

  it("parks with a store, then runs decide and runs resume finish it in other processes, charging once", async () => {
    const cwd = cli.project();
    const effects = join(cwd, "effects.txt");
    const env = { SIDE_EFFECTS_FILE: effects };
    const store = ["--store", "sqlite:runs.db"];

    const first = await quiver(cli.bin, ["run", "gated-agent.mjs", "charge it", ...store], { cwd, env });
    expect(first.code, first.stderr).toBe(3);
    const runId = /run (run_[\w-]+) is parked/.exec(first.stderr)?.[1];
    expect(runId).toBeDefined();
    expect(first.stderr).toContain(`quiver runs decide ${runId} call_1 --approve --store sqlite:runs.db`);
    expect(first.stderr).toContain(`quiver runs resume ${runId} gated-agent.mjs --store sqlite:runs.db`);

    const parked = await quiver(cli.bin, ["runs", "list", "--status", "parked", "--json", ...store], { cwd });
    expect(JSON.parse(parked.stdout).map((r: { runId: string }) => r.runId)).toEqual([runId]);

    const decided = await quiver(cli.bin, ["runs", "decide", runId!, "call_1", "--approve", ...store], {
      cwd,
    });
    expect(decided.code, decided.stderr).toBe(0);
    expect(() => readFileSync(effects, "utf8")).toThrow(); // deciding runs nothing

    const resumed = await quiver(cli.bin, ["runs", "resume", runId!, "gated-agent.mjs", ...store], {
      cwd,
      env,
    });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain("Result: charged 42");
    expect(readFileSync(effects, "utf8")).toBe("charged 42\n");

    // Resuming a finished run does nothing again.
    const again = await quiver(cli.bin, ["runs", "resume", runId!, "gated-agent.mjs", ...store], {
      cwd,
      env,
    });
    expect(again.code).toBe(0);
    expect(readFileSync(effects, "utf8")).toBe("charged 42\n");

    const shown = await quiver(cli.bin, ["runs", "show", runId!, "--json", ...store], { cwd });
    const report = JSON.parse(shown.stdout);
    expect(report).toMatchObject({ runId, status: "completed", stopReason: "completed" });
    expect(report.calls).toEqual([
      expect.objectContaining({
        ok: true,
        output: "charged 42",
        approval: { asked: true, decision: "approved", by: "decide" },
      }),
    ]);
    const text = await quiver(cli.bin, ["runs", "show", runId!, ...store], { cwd });
    expect(text.stdout).toContain("✓ approved by decide");
    expect(text.stdout).toMatch(/⎿ charged 42 \(\d+ ms\)/);
    expect(text.stdout).toContain("user: charge it");
    // Usage and cost, rebuilt from the stored log.
    expect(text.stdout).toMatch(
      /── usage ──\n[\d,]+ input · [\d,]+ output · [\d,]+ total tokens.* · (\$\d+\.\d{4}|cost unknown \(no price for this model\))\n1 call/,
    );
  });

  it("a denial from runs decide reaches the model with its reason", async () => {
    const cwd = cli.project();
    const store = ["--store", "sqlite:runs.db"];
    const first = await quiver(cli.bin, ["run", "gated-agent.mjs", "charge it", ...store], { cwd });
    const runId = /run (run_[\w-]+) is parked/.exec(first.stderr)![1]!;
    const denied = await quiver(
      cli.bin,
      ["runs", "decide", runId, "call_1", "--deny", "--reason", "over the limit", ...store],
      { cwd },
    );
    expect(denied.code, denied.stderr).toBe(0);
    const resumed = await quiver(cli.bin, ["runs", "resume", runId, "gated-agent.mjs", ...store], { cwd });
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain("over the limit");
  });

  it("runs cancel ends a parked run as cancelled, and sessions list / clear work on the store", async () => {
    const cwd = cli.project();
    const store = ["--store", "sqlite:runs.db"];
    const first = await quiver(
      cli.bin,
      ["run", "gated-agent.mjs", "charge it", "--session", "s1", ...store],
      {
        cwd,
      },
    );
    const runId = /run (run_[\w-]+) is parked/.exec(first.stderr)![1]!;
    const cancelled = await quiver(cli.bin, ["runs", "cancel", runId, ...store], { cwd });
    expect(cancelled.code, cancelled.stderr).toBe(0);
    const report = JSON.parse(
      (await quiver(cli.bin, ["runs", "show", runId, "--json", ...store], { cwd })).stdout,
    );
    expect(report).toMatchObject({ status: "completed", stopReason: "cancelled" });
    expect(report.calls[0]).toMatchObject({ ok: false, error: { kind: "cancelled" } });
    const twice = await quiver(cli.bin, ["runs", "cancel", runId, ...store], { cwd });
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain("nothing to cancel");

    // The session's transcript stays valid: its next run continues it.
    const next = await quiver(
      cli.bin,
      ["run", "chatty-agent.mjs#chatty", "hello again", "--session", "s1", "--json", ...store],
      { cwd },
    );
    expect(next.code, next.stderr).toBe(0);
    const started = JSON.parse(lines(next.stdout)[0]!);
    expect(started.type).toBe("run_started");

    const sessions = JSON.parse(
      (await quiver(cli.bin, ["sessions", "list", "--json", ...store], { cwd })).stdout,
    );
    expect(sessions).toEqual([expect.objectContaining({ sessionId: "s1", runs: 2 })]);
    const cleared = await quiver(cli.bin, ["sessions", "clear", "s1", ...store], { cwd });
    expect(cleared.stdout).toContain("cleared session s1 (2 runs)");
    expect((await quiver(cli.bin, ["runs", "list", ...store], { cwd })).stdout).toBe("no runs stored\n");
  });

  it("runs tail follows a parked run as another process decides and resumes it", async () => {
    const cwd = cli.project();
    const store = ["--store", "sqlite:runs.db"];
    const first = await quiver(cli.bin, ["run", "gated-agent.mjs", "charge it", ...store], { cwd });
    const runId = /run (run_[\w-]+) is parked/.exec(first.stderr)![1]!;
    const { spawn } = await import("node:child_process");
    const tail = spawn(process.execPath, [cli.bin, "runs", "tail", runId, ...store], {
      cwd,
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    tail.stdout.on("data", (d) => {
      out += d;
    });
    const exited = new Promise<number | null>((resolve) => tail.on("close", resolve));
    const deadline = Date.now() + 10_000;
    while (!out.includes("parked: waiting for a decision on call_1") && Date.now() < deadline)
      await new Promise((ok) => setTimeout(ok, 50));
    expect(out).toContain("● charge_card(amount: 42)");
    expect(out).not.toContain("Result: charged 42");
    await quiver(cli.bin, ["runs", "decide", runId, "call_1", "--approve", ...store], { cwd });
    await quiver(cli.bin, ["runs", "resume", runId, "gated-agent.mjs", ...store], { cwd });
    const code = await Promise.race([
      exited,
      new Promise((ok) => setTimeout(() => ok("still running"), 10_000)),
    ]);
    tail.kill();
    expect(code).toBe(0);
    expect(out).toContain("✓ charge_card approved (by decide)");
    expect(out).toContain("Result: charged 42");
  });

  it("runs tail prints a stored run's events and stops when it has ended", async () => {
    const cwd = cli.project();
    const store = ["--store", "sqlite:runs.db"];
    const done = await quiver(cli.bin, ["run", "chatty-agent.mjs#chatty", "hello", "--json", ...store], {
      cwd,
    });
    const runId = JSON.parse(lines(done.stdout)[0]!).runId;
    const tailed = await quiver(cli.bin, ["runs", "tail", runId, "--json", ...store], { cwd });
    expect(tailed.code).toBe(0);
    expect(lines(tailed.stdout)).toEqual(lines(done.stdout));
  });
});

describe("exit codes and errors", () => {
  it("an unknown command is a usage error (2) with help on stderr", async () => {
    const cwd = cli.project();
    const ran = await quiver(cli.bin, ["launch"], { cwd });
    expect(ran.code).toBe(2);
    expect(ran.stderr).toContain('unknown command "launch"');
    expect(ran.stderr).toContain("Usage:");
    expect(ran.stdout).toBe("");
  });

  it("usage errors: missing agent file, unknown option, bad --mode, bad --status, decide without a decision", async () => {
    const cwd = cli.project();
    for (const args of [
      ["run"],
      ["run", "chatty-agent.mjs", "hi", "--frobnicate"],
      ["run", "chatty-agent.mjs", "hi", "--mode", "yolo"],
      ["runs", "list", "--status", "sleeping"],
      ["runs", "decide", "run_x", "call_1"],
      ["runs", "frob"],
      [],
    ]) {
      const ran = await quiver(cli.bin, args, { cwd });
      expect(ran.code, args.join(" ")).toBe(2);
      expect(ran.stderr, args.join(" ")).toContain("Usage:");
    }
  });

  it("a run that fails exits 1; a missing file, a wrong export and a bad store say what is wrong", async () => {
    const cwd = cli.project();
    const failed = await quiver(cli.bin, ["run", "chatty-agent.mjs#chatty", "please fail", "--json"], {
      cwd,
    });
    expect(failed.code).toBe(1);
    expect(JSON.parse(lines(failed.stdout).at(-1)!)).toMatchObject({ type: "run_failed" });

    const missing = await quiver(cli.bin, ["run", "nope.mjs", "hi"], { cwd });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("no agent file at");

    const wrongExport = await quiver(cli.bin, ["run", "chatty-agent.mjs#nope", "hi"], { cwd });
    expect(wrongExport.code).toBe(1);
    expect(wrongExport.stderr).toContain('has no export "nope"; it exports these agents: #chatty');

    const notAgent = await quiver(cli.bin, ["run", "chatty-agent.mjs#notAnAgent", "hi"], { cwd });
    expect(notAgent.stderr).toContain("is not an Agent");

    const badStore = await quiver(cli.bin, ["runs", "list", "--store", "mysql://x"], { cwd });
    expect(badStore.code).toBe(1);
    expect(badStore.stderr).toContain("use sqlite:PATH");
  });

  it("SIGINT while streaming cancels the run, which ends by SIGINT (130 in a shell) after its last event says cancelled", async () => {
    const cwd = cli.project();
    const { spawn } = await import("node:child_process");
    const child = spawn(process.execPath, [cli.bin, "run", "chatty-agent.mjs#chatty", "go slow", "--json"], {
      cwd,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
      (resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no exit: ${out}`)), 15_000);
        child.stdout.on("data", (d) => {
          out += d;
          if (out.includes('"tool_call_update"') && !child.killed) child.kill("SIGINT");
        });
        child.on("close", (code, signal) => {
          clearTimeout(timer);
          resolve({ code, signal });
        });
      },
    );
    // It cleans up, then ends by the signal itself, as `npx` does: a shell reports 130.
    expect(exit).toEqual({ code: null, signal: "SIGINT" });
    const events = lines(out).map((l) => JSON.parse(l));
    expect(events.at(-1)).toMatchObject({ type: "run_completed", stopReason: "cancelled" });
    expect(events.find((e) => e.type === "tool_call_completed")).toMatchObject({
      ok: false,
      error: { kind: "cancelled" },
    });
  });

  it("loads a .ts agent file through tsx", async () => {
    const cwd = cli.project();
    const ran = await quiver(cli.bin, ["run", "typed-agent.ts", "hi"], { cwd });
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toBe("typed hello\n");
  });

  it("a .ts agent file without tsx installed says to npm i -D tsx", async () => {
    // The same package, installed beside every dependency but tsx.
    const bare = mkdtempSync(join(tmpdir(), "quiver-cli-no-tsx-"));
    cli.removeAfter(bare);
    cpSync(join(cli.root, "dist"), join(bare, "dist"), { recursive: true });
    cpSync(join(cli.root, "package.json"), join(bare, "package.json"));
    mkdirSync(join(bare, "node_modules"));
    const deps = join(cli.root, "node_modules");
    for (const name of readdirSync(deps)) {
      if (name !== "tsx" && name !== ".bin") symlinkSync(join(deps, name), join(bare, "node_modules", name));
    }
    const cwd = project(bare, ["typed-agent.ts", "chatty-agent.mjs"]);
    cli.removeAfter(cwd);
    const ran = await quiver(cli.bin.replace(cli.root, bare), ["run", "typed-agent.ts", "hi"], { cwd });
    expect(ran.code).toBe(1);
    expect(ran.stderr).toContain("typed-agent.ts is TypeScript, and loading it needs tsx: npm i -D tsx");
    // A .mjs agent file runs from the same install.
    const js = await quiver(cli.bin.replace(cli.root, bare), ["run", "chatty-agent.mjs#chatty", "hi"], {
      cwd,
    });
    expect(js.code, js.stderr).toBe(0);
  });

  it("--model replaces the agent's model through the provider registry", async () => {
    const cwd = cli.project();
    const ran = await quiver(cli.bin, ["run", "chatty-agent.mjs#chatty", "hi", "--model", "nosuch:model"], {
      cwd,
    });
    expect(ran.code).toBe(1);
    expect(ran.stderr).toContain('unknown model provider "nosuch"');
  });

  it("--model openai:ID talks to the server at OPENAI_BASE_URL instead of the agent's scripted model", async () => {
    const cwd = cli.project();
    // A Chat Completions server on 127.0.0.1 replaying a recorded stream, checking each request
    // as the real API would (unknown fields, message order, tool shapes, the key).
    const server = await startReplayServer({
      replies: [streamFixture(fixture("openai-chat/text.jsonl"))],
      validate: (req) => validateChatRequest(req),
      reject: rejectLikeOpenAI,
    });
    servers.push(server);
    const ran = await quiver(
      cli.bin,
      ["run", "chatty-agent.mjs#chatty", "hi there", "--model", "openai:gpt-override-test"],
      {
        cwd,
        env: { OPENAI_BASE_URL: `${server.url}/v1`, OPENAI_API_KEY: "test-key" },
      },
    );
    expect(ran.code, ran.stderr).toBe(0);
    expect(server.rejected).toEqual([]);
    expect(server.requests).toHaveLength(1);
    const body = server.requests[0]!.body;
    expect(body.model).toBe("gpt-override-test");
    expect(body.messages.at(-1)).toEqual({ role: "user", content: "hi there" });
    // The agent's own tools still go along with the replaced model.
    expect(body.tools.map((t: any) => t.function.name)).toEqual([
      "charge_card",
      "slow_task",
      "edit_text",
      "plan_step",
    ]);
    // The answer is the server's, not the ScriptedModel's.
    expect(ran.stdout).toBe("Hello! How can I help?\n");
    expect(ran.stderr).toMatch(/1,234 in · 9 out tokens/);
  });

  it("--model a,b is a fallback chain: a 503 from the first moves the turn to the second", async () => {
    const cwd = cli.project();
    const down = await startReplayServer({
      replies: [0, 1, 2].map(() =>
        errorReply(503, { error: { message: "overloaded", type: "server_error" } }),
      ),
      validate: (req) => validateChatRequest(req, { apiKey: null, compatible: true }),
      reject: rejectLikeOpenAI,
    });
    const up = await startReplayServer({
      replies: [streamFixture(fixture("openai-chat/text.jsonl"))],
      validate: (req) => validateChatRequest(req, { apiKey: null, compatible: true }),
      reject: rejectLikeOpenAI,
    });
    servers.push(down, up);
    const ran = await quiver(
      cli.bin,
      ["run", "chatty-agent.mjs#chatty", "hi there", "--model", "lmstudio:first,llamacpp:second", "--json"],
      {
        cwd,
        env: {
          LMSTUDIO_BASE_URL: `${down.url}/v1`,
          LLAMACPP_BASE_URL: `${up.url}/v1`,
        },
      },
    );
    expect(ran.code, ran.stderr).toBe(0);
    const events = lines(ran.stdout).map((line) => JSON.parse(line));
    expect(events.find((e) => e.type === "model_fallback")).toMatchObject({
      from: "lmstudio:first",
      to: "llamacpp:second",
      turn: 1,
    });
    expect(events.at(-1)).toMatchObject({ type: "run_completed", output: "Hello! How can I help?" });
    expect(up.requests[0]!.body.model).toBe("second");
  });
});
