import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Agent, Runner, ScriptedModel, StandardPermissions } from "quiver-agents";
import { MemoryStore } from "quiver-agents/store";
import { workspace } from "quiver-agents/workspace";
import { describe, expect, it } from "vitest";
import { play, tempDir } from "./helpers.js";

const root = tempDir("quiver-shell-");

/** Processes whose command line contains `marker`, per `ps`. */
function survivors(marker: string): string[] {
  const out = execFileSync("ps", ["-eo", "pid,args"], { encoding: "utf8" });
  return out.split("\n").filter((line) => line.includes(marker) && !line.includes("ps -eo"));
}

/**
 * Processes whose command line contains one of `markers`, once they had up to 3 s to go: a
 * SIGKILLed process is still listed until the kernel has torn it down, which under load is not
 * at once.
 */
async function lingering(...markers: string[]): Promise<string[]> {
  const left = () => markers.flatMap(survivors);
  const deadline = Date.now() + 3_000;
  while (left().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return left();
}

/** A sleep whose duration is unique to this test, so `ps` can find it. */
function uniqueSleep(): string {
  return `${3000 + Math.floor(Math.random() * 6000)}.${Math.floor(Math.random() * 1000)}`;
}

async function shell(
  command: string,
  extra: Record<string, unknown> = {},
  options: Parameters<typeof workspace>[0]["shell"] = true,
) {
  const ws = workspace({ root, shell: options });
  const { records, events } = await play(ws.tools, [{ name: "shell", args: { command, ...extra } }]);
  return { record: records[0]!, events };
}

describe("shell", () => {
  it("states the exit code, runs in the root with stdin closed", async () => {
    const ok = await shell("pwd; read line || echo stdin-closed");
    expect(ok.record.ok).toBe(true);
    expect(ok.record.output).toMatch(
      /^\[exit code 0, [\d.]+ s, (sandboxed: bwrap, no network|not sandboxed)\]\n/,
    );
    expect(ok.record.output).toContain(root);
    expect(ok.record.output).toContain("stdin-closed");
    const failed = await shell("echo to-stderr >&2; exit 3");
    expect(failed.record.output).toMatch(/^\[exit code 3, /);
    expect(failed.record.output).toContain("to-stderr");
  });

  it("gets a minimal environment by default; inherit or an allowlist widens it", async () => {
    process.env.QUIVER_WS_SECRET = "hunter2";
    try {
      const minimal = await shell("env | sort");
      expect(minimal.record.output).not.toContain("hunter2");
      for (const line of ["TERM=dumb", "CI=1", "GIT_TERMINAL_PROMPT=0", "PAGER=cat"]) {
        expect(minimal.record.output).toContain(line);
      }
      expect(minimal.record.output).toMatch(/^PATH=/m);
      const listed = await shell("echo $QUIVER_WS_SECRET", {}, { env: ["QUIVER_WS_SECRET"] });
      expect(listed.record.output).toContain("hunter2");
      const inherited = await shell("echo $QUIVER_WS_SECRET $TERM", {}, { env: "inherit" });
      expect(inherited.record.output).toContain("hunter2 dumb");
    } finally {
      delete process.env.QUIVER_WS_SECRET;
    }
  });

  it("a timeout kills the whole process group, even a member that ignores SIGTERM", async () => {
    const a = uniqueSleep();
    const b = uniqueSleep();
    const started = Date.now();
    const { record } = await shell(`sleep ${a} & (trap '' TERM; sleep ${b}) & wait`, { timeout_ms: 300 });
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(record.output).toContain("[timed out after");
    expect(await lingering(a, b)).toEqual([]);
  });

  it("a command that ignores SIGTERM gets SIGKILL after the grace period", async () => {
    const s = uniqueSleep();
    const started = Date.now();
    const { record } = await shell(`trap '' TERM; sleep ${s}; echo never`, { timeout_ms: 200 });
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(2_000);
    expect(took).toBeLessThan(8_000);
    expect(record.output).toContain("[timed out after");
    expect(record.output).not.toContain("never");
    expect(await lingering(s)).toEqual([]);
  });

  it("does not hang when a background child keeps the output pipe open, and leaves no survivor", async () => {
    const s = uniqueSleep();
    const started = Date.now();
    const { record } = await shell(`sleep ${s} & echo started`);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(record.output).toMatch(/^\[exit code 0, /);
    expect(record.output).toContain("started");
    expect(await lingering(s)).toEqual([]);
  });

  /**
   * The run is cancelled at one moment of the call's life; every process the command started
   * must be gone soon after, and a command that had not started yet must never start.
   */
  async function cancelled(moment: {
    on?: "tool_call_started" | "tool_call_update";
    delayMs?: number;
    /** Cancel from inside the shell, just before it would start the command. */
    atSpawn?: boolean;
    ignoreTerm?: boolean;
  }) {
    const s = uniqueSleep();
    const marker = `started-${s}`;
    const s2 = uniqueSleep();
    const stubborn = moment.ignoreTerm ? `(trap '' TERM; sleep ${s2}) & ` : "";
    const command = `touch ${marker}; echo up; ${stubborn}sleep ${s}; echo never`;
    let cancel = () => {};
    const ws = workspace({
      root,
      shell: true,
      executor: ({ command: line }) => {
        if (!moment.atSpawn) return { file: "bash", args: ["-c", line] };
        cancel();
        // A launcher that SIGTERM does not stop (as `docker run` does not stop its container):
        // only never starting it keeps the command from running.
        return { file: "env", args: ["--ignore-signal=TERM", "bash", "-c", line] };
      },
    });
    const agent = new Agent({
      name: "worker",
      model: new ScriptedModel([{ toolCalls: [{ name: "shell", args: { command } }] }]),
      tools: ws.tools,
      permissions: new StandardPermissions({ mode: "bypass" }),
    });
    const handle = Runner.stream(agent, "go");
    cancel = () => handle.cancel("stop");
    let fired = false;
    for await (const ev of handle) {
      if (fired || ev.type !== moment.on) continue;
      fired = true;
      if (moment.delayMs === undefined) cancel();
      else setTimeout(cancel, moment.delayMs);
    }
    const result = await handle.result();
    expect(result.stopReason).toBe("cancelled");
    // SIGTERM ends a plain sleep at once; a member that ignores it gets SIGKILL once the
    // command's own process has exited (or after the grace period).
    const deadline = Date.now() + 8_000;
    const left = () => [...survivors(s), ...survivors(s2)];
    while (left().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(left()).toEqual([]);
    return { started: existsSync(join(root, marker)) };
  }

  it("a run cancelled just before the shell would start its command never starts it", async () => {
    for (let i = 0; i < 5; i++) {
      const { started } = await cancelled({ atSpawn: true });
      expect(started).toBe(false);
    }
  });

  it("cancelling the run kills the command's group, whenever the cancel lands", async () => {
    // As the call starts (usually before the command is spawned), a moment later, while it runs,
    // after its first output: each repeated, since the window each one hits is narrow.
    const moments = [
      { on: "tool_call_started" as const },
      { on: "tool_call_started" as const, delayMs: 0 },
      { on: "tool_call_started" as const, delayMs: 20 },
      { on: "tool_call_started" as const, delayMs: 200 },
      { on: "tool_call_update" as const },
    ];
    for (let round = 0; round < 3; round++) for (const moment of moments) await cancelled(moment);
  }, 60_000);

  it("a cancelled command whose background member ignores SIGTERM leaves no survivor", async () => {
    await cancelled({ on: "tool_call_update", ignoreTerm: true });
  });

  it("streams output through tool_call_update while the command runs", async () => {
    const { events } = await shell("for i in 1 2 3 4; do echo line$i; sleep 0.3; done");
    const kinds = events
      .filter((e) => e.type === "tool_call_update" || e.type === "tool_call_completed")
      .map((e) => e.type);
    const updates = events.flatMap((e) =>
      e.type === "tool_call_update" ? [(e.partial as { output: string }).output] : [],
    );
    expect(updates.length).toBeGreaterThanOrEqual(2);
    expect(updates[0]).toContain("line1");
    expect(updates.join("")).toBe("line1\nline2\nline3\nline4\n");
    expect(kinds.at(-1)).toBe("tool_call_completed");
  });

  it("long output keeps head and tail; the full text is recalled with recall_tool_result", async () => {
    const store = new MemoryStore();
    const ws = workspace({ root, shell: { maxOutputChars: 2_000 } });
    const model = new ScriptedModel([
      { toolCalls: [{ id: "sh1", name: "shell", args: { command: "seq 1 20000" } }] },
      (request) => {
        const shown = request.messages.at(-1)!;
        const text = typeof shown.content === "string" ? shown.content : JSON.stringify(shown.content);
        const offset = Number(/offset (\d+)/.exec(text)![1]);
        return {
          toolCalls: [
            { id: "rc1", name: "recall_tool_result", args: { call_id: "sh1", offset, max_chars: 100_000 } },
          ],
        };
      },
      { text: "done" },
    ]);
    const agent = new Agent({
      name: "w",
      model,
      tools: ws.tools,
      permissions: new StandardPermissions({ mode: "bypass" }),
    });
    const result = await Runner.run(agent, "count", { store });
    const [sh, recall] = result.toolCalls;
    expect(sh!.truncated?.originalChars).toBeGreaterThan(100_000);
    expect(sh!.output).toMatch(/^\[exit code 0, /);
    expect(sh!.output).toContain("tool output truncated");
    expect(sh!.output).toContain("\n20000");
    expect(sh!.output).not.toContain("\n10000\n");
    expect(recall!.ok).toBe(true);
    // The recall picks up where the shown head ends: the middle the model did not see.
    expect(recall!.output).toContain("\n10000\n");
    expect(recall!.output).toMatch(/continue with offset \d+/);
  });
});
