import { Worker } from "node:worker_threads";

/**
 * Commits between two requests to the worker: ~560 WAL pages at a sequential run's ~2.2 pages
 * per commit, so the worker has copied them before SQLite's own checkpoint (at 1,000 pages)
 * comes round. Measured on a durable run: 16, 64, 256 and 512 commits; 256 and 512 cost the
 * event loop least (each checkpoint also syncs the files twice, on the worker).
 */
const COMMITS_PER_CHECKPOINT = 256;

/** How long `close` waits for the worker to finish a checkpoint under way and close its connection. */
const CLOSE_TIMEOUT_MS = 2_000;

/**
 * The worker's code. Its own connection copies committed pages from the WAL into the database
 * file (a PASSIVE checkpoint: it never blocks a writer, and a writer never waits for it). The
 * connection syncs as the store does: a checkpoint that did not sync the database file before
 * the WAL is reused could lose committed events in a power loss.
 */
const WORKER_CODE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.path, { timeout: workerData.busyTimeoutMs, fileMustExist: true });
db.pragma("synchronous = " + workerData.synchronous);
parentPort.on("message", (message) => {
  if (message === "close") {
    db.close();
    parentPort.close();
    return;
  }
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
    parentPort.postMessage({ ok: true });
  } catch {
    parentPort.postMessage({ ok: false });
  }
});
`;

export type CheckpointerOptions = {
  /** The database file (a WAL-mode file: not `":memory:"`). */
  path: string;
  /** Where better-sqlite3 resolves from, for the worker to load the same driver. */
  driver: string;
  synchronous: "FULL" | "NORMAL";
  busyTimeoutMs: number;
};

/**
 * Keeps WAL checkpoints off the event loop. SQLite's own automatic checkpoint runs inside the
 * commit that crosses 1,000 WAL pages and copies them all into the database file there and
 * then: on a sequential durable run, a ~10 ms pause every few hundred commits, a quarter of
 * the store's time per call. Here a worker thread, with its own connection, checkpoints every
 * 256 commits instead, so when SQLite's automatic checkpoint comes round (it stays on, as the
 * backstop) the pages are already copied and it only finishes the last few.
 *
 * The worker starts with the first request: a store that commits a few times never has one.
 * If it cannot start or a checkpoint fails, it stops, and SQLite's automatic checkpoint does
 * all the copying again, as it would without it: nothing is lost but the pauses.
 *
 * @example
 * const checkpointer = new SqliteCheckpointer({ path, driver, synchronous: "NORMAL", busyTimeoutMs: 5_000 });
 * checkpointer.committed(); // after each commit
 * await checkpointer.close();
 */
export class SqliteCheckpointer {
  readonly #options: CheckpointerOptions;
  #worker: Worker | undefined;
  #commits = 0;
  #busy = false;
  #stopped = false;

  constructor(options: CheckpointerOptions) {
    this.#options = options;
  }

  /** Counts a commit; every 256th asks the worker for a checkpoint, unless one is under way. */
  committed(): void {
    if (++this.#commits < COMMITS_PER_CHECKPOINT || this.#busy || this.#stopped) return;
    this.#commits = 0;
    this.#busy = true;
    try {
      this.#worker ??= this.#start();
      this.#worker.postMessage("checkpoint");
    } catch {
      this.#stop();
    }
  }

  #start(): Worker {
    const { path, driver, synchronous, busyTimeoutMs } = this.#options;
    const worker = new Worker(WORKER_CODE, {
      eval: true,
      workerData: { path, driver, synchronous, busyTimeoutMs },
    });
    worker.on("message", (reply: { ok: boolean }) => {
      this.#busy = false;
      if (!reply.ok) this.#stop();
    });
    worker.on("error", () => this.#stop());
    worker.on("exit", () => this.#stop());
    // A store nobody closes must not keep the process alive. After the listeners: adding a
    // "message" listener refs the worker's port again.
    worker.unref();
    return worker;
  }

  #stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    void this.#worker?.terminate();
    this.#worker = undefined;
  }

  /** Lets a checkpoint under way finish, closes the worker's connection, and stops the worker. */
  async close(): Promise<void> {
    this.#stopped = true;
    const worker = this.#worker;
    this.#worker = undefined;
    if (worker === undefined) return;
    const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
    worker.postMessage("close");
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), CLOSE_TIMEOUT_MS);
    });
    try {
      if ((await Promise.race([exited, late])) === "late") await worker.terminate();
    } finally {
      clearTimeout(timer);
    }
  }
}
