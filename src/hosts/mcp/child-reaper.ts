import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

/**
 * Children that must not outlive this process. Stdio servers are spawned in their own
 * process group (POSIX), so signalling the group also reaches what a wrapper started —
 * `npx -y some-server` or `sh -c "…"` leave the real server as a grandchild, which killing
 * only the direct child would orphan.
 */
const live = new Set<ChildProcess>();
let hooked = false;

/** Sends `signal` to the child's whole process group (just the child on Windows). */
export function signalTree(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  if (process.platform !== "win32") {
    try {
      process.kill(-child.pid, signal);
      return;
    } catch {
      // The group is gone (or was never ours); fall back to the child itself.
    }
  }
  try {
    child.kill(signal);
  } catch {
    // Already exited.
  }
}

/** Kills `child`'s process tree when this process exits, unless `release` is called first. */
export function reapOnExit(child: ChildProcess): void {
  live.add(child);
  if (hooked) return;
  hooked = true;
  // "exit" handlers must be synchronous: a signal is all that can be sent. SIGTERM lets a
  // server flush its state; the group's watcher (see `watchGroup`) follows with SIGKILL.
  process.once("exit", () => {
    for (const c of live) signalTree(c, "SIGTERM");
  });
}

export function release(child: ChildProcess): void {
  live.delete(child);
}

/** Resolves true once `child` has exited, false after `ms`. */
export function exited(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (value: boolean) => {
      clearTimeout(timer);
      child.off("exit", onExit);
      resolve(value);
    };
    const onExit = () => done(true);
    const timer = setTimeout(() => done(false), ms);
    child.once("exit", onExit);
  });
}

/**
 * The watcher: a tiny shell, outside the group, that blocks reading a pipe from this process.
 * The pipe closes when this process ends by any means — `close()`, a normal exit, a crash,
 * SIGKILL — and the watcher then sends the group SIGTERM and, a second later, SIGKILL. It is
 * what ends a server (and everything it started) after this process was killed outright,
 * when no code of ours can run any more. It ignores SIGINT, SIGTERM, SIGHUP and SIGQUIT:
 * process managers, IDEs and `tree-kill` stop a program by signalling it and every process
 * below it, which would end the watcher before the pipe closes, and leave a server that ignores
 * SIGTERM running for good. Only SIGKILL ends it early. (`kill -TERM -<group>` is the form
 * every POSIX shell's built-in accepts; dash rejects `kill -TERM -- -<group>`.)
 */
const WATCHER =
  "trap '' INT TERM HUP QUIT; " +
  'read _ignored; kill -TERM "-$1" 2>/dev/null; sleep 1; kill -KILL "-$1" 2>/dev/null';

/** A handle that ends the group's watcher, which then ends the group. */
export type GroupWatch = { end(): void };

/** Watches `child`'s process group (POSIX); a no-op on Windows. */
export function watchGroup(child: ChildProcess): GroupWatch {
  if (process.platform === "win32" || child.pid === undefined) return { end() {} };
  let watcher: ChildProcess;
  try {
    watcher = spawn("/bin/sh", ["-c", WATCHER, "quiver-mcp-watcher", String(child.pid)], {
      stdio: ["pipe", "ignore", "ignore"],
      detached: true,
    });
  } catch {
    return { end() {} };
  }
  watcher.on("error", () => {});
  watcher.stdin?.on("error", () => {});
  // Never what keeps this process alive: it only has to notice that this process is gone.
  watcher.unref();
  (watcher.stdin as { unref?(): void } | null)?.unref?.();
  return {
    end() {
      watcher.stdin?.end();
    },
  };
}

/** A process found under a server: its pid and start time (which tells a reused pid apart). */
export type Descendant = { pid: number; start: string };

/**
 * Every process below `pid` (Linux, from /proc; empty elsewhere), including those that left
 * the server's process group (`setsid`, a detached spawn), which a group signal misses.
 * Taken before the server is stopped: once it exits, its children are re-parented and can no
 * longer be traced to it.
 */
export function descendants(pid: number): Descendant[] {
  const children = new Map<number, Descendant[]>();
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(Number(entry));
    if (!stat) continue;
    const list = children.get(stat.parent) ?? [];
    list.push({ pid: Number(entry), start: stat.start });
    children.set(stat.parent, list);
  }
  const found: Descendant[] = [];
  const queue = [pid];
  while (queue.length > 0 && found.length < 10_000) {
    for (const child of children.get(queue.shift()!) ?? []) {
      found.push(child);
      queue.push(child.pid);
    }
  }
  return found;
}

/** SIGKILLs each process that is still the one found (same pid, same start time). */
export function killDescendants(found: readonly Descendant[]): void {
  for (const { pid, start } of found) {
    if (readStat(pid)?.start !== start) continue;
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Gone meanwhile.
    }
  }
}

function readStat(pid: number): { parent: number; start: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: fields resume after the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { parent: Number(fields[1]), start: fields[19] ?? "" };
  } catch {
    return undefined;
  }
}
