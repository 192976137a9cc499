/**
 * Lease owner ids that say which process holds a lease, so a lease left by a process that no
 * longer exists on this machine can be taken over at once instead of after its ttl.
 *
 * An id reads `host:pid:nonce:machine`: the host name and pid (for people reading error
 * messages), a nonce that tells two drivers in one process apart, and `machine`, a digest of
 * the kernel's boot id and the pid namespace plus the process's start time. A pid is only
 * meaningful inside one pid namespace of one boot: two containers with the same host name,
 * or a machine that rebooted, must never judge each other's pids. The start time catches a
 * pid the kernel has since given to another process.
 */
import { createHash, randomUUID } from "node:crypto";
import { readFileSync, readlinkSync } from "node:fs";
import { hostname } from "node:os";

type ParsedOwner = { host: string; pid: number; machine: string | undefined; started: string | undefined };

const OWNER = /^(.+):(\d+):([0-9a-f]{8})(?::([0-9a-f]{16})\.(\d+))?$/;

let here: { host: string; machine: string | undefined; started: string | undefined } | undefined;

/** This process's identity, read once. `machine` is undefined where /proc is not available. */
function thisProcess() {
  if (here === undefined) {
    let machine: string | undefined;
    let started: string | undefined;
    try {
      const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
      const pidNamespace = readlinkSync("/proc/self/ns/pid");
      machine = createHash("sha256").update(`${boot}\n${pidNamespace}`).digest("hex").slice(0, 16);
      started = readStat(process.pid)?.started;
    } catch {
      machine = undefined;
    }
    here = { host: hostname(), machine: started === undefined ? undefined : machine, started };
  }
  return here;
}

/**
 * A fresh lease owner id for this process: unique per call, and telling other processes on this
 * machine which process holds the lease.
 *
 * @example
 * const lease = await store.acquireLease(runId, leaseOwner(), 30_000);
 */
export function leaseOwner(): string {
  const { host, machine, started } = thisProcess();
  const base = `${host}:${process.pid}:${randomUUID().slice(0, 8)}`;
  return machine !== undefined && started !== undefined ? `${base}:${machine}.${started}` : base;
}

function parse(owner: string): ParsedOwner | undefined {
  const match = OWNER.exec(owner);
  if (!match) return undefined;
  return { host: match[1]!, pid: Number(match[2]), machine: match[4], started: match[5] };
}

/**
 * True when `owner` names a process on this machine that no longer exists, or a driver of this
 * process that stopped without giving its leases back (its store failed under it): its lease is
 * free at once. Anything else — another machine, an id this function cannot read, a process that
 * exists or that it cannot be sure about — is false, and the lease stays until it expires.
 *
 * @example
 * if (ownerIsGone(summary.leaseOwner ?? "")) await Runner.resume(agent, summary.runId, { store });
 */
export function ownerIsGone(owner: string): boolean {
  if (stopped.has(owner)) return true;
  const parsed = parse(owner);
  if (parsed === undefined) return false;
  const self = thisProcess();
  if (parsed.host !== self.host) return false;
  // Where both ids carry a machine digest they must match; an id without one is only judged
  // by a process that has none either (a system without /proc, where the host name is all there is).
  if (parsed.machine !== self.machine) return false;
  if (parsed.pid === process.pid) return false; // this process: alive by definition
  if (!Number.isSafeInteger(parsed.pid) || parsed.pid <= 0) return false;
  try {
    process.kill(parsed.pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
  if (parsed.started === undefined) return false;
  // The pid exists: it is the owner only if it started when the owner did and is not a zombie
  // (killed, but not yet reaped by its parent). Unreadable means unsure, and unsure keeps the lease.
  const stat = readStat(parsed.pid);
  if (stat === undefined) return false;
  return stat.zombie || stat.started !== parsed.started;
}

/**
 * Drivers of this process that stopped without their store confirming that their leases were
 * given back (the store failed under them): this process judges such an owner as it would a
 * dead process's, so its own `Runner.recover` and the session's next run need not wait out the
 * ttl. Kept for `forMs` (by then the leases have expired anyway), or until `ownerResumed`.
 */
const stopped = new Map<string, NodeJS.Timeout>();

/**
 * Marks `owner` — a driver of this process that has stopped for good and will write nothing
 * more — as gone, for `forMs`.
 *
 * @example
 * ownerStopped(owner, 2 * leaseTtlMs);
 */
export function ownerStopped(owner: string, forMs: number): void {
  clearTimeout(stopped.get(owner));
  const timer = setTimeout(() => stopped.delete(owner), forMs);
  timer.unref?.();
  stopped.set(owner, timer);
}

/** Forgets `ownerStopped(owner)`: its leases are all given back. */
export function ownerReleasedAll(owner: string): void {
  clearTimeout(stopped.get(owner));
  stopped.delete(owner);
}

/** Process `pid`'s start time (clock ticks since boot) and whether it is a zombie, from /proc/<pid>/stat. */
function readStat(pid: number): { started: string; zombie: boolean } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may itself hold spaces or parentheses.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const started = fields[19];
  if (started === undefined || !/^\d+$/.test(started)) return undefined;
  return { started, zombie: fields[0] === "Z" || fields[0] === "X" };
}
