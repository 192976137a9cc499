import type { ChildProcess } from "node:child_process";

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
  // server flush its state; its stdin has closed by then as well, which ends most servers.
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
