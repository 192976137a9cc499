import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { SqliteStore } from "quiver-agents/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PostgresCluster, startPostgresCluster } from "../store/postgres-cluster.js";

const root = resolve(import.meta.dirname, "../..");
const agentScript = join(root, "test/fixtures/durability/crash-agent.ts");

type Outcome = { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string };

function child(env: Record<string, string>): Promise<Outcome> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      ["--import", "tsx", agentScript],
      { cwd: root, env: { ...process.env, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const failure = error as (Error & { code?: number; signal?: NodeJS.Signals }) | null;
        done({ code: failure?.code ?? 0, signal: failure?.signal ?? null, stdout, stderr });
      },
    );
  });
}

// Every kind of boundary the run passes, with which occurrence to crash after.
const boundaries: Array<[string, number]> = [
  ["run_started", 1],
  ["turn_started", 1],
  ["text_delta", 1],
  ["usage", 1],
  ["message", 2],
  ["tool_call_requested", 2],
  ["tool_call_started", 1],
  ["tool_call_started", 2],
  ["tool_call_completed", 1],
  ["message", 3],
  ["turn_completed", 1],
  ["turn_started", 2],
  ["tool_call_completed", 3],
  ["turn_started", 3],
  ["message", 6],
];

const stores: Array<{ name: string; spec: (dir: string) => string; pg?: boolean }> = [
  { name: "SqliteStore", spec: (dir) => `sqlite:${join(dir, "runs.db")}` },
  { name: "PostgresStore", spec: () => `postgres:${cluster!.connectionString}`, pg: true },
];
let cluster: PostgresCluster | undefined;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "quiver-crash-"));
  cluster = await startPostgresCluster();
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe.each(stores)("crash and resume on $name (SIGKILL in a child process)", (store) => {
  let reference: { messages: unknown[]; output: string };

  beforeAll(async () => {
    const effects = join(dir, `${store.name}-reference.log`);
    writeFileSync(effects, "");
    const out = await child({
      STORE: store.spec(dir),
      RUN_ID: `${store.name}-reference`,
      MODE: "start",
      EFFECTS: effects,
    });
    expect(out.code, out.stderr).toBe(0);
    reference = JSON.parse(out.stdout);
    expect(reference.output).toBe("All counted.");
  }, 60_000);

  it.each(boundaries)(
    "after %s #%i: nothing completed runs twice, nothing is lost, the transcript is the same",
    async (type, nth) => {
      const runId = `${store.name}-${type}-${nth}`;
      const effects = join(dir, `${runId}.log`);
      writeFileSync(effects, "");
      const crashed = await child({
        STORE: store.spec(dir),
        RUN_ID: runId,
        MODE: "start",
        KILL_AFTER: type,
        KILL_NTH: String(nth),
        EFFECTS: effects,
      });
      expect(crashed.signal, `the child should have died after ${type} #${nth}: ${crashed.stderr}`).toBe(
        "SIGKILL",
      );

      // What the log says had completed before the crash (read from the store itself).
      const completedBefore = await completedCalls(store, runId);
      const ranBefore = lines(effects);

      // At once: the dead process's lease (30 s ttl) is free because its process is gone.
      const resumed = await child({
        STORE: store.spec(dir),
        RUN_ID: runId,
        MODE: "resume",
        EFFECTS: effects,
      });
      expect(resumed.code, resumed.stderr).toBe(0);
      const result = JSON.parse(resumed.stdout);
      expect(result.messages).toEqual(reference.messages);
      expect(result.output).toBe("All counted.");

      const ranAfter = lines(effects).slice(ranBefore.length);
      for (const id of completedBefore)
        expect(ranAfter, `call ${id} had completed before the crash`).not.toContain(id);
      // Every call ran at least once in total: no result was lost.
      for (const id of ["a", "b", "c"]) expect(lines(effects)).toContain(id);
    },
  );
});

function lines(path: string): string[] {
  return readFileSync(path, "utf8").split("\n").filter(Boolean);
}

async function completedCalls(store: { name: string; pg?: boolean }, runId: string): Promise<string[]> {
  const events = store.pg
    ? await readPostgres(runId)
    : await (async () => {
        const s = new SqliteStore({ path: join(dir, "runs.db") });
        try {
          return await s.read(runId);
        } finally {
          await s.close();
        }
      })();
  return events.flatMap((e) => (e.type === "tool_call_completed" ? [e.call.id] : []));
}

async function readPostgres(runId: string) {
  const { PostgresStore } = await import("quiver-agents/store");
  const s = new PostgresStore({ connectionString: cluster!.connectionString });
  try {
    return await s.read(runId);
  } finally {
    await s.close();
  }
}
