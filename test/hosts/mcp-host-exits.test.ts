// However the host process ends — process.exit, a crash, a signal, SIGKILL, or a tree kill that
// signals its children too — a stdio server that ignores stdin closing and SIGTERM, and the
// grandchild it started (which ignores SIGTERM as well), are gone within 2 seconds.
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { alive, gone } from "./servers.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const fixture = fileURLToPath(new URL("../fixtures/hosts/exit-paths.ts", import.meta.url));
const BOUND_MS = 2_000;

type Pids = { serverPid: number; grandchildPid: number };

/** Starts the host; resolves with it and the pids it printed once its server runs. */
async function startHost(how: string): Promise<{ host: ChildProcess; pids: Pids }> {
  const host = spawn(process.execPath, ["--import", "tsx", fixture, how], {
    cwd: root,
    stdio: ["ignore", "pipe", "ignore"],
  });
  const line = await new Promise<string>((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => reject(new Error(`no pids from the host: ${output}`)), 15_000);
    host.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("\n")) {
        clearTimeout(timer);
        resolve(output.slice(0, output.indexOf("\n")));
      }
    });
  });
  return { host, pids: JSON.parse(line) as Pids };
}

function ended(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

/** The host's direct children (Linux), as `pkill -P` or the `tree-kill` package find them. */
function childrenOf(pid: number): number[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone.
  }
}

/** Ends the host as `end` says, then checks that nothing it started is left after BOUND_MS. */
async function expectNothingLeft(how: string, end: (host: ChildProcess) => void): Promise<void> {
  const { host, pids } = await startHost(how);
  try {
    expect(alive(pids.serverPid)).toBe(true);
    expect(alive(pids.grandchildPid)).toBe(true);
    end(host);
    await ended(host);
    expect(await gone(pids.serverPid, BOUND_MS), "the server").toBe(true);
    expect(await gone(pids.grandchildPid, BOUND_MS), "the server's child").toBe(true);
  } finally {
    signal(pids.serverPid, "SIGKILL");
    signal(pids.grandchildPid, "SIGKILL");
    host.kill("SIGKILL");
  }
}

describe.concurrent("a stdio server that ignores SIGTERM does not outlive its host", () => {
  it("process.exit(0) without close()", () => expectNothingLeft("exit", () => {}));
  it("an uncaught exception", () => expectNothingLeft("throw", () => {}));
  it("an unhandled rejection", () => expectNothingLeft("reject", () => {}));
  for (const name of ["SIGTERM", "SIGINT", "SIGHUP", "SIGKILL"] as const) {
    it(`${name} to the host`, () => expectNothingLeft("wait", (host) => host.kill(name)));
  }
  // Process managers and IDEs stop a program by signalling it and every process below it; the
  // server ignores SIGTERM, so only the watcher can end it, and it must not die of it first.
  for (const name of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    it.runIf(process.platform === "linux")(`${name} to the host and each of its children (a tree kill)`, () =>
      expectNothingLeft("wait", (host) => {
        for (const pid of childrenOf(host.pid!)) signal(pid, name);
        host.kill(name);
      }),
    );
  }
});
