import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { CALL_MARKER_VARIABLE, Descendants } from "./descendants.js";

/** How long a group gets between SIGTERM and SIGKILL. */
export const KILL_GRACE_MS = 2_000;
/** After the command exits, how long its output may still arrive before stragglers are killed. */
const DRAIN_MS = 150;
/** Output kept in memory: the first and the last half of this; the middle is counted, not kept. */
const MAX_KEPT_CHARS = 4_000_000;

/** How the command ended. */
export type CommandOutcome = {
  output: string;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  cancelled: boolean;
  /** Characters of output dropped from the middle to bound memory (the spilled text says so too). */
  droppedChars: number;
  durationMs: number;
};

export type SpawnSpec = { file: string; args: string[]; cwd: string; env: Record<string, string> };

export type RunCommandOptions = {
  timeoutMs: number;
  signal?: AbortSignal;
  /** Called with each chunk of output (stdout and stderr interleaved as they arrive). */
  onOutput?: (chunk: string) => void;
  /**
   * Also stop the processes that leave the group (`setsid`, daemons), found in `/proc` (see
   * `Descendants`). Not needed inside a PID namespace, where they die with the call anyway.
   */
  trackDescendants?: boolean;
  /**
   * The process started is a launcher that takes everything with it when it dies (bubblewrap
   * with `--die-with-parent`): SIGTERM goes to the processes under it, so the command gets its
   * grace period; SIGKILL still goes to the whole group.
   */
  terminateInside?: boolean;
};

/**
 * Runs one command in a process group of its own and makes sure the whole group is gone when it
 * returns: on timeout or cancel the group gets SIGTERM, then SIGKILL after `KILL_GRACE_MS`; when
 * the command exits, whatever it left running in its group (a background job) is killed after a
 * short drain, and with `trackDescendants` so is every process it started that left the group.
 * It resolves on exit rather than on the pipes closing, so a background child that keeps stdout
 * open cannot make it hang. stdin is closed.
 */
export function runCommand(spec: SpawnSpec, options: RunCommandOptions): Promise<CommandOutcome> {
  // Already cancelled (the run stopped while the call was getting ready): never start it. A
  // start followed by a kill is not the same: a launcher that outlives SIGTERM (a container
  // runtime, `env --ignore-signal`) would run the command anyway.
  if (options.signal?.aborted) return Promise.resolve(notStarted());
  const started = performance.now();
  const output = new HeadTail(MAX_KEPT_CHARS);
  const marker = options.trackDescendants && Descendants.supported ? randomUUID() : undefined;
  let child: ChildProcess;
  try {
    child = spawn(spec.file, spec.args, {
      cwd: spec.cwd,
      env: marker ? { ...spec.env, [CALL_MARKER_VARIABLE]: marker } : spec.env,
      detached: true, // its own process group: one kill reaches every process it starts
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch (error) {
    return Promise.reject(error);
  }
  const descendants = marker && child.pid !== undefined ? new Descendants(child.pid, marker) : undefined;
  descendants?.start();
  return new Promise<CommandOutcome>((resolve, reject) => {
    let timedOut = false;
    let cancelled = false;
    let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    let drainTimer: NodeJS.Timeout | undefined;
    let finished = false;
    const onData = (text: string) => {
      output.push(text);
      options.onOutput?.(text);
    };
    // Decoded per stream, so a character split across two chunks is not garbled.
    child.stdout!.setEncoding("utf8").on("data", onData);
    child.stderr!.setEncoding("utf8").on("data", onData);
    const stop = () => {
      if (!options.terminateInside || !signalTree(child, "SIGTERM")) killGroup(child, "SIGTERM");
      descendants?.signal("SIGTERM");
      killTimer ??= setTimeout(() => {
        killGroup(child, "SIGKILL");
        descendants?.signal("SIGKILL");
      }, KILL_GRACE_MS);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, options.timeoutMs);
    const onAbort = () => {
      cancelled = true;
      stop();
    };
    options.signal?.addEventListener("abort", onAbort, { once: true });
    if (options.signal?.aborted) onAbort();
    const finish = () => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      clearTimeout(drainTimer);
      clearTimeout(killTimer);
      options.signal?.removeEventListener("abort", onAbort);
      // No survivors: anything still in the group (a background job) goes now, and so does
      // whatever left the group.
      killGroup(child, "SIGKILL");
      child.stdout!.destroy();
      child.stderr!.destroy();
      const outcome: CommandOutcome = {
        output: output.text(),
        exitCode: exited?.code ?? null,
        signal: exited?.signal ?? null,
        timedOut,
        cancelled,
        droppedChars: output.dropped,
        durationMs: Math.round(performance.now() - started),
      };
      if (!descendants) return resolve(outcome);
      descendants.killAll().then(
        () => resolve(outcome),
        () => resolve(outcome),
      );
    };
    child.once("error", (error) => {
      if (exited) return;
      finished = true;
      void descendants?.killAll();
      clearTimeout(timer);
      clearTimeout(killTimer);
      options.signal?.removeEventListener("abort", onAbort);
      reject(error);
    });
    child.once("exit", (code, signal) => {
      exited = { code, signal };
      // The pipes usually close at once; a background child holding them gets a short drain.
      drainTimer = setTimeout(finish, DRAIN_MS);
    });
    child.once("close", () => {
      if (exited) finish();
    });
  });
}

function notStarted(): CommandOutcome {
  return {
    output: "",
    exitCode: null,
    signal: null,
    timedOut: false,
    cancelled: true,
    droppedChars: 0,
    durationMs: 0,
  };
}

/** Signals every process under the child (not the child itself); false when there was none to signal. */
function signalTree(child: ChildProcess, signal: NodeJS.Signals): boolean {
  if (child.pid === undefined || !Descendants.supported) return false;
  const tree = Descendants.treeOf(child.pid);
  for (const pid of tree) {
    try {
      process.kill(pid, signal);
    } catch {
      // Gone.
    }
  }
  return tree.length > 0;
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** Text that keeps its first and last `max / 2` characters and counts what it dropped between. */
class HeadTail {
  #head = "";
  #tail: string[] = [];
  #tailChars = 0;
  dropped = 0;
  readonly #half: number;

  constructor(max: number) {
    this.#half = Math.floor(max / 2);
  }

  push(text: string): void {
    if (this.#head.length < this.#half) {
      const room = this.#half - this.#head.length;
      this.#head += text.slice(0, room);
      text = text.slice(room);
      if (!text) return;
    }
    this.#tail.push(text);
    this.#tailChars += text.length;
    while (this.#tailChars > this.#half && this.#tail.length > 0) {
      const over = this.#tailChars - this.#half;
      const first = this.#tail[0]!;
      if (first.length <= over) {
        this.#tail.shift();
        this.#tailChars -= first.length;
        this.dropped += first.length;
      } else {
        this.#tail[0] = first.slice(over);
        this.#tailChars -= over;
        this.dropped += over;
      }
    }
  }

  text(): string {
    const tail = this.#tail.join("");
    return this.dropped > 0
      ? `${this.#head}\n[... ${this.dropped.toLocaleString("en-US")} chars of output not kept ...]\n${tail}`
      : this.#head + tail;
  }
}
