// SIGTERM — what a process manager, `timeout`, `docker stop` or `kill` send — is handled like
// Ctrl+C: the run is cancelled, its end is stored, and the command exits 143 (128 + 15). A
// stored run is never left `running` by it.
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { SqliteStore } from "quiver-agents/store";
import { describe, expect, it } from "vitest";
import { cliProjects } from "./binary.js";

const cli = cliProjects(["chatty-agent.mjs"]);

type Started = {
  child: ChildProcess;
  /** Resolves with stdout so far once it matches `pattern`. */
  printed(pattern: RegExp): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
};

function start(args: string[], cwd: string, env: Record<string, string> = {}): Started {
  const child = spawn(process.execPath, [cli.bin, ...args], {
    cwd,
    env: { ...process.env, NO_COLOR: "1", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const waiters: Array<{ pattern: RegExp; resolve: (text: string) => void }> = [];
  child.stdout!.on("data", (d) => {
    stdout += d;
    for (const w of waiters.splice(0)) {
      if (w.pattern.test(stdout)) w.resolve(stdout);
      else waiters.push(w);
    }
  });
  child.stderr!.on("data", (d) => {
    stderr += d;
  });
  const exited = new Promise<Awaited<Started["exited"]>>((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  const kill = setTimeout(() => child.kill("SIGKILL"), 15_000);
  void exited.then(() => clearTimeout(kill));
  return {
    child,
    exited,
    printed: (pattern) =>
      new Promise<string>((resolve, reject) => {
        if (pattern.test(stdout)) return resolve(stdout);
        const timer = setTimeout(
          () => reject(new Error(`never printed ${pattern}: ${stdout}\n${stderr}`)),
          10_000,
        );
        waiters.push({
          pattern,
          resolve: (text) => {
            clearTimeout(timer);
            resolve(text);
          },
        });
      }),
  };
}

/** The store's summary and last event of its only run. */
async function storedRun(file: string) {
  const store = new SqliteStore({ path: file });
  try {
    const runs = await store.listRuns();
    expect(runs).toHaveLength(1);
    const events = await store.read(runs[0]!.runId);
    return { summary: runs[0]!, last: events.at(-1) };
  } finally {
    await store.close();
  }
}

describe("SIGTERM", () => {
  it("quiver run: cancels the run, stores its end, exits 143", async () => {
    const cwd = cli.project();
    const run = start(
      ["run", "chatty-agent.mjs#chatty", "go slow", "--json", "--store", "sqlite:runs.db"],
      cwd,
    );
    run.child.stdin!.end();
    await run.printed(/"tool_call_update"/);
    run.child.kill("SIGTERM");
    const { code, signal, stdout } = await run.exited;
    expect({ code, signal }).toEqual({ code: 143, signal: null });
    const printed = stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(printed.at(-1)).toMatchObject({ type: "run_completed", stopReason: "cancelled" });
    const { summary, last } = await storedRun(join(cwd, "runs.db"));
    expect(summary.status).toBe("completed");
    expect(last).toMatchObject({ type: "run_completed", stopReason: "cancelled" });
  });

  it("quiver run: a second SIGTERM exits 143 at once while the cancelled run is still ending", async () => {
    const cwd = cli.project();
    const run = start(["run", "chatty-agent.mjs#lingering", "go slow", "--json"], cwd);
    run.child.stdin!.end();
    await run.printed(/"tool_call_update"/);
    run.child.kill("SIGTERM");
    // The run's teardown takes a minute; the second signal does not wait for it.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(run.child.exitCode, "still ending the cancelled run").toBeNull();
    const second = Date.now();
    run.child.kill("SIGTERM");
    const { code } = await run.exited;
    expect(code).toBe(143);
    expect(Date.now() - second).toBeLessThan(3_000);
  });

  it("quiver chat: cancels the reply being written, stores its end, exits 143", async () => {
    const cwd = cli.project();
    const chat = start(["chat", "chatty-agent.mjs#chatty"], cwd);
    chat.child.stdin!.write("go slow\n");
    await chat.printed(/Starting the slow task/);
    await new Promise((resolve) => setTimeout(resolve, 300));
    chat.child.kill("SIGTERM");
    const { code, signal } = await chat.exited;
    expect({ code, signal }).toEqual({ code: 143, signal: null });
    const { summary, last } = await storedRun(join(cwd, ".quiver/quiver.db"));
    expect(summary.status).toBe("completed");
    expect(last).toMatchObject({ type: "run_completed", stopReason: "cancelled" });
  });

  it("quiver chat: waiting for a message, exits 143 and says how to continue", async () => {
    const cwd = cli.project();
    const chat = start(["chat", "chatty-agent.mjs#chatty"], cwd);
    chat.child.stdin!.write("hello\n");
    await chat.printed(/Hello from the script/);
    await chat.printed(/› $/);
    chat.child.kill("SIGTERM");
    const { code, stdout } = await chat.exited;
    expect(code).toBe(143);
    expect(stdout).toMatch(/continue with: quiver chat chatty-agent\.mjs#chatty --session chat-/);
  });

  it("quiver serve: cancels the runs it drives, stores their end, sends it to watchers, exits 143", async () => {
    // The agent with a plugin: its cancelled run's last events reach the store some milliseconds
    // after the server stopped, so a store closed at once never gets them.
    const cwd = cli.project();
    const serve = start(
      ["serve", "chatty-agent.mjs#lingering", "--port", "0", "--store", "sqlite:runs.db"],
      cwd,
      { LINGER_MS: "1000" },
    );
    const url = /chat page\s+(http:\/\/\S+)\//.exec(await serve.printed(/chat page\s+http:\/\/\S+\//))![1]!;
    const started = await fetch(`${url}/api/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: "go slow" }),
    });
    const { runId } = (await started.json()) as { runId: string };
    // Once the slow tool reports progress, the run is mid-call.
    const reader = (await fetch(`${url}/api/runs/${runId}/events`))
      .body!.pipeThrough(new TextDecoderStream())
      .getReader();
    let seen = "";
    while (!seen.includes('"tool_call_update"')) seen += (await reader.read()).value ?? "";
    serve.child.kill("SIGTERM");
    // The watcher is told how the run ended, then its stream ends (the connection is not cut).
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      seen += value;
    }
    expect(seen).toMatch(/"type":"run_completed"[^\n]*"stopReason":"cancelled"/);
    const { code, signal } = await serve.exited;
    expect({ code, signal }).toEqual({ code: 143, signal: null });
    const { summary, last } = await storedRun(join(cwd, "runs.db"));
    expect(summary.status).toBe("completed");
    expect(last).toMatchObject({ type: "run_completed", stopReason: "cancelled" });
  });
});
