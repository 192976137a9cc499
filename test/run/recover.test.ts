/**
 * Taking over a dead driver: a run whose process was killed is resumed by a new process at
 * once (its lease names a process that no longer exists), by `Runner.resume` or by a
 * supervisor's `Runner.recover` — with the usual guarantees — while a live driver's lease
 * still holds. On SQLite and PostgreSQL, with real child processes and SIGKILL.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Runner } from "quiver-agents";
import { LeaseConflict, ownerIsGone, PostgresStore, type RunStore, SqliteStore } from "quiver-agents/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { paymentsAgent } from "../fixtures/durability/payments-agent.js";
import { type PostgresCluster, startPostgresCluster } from "../store/postgres-cluster.js";

const root = resolve(import.meta.dirname, "../..");
const driver = join(root, "test/fixtures/durability/payments-driver.ts");

type Outcome = {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
};
type Summary = {
  runId: string;
  stopReason: string;
  output: string;
  toolCalls: Array<{ id: string; ok: boolean; kind?: string }>;
};

function child(env: Record<string, string>): Promise<Outcome> {
  const startedAt = Date.now();
  return new Promise((done) => {
    execFile(
      process.execPath,
      ["--import", "tsx", driver],
      { cwd: root, env: { ...process.env, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const failure = error as (Error & { code?: number; signal?: NodeJS.Signals }) | null;
        done({
          code: failure?.code ?? 0,
          signal: failure?.signal ?? null,
          stdout,
          stderr,
          ms: Date.now() - startedAt,
        });
      },
    );
  });
}

function results(out: Outcome): Summary[] {
  expect(out.code, out.stderr).toBe(0);
  return JSON.parse(out.stdout).results;
}

function effects(path: string): string[] {
  return readFileSync(path, "utf8").split("\n").filter(Boolean);
}

let dir: string;
let cluster: PostgresCluster | undefined;
let count = 0;

/** One fresh store per test: a new SQLite file, or a new schema on the throwaway cluster. */
const stores = [
  {
    name: "SqliteStore",
    fresh: () => {
      const path = join(dir, `runs-${++count}.db`);
      return { env: { STORE: `sqlite:${path}` }, open: (): RunStore => new SqliteStore({ path }) };
    },
  },
  {
    name: "PostgresStore",
    fresh: () => {
      const url = cluster!.connectionString;
      const schema = `recover_${++count}`;
      return {
        env: { STORE: `postgres:${url}`, SCHEMA: schema },
        open: (): RunStore => new PostgresStore({ connectionString: url, schema }),
      };
    },
  },
];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "quiver-recover-"));
  cluster = await startPostgresCluster();
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe.each(stores)("taking over a dead driver on $name", (kind) => {
  /** Starts a run in a child process that SIGKILLs itself inside charge c1, after charging. */
  async function killedMidCharge(runId: string) {
    const store = kind.fresh();
    const log = join(dir, `${runId}-${count}.log`);
    writeFileSync(log, "");
    const env = { ...store.env, RUN_ID: runId, EFFECTS: log };
    const crashed = await child({ ...env, MODE: "start", KILL_IN: "c1" });
    expect(crashed.signal, crashed.stderr).toBe("SIGKILL");
    expect(effects(log)).toEqual(["note:n1", "charge:c1"]);
    return { store, log, env };
  }

  it("resumes a SIGKILLed run in a new process at once: completed calls never re-run, the started charge is interrupted", async () => {
    const { store, log, env } = await killedMidCharge("killed");
    // The store still lists the dead process's lease (30 s ttl), and says it is gone.
    const opened = store.open();
    try {
      const [summary] = await opened.listRuns({ status: "running" });
      expect(summary).toMatchObject({ runId: "killed", status: "running" });
      expect(summary!.leaseExpiresAt).toBeGreaterThan(Date.now() + 10_000);
      expect(ownerIsGone(summary!.leaseOwner!)).toBe(true);
    } finally {
      await opened.close();
    }

    const resumed = await child({ ...env, MODE: "resume" });
    const [result] = results(resumed);
    // Far below the 30 s lease ttl: it did not wait for the dead process's lease to expire.
    expect(resumed.ms).toBeLessThan(15_000);
    expect(result).toMatchObject({ stopReason: "completed", output: "done" });
    expect(result!.toolCalls).toEqual([
      { id: "n1", ok: true },
      { id: "c1", ok: false, kind: "interrupted" },
      { id: "c2", ok: true },
    ]);
    expect(effects(log)).toEqual(["note:n1", "charge:c1", "charge:c2"]);
  });

  it("lets a supervisor's Runner.recover pick the run up, and leaves finished runs alone", async () => {
    const { log, env } = await killedMidCharge("supervised");
    const finished = await child({
      ...env,
      RUN_ID: "finished",
      EFFECTS: join(dir, "finished.log"),
      MODE: "start",
    });
    expect(results(finished)[0]).toMatchObject({ stopReason: "completed" });
    writeFileSync(join(dir, "finished.log"), "");

    const recovered = await child({ ...env, MODE: "recover" });
    expect(recovered.ms).toBeLessThan(15_000);
    const [only, ...others] = results(recovered);
    expect(others).toEqual([]);
    expect(only).toMatchObject({ runId: "supervised", stopReason: "completed", output: "done" });
    expect(only!.toolCalls.map((c) => c.kind ?? "ok")).toEqual(["ok", "interrupted", "ok"]);
    expect(effects(log)).toEqual(["note:n1", "charge:c1", "charge:c2"]);
    expect(effects(join(dir, "finished.log"))).toEqual([]);

    // Nothing is left to recover.
    const again = await child({ ...env, MODE: "recover" });
    expect(results(again)).toEqual([]);
  });

  it("still refuses a second driver while the first is alive; waitForLeaseMs waits for it to finish", async () => {
    const store = kind.fresh();
    const log = join(dir, `live-${count}.log`);
    writeFileSync(log, "");
    const env = { ...store.env, RUN_ID: "live", EFFECTS: log };
    const first = child({ ...env, MODE: "start", CHARGE_MS: "1500" });
    const deadline = Date.now() + 30_000;
    while (!effects(log).includes("charge:c1") && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 25));
    expect(effects(log)).toContain("charge:c1");

    const opened = store.open();
    const agent = paymentsAgent({ effects: log });
    try {
      await expect(Runner.resume(agent, "live", { store: opened }).result()).rejects.toBeInstanceOf(
        LeaseConflict,
      );
      expect(await Runner.recover(opened, { payments: agent })).toEqual([]);

      const waitingSince = Date.now();
      const waited = await Runner.resume(agent, "live", { store: opened, waitForLeaseMs: 30_000 }).result();
      expect(waited).toMatchObject({ stopReason: "completed", output: "done" });
      // It waited for the first driver's second charge (1.5 s) instead of conflicting at once.
      expect(Date.now() - waitingSince).toBeGreaterThan(1_000);
      expect(results(await first)[0]).toMatchObject({ stopReason: "completed" });
      expect(effects(log)).toEqual(["note:n1", "charge:c1", "charge:c2"]);
    } finally {
      await first;
      await opened.close();
    }
  });
});
