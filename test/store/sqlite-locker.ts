/**
 * Another process holding an SQLite file's write lock (`BEGIN IMMEDIATE`), as the `quiver`
 * command, a backup or another worker does, and a watch on this process's event loop.
 */
import { spawn } from "node:child_process";

const LOCKER = `
const Database = require("better-sqlite3");
const db = new Database(process.argv[1]);
db.exec("BEGIN IMMEDIATE");
process.stdout.write("locked\\n");
process.stdin.resume();
process.stdin.on("end", () => { db.exec("ROLLBACK"); db.close(); process.exit(0); });
`;

/** Holds the file's write lock in a child process until `release()` (which resolves once the lock is gone). */
export async function holdWriteLock(path: string): Promise<{ release: () => Promise<void> }> {
  const child = spawn(process.execPath, ["-e", LOCKER, path], {
    stdio: ["pipe", "pipe", "inherit"],
    cwd: process.cwd(),
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once("data", () => resolve());
    child.once("exit", (code) => reject(new Error(`the locker exited (${code}) before it held the lock`)));
  });
  return {
    release: async () => {
      child.stdin!.end();
      await exited;
    },
  };
}

/** Ticks every 10 ms and keeps the longest gap between two ticks: how long the event loop was held up. */
export function watchEventLoop(): { maxGapMs: () => number; stop: () => void } {
  let last = performance.now();
  let max = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    max = Math.max(max, now - last);
    last = now;
  }, 10);
  return {
    maxGapMs: () => Math.max(max, performance.now() - last),
    stop: () => clearInterval(timer),
  };
}
