import { readdirSync, readFileSync } from "node:fs";

/** How often the process tree is read while a command runs. */
const POLL_MS = 100;
/** Rounds of find-and-kill at the end: a process forking as it dies may leave a child the first round missed. */
const KILL_ROUNDS = 5;

/** The environment variable that marks every process of one shell call (inherited unless cleared). */
export const CALL_MARKER_VARIABLE = "QUIVER_SHELL_CALL";

/**
 * The processes one shell call started, found in `/proc`, so that those that left its process
 * group (`setsid`, a daemon's double fork) die with the call too. Without a PID namespace
 * nothing holds them, so two nets:
 *
 * - while the command runs, the tree under its process is read every 100 ms (cheap: only the
 *   `children` files of the call's own processes), remembering each process it saw;
 * - at the end, every process whose environment carries this call's marker variable
 *   (`QUIVER_SHELL_CALL=<id>`) is found, however it was reparented.
 *
 * A process that both leaves the tree between two reads and clears its environment
 * (`setsid -f env -i …`) escapes both; the bubblewrap sandbox's PID namespace has no such gap.
 * Start times are checked before a kill, so a reused pid is never hit. Linux only; elsewhere
 * this does nothing beyond the process-group kill.
 */
export class Descendants {
  readonly #seen = new Map<number, string>();
  readonly #marker: Buffer;
  readonly #markerAfterNul: Buffer;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    readonly rootPid: number,
    markerValue: string,
  ) {
    this.#marker = Buffer.from(`${CALL_MARKER_VARIABLE}=${markerValue}\0`);
    this.#markerAfterNul = Buffer.concat([Buffer.of(0), this.#marker]);
  }

  static get supported(): boolean {
    return process.platform === "linux";
  }

  start(): void {
    if (!Descendants.supported) return;
    this.#timer = setInterval(() => this.poll(), POLL_MS);
    this.#timer.unref();
    setImmediate(() => this.poll());
  }

  /** Reads the tree under the command now; the root itself is not kept (the group kill covers it). */
  poll(): void {
    // Forget the processes that ended, so a build that runs thousands of short ones stays cheap.
    for (const [pid, started] of this.#seen) if (startTime(pid) !== started) this.#seen.delete(pid);
    for (const pid of this.#tree()) {
      if (this.#seen.has(pid)) continue;
      const started = startTime(pid);
      if (started !== undefined) this.#seen.set(pid, started);
    }
  }

  /** Sends `signal` to every process of the call seen so far (alive and still the same process). */
  signal(signal: NodeJS.Signals): void {
    for (const [pid, started] of this.#seen) {
      if (startTime(pid) === started) kill(pid, signal);
    }
  }

  /** Stops watching and SIGKILLs every process of the call it can find, until none is left. */
  async killAll(): Promise<void> {
    clearInterval(this.#timer);
    if (!Descendants.supported) return;
    for (let round = 0; round < KILL_ROUNDS; round++) {
      this.poll();
      for (const pid of this.#marked()) {
        const started = startTime(pid);
        if (started !== undefined) this.#seen.set(pid, started);
      }
      const alive = [...this.#seen].filter(([pid, started]) => startTime(pid) === started);
      if (alive.length === 0) return;
      for (const [pid] of alive) kill(pid, "SIGKILL");
      this.#seen.clear();
    }
  }

  /** Pids under the root (and under every process seen before, which may have been reparented since). */
  #tree(): number[] {
    return walk(this.rootPid, [...this.#seen.keys()]);
  }

  /** The processes under `pid` now, children first. */
  static treeOf(pid: number): number[] {
    return walk(pid, []);
  }

  /**
   * Pids whose environment carries this call's marker. Read synchronously: ~2 ms for a few
   * hundred processes, where the same reads through the thread pool take ten times longer.
   */
  #marked(): number[] {
    let entries: string[];
    try {
      entries = readdirSync("/proc");
    } catch {
      return [];
    }
    const marked: number[] = [];
    for (const entry of entries) {
      if (!/^\d+$/.test(entry)) continue;
      const pid = Number(entry);
      if (pid === process.pid || pid === this.rootPid) continue;
      try {
        const environ = readFileSync(`/proc/${pid}/environ`);
        const first = environ.subarray(0, this.#marker.length);
        if (first.equals(this.#marker) || environ.includes(this.#markerAfterNul)) marked.push(pid);
      } catch {
        // Gone, or another user's: not ours.
      }
    }
    return marked;
  }
}

function walk(root: number, more: number[]): number[] {
  const found: number[] = [];
  const queue = [root, ...more];
  const visited = new Set<number>();
  while (queue.length > 0) {
    const pid = queue.shift()!;
    if (visited.has(pid)) continue;
    visited.add(pid);
    if (pid !== root) found.push(pid);
    queue.push(...children(pid));
  }
  return found;
}

function children(pid: number): number[] {
  try {
    const pids: number[] = [];
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${task}/children`, "utf8");
      for (const child of text.split(" ")) if (child) pids.push(Number(child));
    }
    return pids;
  } catch {
    return [];
  }
}

/** Field 22 of `/proc/<pid>/stat` (after the parenthesised name, which may hold spaces). */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[0] is the state (field 3); a zombie is already dead.
    if (fields[0] === "Z") return undefined;
    return fields[19];
  } catch {
    return undefined;
  }
}

function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}
