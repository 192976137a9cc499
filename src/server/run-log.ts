import type { HumanQuestion } from "../builtin-tools/ask-human.js";
import type { Message, RunEvent, RunHandle, Tool, ToolCall } from "../index.js";
import { approxBytes } from "./approx-bytes.js";

/** Where a run stands, as the server's clients see it. */
export type RunStatus =
  /** Driven by this process. */
  | "running"
  /** Stored and released from memory until an approval is decided. */
  | "parked"
  | "completed"
  | "failed"
  /** Known from the store only, not finished and not driven here (another process, or a crash). */
  | "detached";

/** A question of `ask_human` waiting for its answer, with the call that asked it. */
export type OpenQuestion = { question: HumanQuestion; call: ToolCall; runId: string };

/**
 * One run's events as the server keeps them: the replay buffer every client reads from at its
 * own pace (a cursor), so a slow client holds a number, never a copy of the events.
 *
 * `all` is every event the run's handle emitted, child runs' included, in order (what a chat
 * UI shows); `own` is the run's own events, where `own[i].seq === firstSeq + i` (what the
 * native stream's `id:` numbers count).
 */
export class RunLog {
  readonly runId: string;
  /** Who started it (`undefined` when the server has no per-user auth). */
  readonly userId: string | undefined;
  readonly agentKey: string;
  readonly sessionId: string | undefined;
  readonly all: RunEvent[] = [];
  readonly own: RunEvent[] = [];
  /** Where each own event sits in `all` (`ownIndex[i]` for `own[i]`). */
  readonly #ownIndex: number[] = [];
  status: RunStatus = "running";
  /** What the run's `result()` rejected with, once it failed. */
  failure: unknown;
  /** The `storeWaitMs` the run was given, if any: how long its start may wait for its store. */
  storeWaitMs: number | undefined;
  handle: RunHandle<any> | undefined;
  /** Calls waiting for a person's decision, keyed by `callKey()`. */
  readonly asking = new Map<string, { call: ToolCall; runId: string }>();
  /** Questions waiting for a person's answer, keyed by `callKey()` of the asking call. */
  readonly questions = new Map<string, OpenQuestion>();
  /** Child run id → `callKey()` of the call that started it (an agent used as a tool). */
  readonly parentCalls = new Map<string, string>();
  /** Calls started and not completed, keyed by `callKey()`. */
  readonly running = new Map<string, { call: ToolCall; runId: string }>();
  /** With `status: "parked"`: the calls the run waits on. */
  parked: Array<{ call: ToolCall; runId: string }> = [];
  /**
   * Tools the run was started with besides its agent's own (an AG-UI client's tools): a resume
   * offers them again. Replaced by each request that brings the client's current tools.
   */
  extraTools: readonly Tool<any, any>[] | undefined;
  /** The transcript once the run ended (the next run of the chat continues from it when there is no store). */
  messages: Message[] | undefined;
  /** Where the last chat response ended (an index into `all`): a continuation starts there. */
  chatCursor: number | undefined;
  /**
   * Set when the server shuts down, once its runs have ended: a stream following this run ends
   * after what the log holds, even though the run (parked, detached) could go on elsewhere later.
   */
  released = false;
  /** Epoch ms of the last change; finished runs are evicted oldest first. */
  touchedAt = Date.now();
  /**
   * About how much memory the log's events hold (attachments in a `run_started` included): what
   * keeping the run after its end costs. Its transcript (`messages`) shares their content.
   */
  bytes = 0;
  #waiters: Array<() => void> = [];

  constructor(runId: string, agentKey: string, userId: string | undefined, sessionId: string | undefined) {
    this.runId = runId;
    this.agentKey = agentKey;
    this.userId = userId;
    this.sessionId = sessionId;
  }

  /** The seq of the first own event held (events before it were never loaded). */
  get firstSeq(): number {
    return this.own[0]?.seq ?? 1;
  }

  get lastSeq(): number {
    return this.own.at(-1)?.seq ?? 0;
  }

  /** True once the run cannot emit again (a parked run can, after a decision). */
  get finished(): boolean {
    return this.status === "completed" || this.status === "failed";
  }

  /**
   * True when the run cannot go on without a person: a decision or an answer is awaited, and
   * nothing else is running (a call that runs may still report). A chat response ends here.
   */
  get blocked(): boolean {
    if (this.status === "parked") return true;
    if (this.status !== "running") return false;
    if (this.asking.size === 0 && this.questions.size === 0) return false;
    // Calls that wait for the person: the asking ones, and the agent-tool calls above them.
    const waiting = new Set<string>(this.questions.keys());
    for (const entry of [...this.asking.values(), ...this.questions.values()]) {
      for (let key = this.parentCalls.get(entry.runId); key !== undefined; ) {
        waiting.add(key);
        key = this.parentCalls.get(key.slice(0, key.lastIndexOf("/")));
      }
    }
    for (const key of this.running.keys()) if (!waiting.has(key)) return false;
    return true;
  }

  /** Own events with `seq > after`, at most `limit`. */
  ownAfter(after: number, limit: number): RunEvent[] {
    const start = Math.max(0, after - this.firstSeq + 1);
    return this.own.slice(start, start + limit);
  }

  /** The index in `all` just after the own event with seq `after` (0 before the first). */
  allAfter(after: number): number {
    const i = after - this.firstSeq;
    if (i < 0) return 0;
    if (i >= this.own.length) return this.all.length;
    return this.#ownIndex[i]! + 1;
  }

  append(event: RunEvent): void {
    this.bytes += approxBytes(event);
    this.all.push(event);
    if (event.runId === this.runId) {
      this.own.push(event);
      this.#ownIndex.push(this.all.length - 1);
    }
    this.touch();
  }

  /** Wakes every reader waiting in `changed()`. */
  touch(): void {
    this.touchedAt = Date.now();
    const waiters = this.#waiters;
    if (waiters.length === 0) return;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolves on the next change, after `timeoutMs`, or when `signal` aborts — whichever is first. */
  changed(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        const i = this.#waiters.indexOf(done);
        if (i >= 0) this.#waiters.splice(i, 1);
        resolve();
      };
      if (signal?.aborted) return resolve();
      timer = setTimeout(done, timeoutMs);
      signal?.addEventListener("abort", done, { once: true });
      this.#waiters.push(done);
    });
  }
}

/** A call's key across a run and its child runs (child call ids may repeat the parent's). */
export function callKey(runId: string, callId: string): string {
  return `${runId}/${callId}`;
}
