/**
 * W1s durable: 20 turns × 1 `add` call (then a final answer) with a store, µs per call, next to
 * the same runs with no store, all interleaved in one child process. Every run keeps the crash
 * guarantees: its lease, and each `tool_call_started` committed before the tool runs.
 *
 * - SqliteStore with `synchronous: "normal"` (the default: survives a process crash) and
 *   `"full"` (also survives power loss: an fsync per commit), one run at a time;
 * - 100 runs at once on one SqliteStore (their appends share commits), per call;
 * - PostgresStore on a throwaway local server, one run at a time and 100 at once, when
 *   `initdb` is installed (the server runs with fsync off, so this measures round trips and
 *   the database's work, not the disk);
 * - the machine's floor, interleaved with the rest: a bare better-sqlite3 commit of one small
 *   row (`BEGIN IMMEDIATE`, one INSERT, `COMMIT`, same file settings), µs per commit, so that a
 *   SqliteStore number reads as "N commits' worth" on whatever machine runs it;
 * - what a call writes, counted from the WAL of one more run (after the timing): commits per
 *   call and pages (WAL frames) per commit;
 * - before/after in one run: `BENCH_DURABLE_BEFORE=/path/to/other/checkout` (built: its
 *   `dist/`) adds that Quiver's SqliteStore rows, interleaved with these, and their ratio.
 *
 *   git worktree add /tmp/before <commit> && ln -s "$PWD/node_modules" /tmp/before/
 *   (cd /tmp/before && npx tsc -p tsconfig.build.json)
 *   npm run build && BENCH_DURABLE_BEFORE=/tmp/before BENCH_ONLY=durable npx tsx bench/index.ts
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { connect, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import {
  compare,
  fmt,
  inChild,
  loadStores as loadBuiltStores,
  loadQuiver,
  type Row,
  ratio,
  root,
} from "../harness.js";
import { quiverAdd, script } from "./baseline.js";

const TURNS = 20;
const CONCURRENT_RUNS = 100;
const TARGET_US = 150;
/** Runs per sample over the slow link (each call there costs milliseconds). */
const LINK_RUNS = 2;
/** The link's delay each way, in ms: a database in another zone of the same region. */
const LINK_DELAY_MS = 1;

type DurableArgs = {
  runsPerSample: number;
  samples: number;
  /** Another checkout whose built `dist/` is measured beside this one. */
  before?: string;
  postgres?: string;
  /** A second server with PostgreSQL's default flushing (fsync on), for the concurrent runs. */
  postgresFsync?: string;
};

/**
 * Median µs per call of each contender (absent when not measured); `floor` is µs per bare
 * commit; `<name>Commits` and `<name>Frames` are commits per call and WAL frames per commit.
 */
type DurableResult = Record<string, number>;

type BareDatabase = typeof import("better-sqlite3");

/** better-sqlite3 as the checkout has it (the compiled workload runs from elsewhere). */
function betterSqlite(): BareDatabase {
  return createRequire(resolve(root, "package.json"))("better-sqlite3");
}

/**
 * The floor: `count` commits of one small row each, as bare as better-sqlite3 goes (prepared
 * statements, no wrapper), in a WAL file with SqliteStore's settings.
 */
function bareCommits(Database: BareDatabase, path: string, synchronous: "NORMAL" | "FULL") {
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma(`synchronous = ${synchronous}`);
  db.exec("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)");
  const begin = db.prepare("BEGIN IMMEDIATE");
  const insert = db.prepare("INSERT INTO t (v) VALUES (?)");
  const commit = db.prepare("COMMIT");
  return {
    commits: async (count: number) => {
      for (let i = 0; i < count; i++) {
        begin.run();
        insert.run("a small row of about forty characters....");
        commit.run();
      }
    },
    close: async () => void db.close(),
  };
}

/**
 * What one more run writes: the store's WAL is checkpointed and emptied first (from another
 * connection), then read back frame by frame after the run. A frame is one page written;
 * a frame whose header carries the database size ends a commit.
 */
async function walWrites(Database: BareDatabase, path: string, run: () => Promise<unknown>, calls: number) {
  const side = new Database(path);
  try {
    side.pragma("wal_checkpoint(TRUNCATE)");
    await run();
    const wal = readFileSync(`${path}-wal`);
    const pageSize = wal.readUInt32BE(8);
    let frames = 0;
    let commits = 0;
    for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize) {
      // Frames left from before the WAL was last reset carry an old salt.
      if (
        wal.readUInt32BE(at + 8) !== wal.readUInt32BE(16) ||
        wal.readUInt32BE(at + 12) !== wal.readUInt32BE(20)
      )
        break;
      frames++;
      if (wal.readUInt32BE(at + 4) !== 0) commits++;
    }
    return { commitsPerCall: commits / calls, framesPerCommit: frames / commits };
  } finally {
    side.close();
  }
}

type Pg = typeof import("pg");

/** node-postgres as the checkout has it. */
function nodePostgres(): Pg {
  return createRequire(resolve(root, "package.json"))("pg");
}

/**
 * Postgres's floor on this machine: `count` commits of one small row each through node-postgres
 * on one connection (BEGIN, one INSERT, COMMIT: three round trips), in a table of its own.
 */
async function bareTransactions(pg: Pg, connectionString: string) {
  const client = new pg.Client({ connectionString });
  await client.connect();
  await client.query("CREATE TABLE IF NOT EXISTS bench_floor (k serial PRIMARY KEY, v text NOT NULL)");
  return {
    commits: async (count: number) => {
      for (let i = 0; i < count; i++) {
        await client.query("BEGIN");
        await client.query("INSERT INTO bench_floor (v) VALUES ($1)", [
          "a small row of about forty characters....",
        ]);
        await client.query("COMMIT");
      }
    },
    close: () => client.end(),
  };
}

/** A pool whose statements are counted (each is one round trip to the server). */
function countingPool(pg: Pg, connectionString: string) {
  const pool = new pg.Pool({ connectionString });
  const counter = { statements: 0 };
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = (...args: unknown[]) => {
      counter.statements++;
      return query(...args);
    };
  });
  return { pool, counter };
}

/**
 * A TCP proxy on 127.0.0.1 in front of the server at `connectionString` that holds every chunk
 * `delayMs` in each direction (timers of one delay fire in order, so the bytes stay in order):
 * a database across a network, where each round trip costs its latency.
 */
async function slowLink(connectionString: string, delayMs: number) {
  const target = new URL(connectionString);
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    const relay = (from: typeof client, to: typeof client) => {
      from.on("data", (chunk) => {
        setTimeout(() => to.write(chunk), delayMs);
      });
      from.on("close", () => setTimeout(() => to.destroy(), delayMs));
      from.on("error", () => {});
    };
    relay(client, upstream);
    relay(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    connectionString: `postgresql://${target.username}@127.0.0.1:${port}${target.pathname}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

type Quiver = typeof import("quiver-agents");
type Stores = typeof import("quiver-agents/store");

async function loadStores(checkout?: string): Promise<Stores> {
  if (checkout === undefined) return loadBuiltStores();
  return import(pathToFileURL(resolve(checkout, "dist/store/index.js")).href);
}

async function loadFrom(checkout: string): Promise<Quiver> {
  return import(pathToFileURL(resolve(checkout, "dist/index.js")).href);
}

/** A function that plays `runs` runs (one after another, or all at once), with `store` or none. */
function player(quiver: Quiver, store: import("quiver-agents/store").RunStore | undefined) {
  const { Agent, Runner, ScriptedModel, tool } = quiver;
  const add = quiverAdd(tool);
  const options = { maxTurns: TURNS + 1, ...(store && { store }) };
  const check = (result: { stopReason: string; toolCalls: readonly { ok: boolean }[] }) => {
    if (result.stopReason !== "completed" || result.toolCalls.filter((c) => c.ok).length !== TURNS) {
      throw new Error(`a durable run did not complete: ${result.stopReason}`);
    }
  };
  return {
    sequential: async (runs: number) => {
      const model = new ScriptedModel(script({ turns: TURNS, runs }), { record: false });
      const agent = new Agent({ name: "bench", model, tools: [add] });
      for (let i = 0; i < runs; i++) check(await Runner.run(agent, "go", options));
    },
    concurrent: async (runs: number) => {
      const one = script({ turns: TURNS });
      const results = await Promise.all(
        Array.from({ length: runs }, () => {
          const model = new ScriptedModel(one, { record: false });
          return Runner.run(new Agent({ name: "bench", model, tools: [add] }), "go", options);
        }),
      );
      results.forEach(check);
    },
  };
}

/** Child side: every contender interleaved, medians of µs per call. */
export async function durable({
  runsPerSample,
  samples,
  before,
  postgres,
  postgresFsync,
}: DurableArgs): Promise<DurableResult> {
  const dir = mkdtempSync(join(tmpdir(), "quiver-bench-durable-"));
  const opened: Array<{ close(): Promise<void> }> = [];
  try {
    const quiver = await loadQuiver();
    const stores = await loadStores();
    const sqlite = (name: string, synchronous: "normal" | "full", from: Stores = stores) => {
      const store = new from.SqliteStore({ path: join(dir, `${name}.db`), synchronous });
      opened.push(store);
      return store;
    };
    const none = player(quiver, undefined);
    const normal = player(quiver, sqlite("normal", "normal"));
    const full = player(quiver, sqlite("full", "full"));
    const concurrentNormal = player(quiver, sqlite("concurrent-normal", "normal"));
    const concurrentFull = player(quiver, sqlite("concurrent-full", "full"));
    const Database = betterSqlite();
    const floor = bareCommits(Database, join(dir, "floor.db"), "NORMAL");
    opened.push(floor);
    const contenders: Record<string, () => Promise<unknown>> = {
      memory: () => none.sequential(runsPerSample),
      floor: () => floor.commits(runsPerSample * TURNS),
      sqliteNormal: () => normal.sequential(runsPerSample),
      sqliteFull: () => full.sequential(runsPerSample),
      concurrentNormal: () => concurrentNormal.concurrent(CONCURRENT_RUNS),
      concurrentFull: () => concurrentFull.concurrent(CONCURRENT_RUNS),
    };
    const callsPer: Record<string, number> = {
      memory: runsPerSample * TURNS,
      floor: runsPerSample * TURNS,
      sqliteNormal: runsPerSample * TURNS,
      sqliteFull: runsPerSample * TURNS,
      concurrentNormal: CONCURRENT_RUNS * TURNS,
      concurrentFull: CONCURRENT_RUNS * TURNS,
    };
    const writes: Array<() => Promise<Record<string, number>>> = [
      async () => {
        const w = await walWrites(Database, join(dir, "normal.db"), () => normal.sequential(1), TURNS);
        return { sqliteNormalCommits: w.commitsPerCall, sqliteNormalFrames: w.framesPerCommit };
      },
    ];
    if (before !== undefined) {
      const old = await loadFrom(before);
      const oldStores = await loadStores(before);
      const beforeNormal = player(old, sqlite("before-normal", "normal", oldStores));
      writes.push(async () => {
        const w = await walWrites(
          Database,
          join(dir, "before-normal.db"),
          () => beforeNormal.sequential(1),
          TURNS,
        );
        return { beforeNormalCommits: w.commitsPerCall, beforeNormalFrames: w.framesPerCommit };
      });
      const beforeFull = player(old, sqlite("before-full", "full", oldStores));
      const beforeConcurrent = player(old, sqlite("before-concurrent", "normal", oldStores));
      contenders.beforeNormal = () => beforeNormal.sequential(runsPerSample);
      contenders.beforeFull = () => beforeFull.sequential(runsPerSample);
      contenders.beforeConcurrentNormal = () => beforeConcurrent.concurrent(CONCURRENT_RUNS);
      callsPer.beforeNormal = runsPerSample * TURNS;
      callsPer.beforeFull = runsPerSample * TURNS;
      callsPer.beforeConcurrentNormal = CONCURRENT_RUNS * TURNS;
    }
    if (postgres !== undefined) {
      const pg = new stores.PostgresStore({ connectionString: postgres, schema: "bench_durable" });
      opened.push(pg);
      const onPostgres = player(quiver, pg);
      const floorPg = await bareTransactions(nodePostgres(), postgres);
      opened.push(floorPg);
      contenders.postgresFloor = () => floorPg.commits(runsPerSample * TURNS);
      callsPer.postgresFloor = runsPerSample * TURNS;
      writes.push(async () => {
        // Statements per call, counted over one more run on a pool of its own (first appends included).
        const { pool, counter } = countingPool(nodePostgres(), postgres);
        const counted = new stores.PostgresStore({ pool, schema: "bench_durable_counted" });
        const onCounted = player(quiver, counted);
        await onCounted.sequential(1);
        counter.statements = 0;
        await onCounted.sequential(1);
        const postgresStatements = counter.statements / TURNS;
        await counted.close();
        await pool.end();
        return { postgresStatements };
      });
      contenders.postgres = () => onPostgres.sequential(runsPerSample);
      contenders.concurrentPostgres = () => onPostgres.concurrent(CONCURRENT_RUNS);
      callsPer.postgres = runsPerSample * TURNS;
      callsPer.concurrentPostgres = CONCURRENT_RUNS * TURNS;
      if (before !== undefined) {
        const oldStores = await loadStores(before);
        const oldPg = new oldStores.PostgresStore({
          connectionString: postgres,
          schema: "bench_durable_before",
        });
        opened.push(oldPg);
        const onOldPostgres = player(await loadFrom(before), oldPg);
        contenders.beforePostgres = () => onOldPostgres.sequential(runsPerSample);
        contenders.beforeConcurrentPostgres = () => onOldPostgres.concurrent(CONCURRENT_RUNS);
        callsPer.beforePostgres = runsPerSample * TURNS;
        callsPer.beforeConcurrentPostgres = CONCURRENT_RUNS * TURNS;
      }
    }
    if (postgresFsync !== undefined) {
      // Many runs at once against a server that flushes each commit: where appends that
      // serialise on something (PostgreSQL's notify lock, held through the flush) show.
      const onDisk = new stores.PostgresStore({ connectionString: postgresFsync, schema: "bench_fsync" });
      opened.push(onDisk);
      const onDiskRuns = player(quiver, onDisk);
      contenders.concurrentPostgresFsync = () => onDiskRuns.concurrent(CONCURRENT_RUNS);
      callsPer.concurrentPostgresFsync = CONCURRENT_RUNS * TURNS;
      if (before !== undefined) {
        const oldOnDisk = new (await loadStores(before)).PostgresStore({
          connectionString: postgresFsync,
          schema: "bench_fsync_before",
        });
        opened.push(oldOnDisk);
        const oldOnDiskRuns = player(await loadFrom(before), oldOnDisk);
        contenders.beforeConcurrentPostgresFsync = () => oldOnDiskRuns.concurrent(CONCURRENT_RUNS);
        callsPer.beforeConcurrentPostgresFsync = CONCURRENT_RUNS * TURNS;
      }
    }
    const linked: Record<string, () => Promise<unknown>> = {};
    if (postgres !== undefined) {
      // The same runs over a slow link, where what a round trip saved is worth on a network;
      // compared on their own, so that their idle waits do not come before a local contender.
      const link = await slowLink(postgres, LINK_DELAY_MS);
      const overLink = new stores.PostgresStore({
        connectionString: link.connectionString,
        schema: "bench_durable_link",
      });
      const floorOverLink = await bareTransactions(nodePostgres(), link.connectionString);
      opened.push(overLink, floorOverLink, link);
      const onLink = player(quiver, overLink);
      linked.postgresLink = () => onLink.sequential(LINK_RUNS);
      linked.postgresLinkFloor = () => floorOverLink.commits(LINK_RUNS * TURNS);
      callsPer.postgresLink = LINK_RUNS * TURNS;
      callsPer.postgresLinkFloor = LINK_RUNS * TURNS;
    }
    const ms = {
      ...(await compare(contenders, { samples, warmups: 2 })),
      ...(await compare(linked, { samples, warmups: 2 })),
    };
    const result: DurableResult = Object.fromEntries(
      Object.entries(ms).map(([name, sampleMs]) => [name, (sampleMs * 1000) / callsPer[name]!]),
    );
    for (const count of writes) Object.assign(result, await count());
    return result;
  } finally {
    for (const store of opened) await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Parent side: starts a throwaway PostgreSQL when one can be started, runs the child, makes rows. */
export async function rows(): Promise<Row[]> {
  const before = process.env.BENCH_DURABLE_BEFORE;
  let cluster: { connectionString: string; stop(): Promise<void> } | undefined;
  let onDisk: { connectionString: string; stop(): Promise<void> } | undefined;
  try {
    const { startPostgresCluster } = await import("../../test/store/postgres-cluster.js");
    cluster = await startPostgresCluster({ durable: true });
    onDisk = await startPostgresCluster({ durable: true, fsync: true });
  } catch (error) {
    console.error(`bench: durable: no PostgreSQL (${(error as Error).message.split("\n")[0]}); SQLite only`);
  }
  try {
    const r = await inChild<DurableResult>("workloads/durable.ts", "durable", {
      runsPerSample: 20,
      samples: 9,
      ...(before !== undefined && { before }),
      ...(cluster && { postgres: cluster.connectionString }),
      ...(onDisk && { postgresFsync: onDisk.connectionString }),
    });
    return toRows(r);
  } finally {
    await cluster?.stop();
    await onDisk?.stop();
  }
}

function toRows(r: DurableResult): Row[] {
  const memory = r.memory!;
  const perCall = (name: string) => fmt(r[name]!);
  const commitsWorth = (name: string) => `${fmt(r[name]! / r.floor!)} bare commits' worth`;
  const writes = (name: string) =>
    `${fmt(r[`${name}Commits`]!, 2)} commits per call, ${fmt(r[`${name}Frames`]!, 2)} pages per commit`;
  const out: Row[] = [
    {
      workload: "W1s durable: the machine's floor",
      measure: 'µs per commit: bare better-sqlite3, one small row per BEGIN IMMEDIATE…COMMIT (WAL, "normal")',
      quiver: fmt(r.floor!),
    },
    {
      workload: `W1s durable: SqliteStore, ${TURNS} turns × 1 call`,
      measure: 'what a call writes (synchronous "normal"; counted from the WAL of one run)',
      quiver: writes("sqliteNormal"),
      ...(r.beforeNormalCommits !== undefined && { baseline: `before: ${writes("beforeNormal")}` }),
    },
    {
      workload: `W1s durable: SqliteStore, ${TURNS} turns × 1 call`,
      measure: 'µs per call (synchronous "normal") in bare commits of this machine',
      quiver: commitsWorth("sqliteNormal"),
      baseline: `floor ${fmt(r.floor!)} µs`,
    },
    {
      workload: `W1s durable: SqliteStore, ${TURNS} turns × 1 call`,
      measure: 'µs per call (synchronous "normal", the default; baseline: no store)',
      quiver: perCall("sqliteNormal"),
      baseline: fmt(memory),
      ratio: ratio(r.sqliteNormal! / memory),
      target: `≤ ${TARGET_US} µs`,
      met: r.sqliteNormal! <= TARGET_US,
    },
    {
      workload: `W1s durable: SqliteStore, ${TURNS} turns × 1 call`,
      measure: 'µs per call (synchronous "full": an fsync per commit)',
      quiver: perCall("sqliteFull"),
      baseline: fmt(memory),
      ratio: ratio(r.sqliteFull! / memory),
    },
    {
      workload: `W1s durable: ${CONCURRENT_RUNS} runs at once, SqliteStore`,
      measure: 'µs per call, "normal" (shared commits)',
      quiver: perCall("concurrentNormal"),
      baseline: perCall("sqliteNormal"),
      ratio: `${ratio(r.concurrentNormal! / r.sqliteNormal!)} of one run at a time`,
    },
    {
      workload: `W1s durable: ${CONCURRENT_RUNS} runs at once, SqliteStore`,
      measure: 'µs per call, "full" (shared fsyncs)',
      quiver: perCall("concurrentFull"),
      baseline: perCall("sqliteFull"),
      ratio: `${ratio(r.concurrentFull! / r.sqliteFull!)} of one run at a time`,
    },
  ];
  if (r.beforeNormal !== undefined) {
    for (const [now, old, label] of [
      ["sqliteNormal", "beforeNormal", '"normal", one run at a time'],
      ["sqliteFull", "beforeFull", '"full", one run at a time'],
      ["concurrentNormal", "beforeConcurrentNormal", `"normal", ${CONCURRENT_RUNS} runs at once`],
      ["postgres", "beforePostgres", "PostgresStore, one run at a time"],
      ["concurrentPostgres", "beforeConcurrentPostgres", `PostgresStore, ${CONCURRENT_RUNS} runs at once`],
      [
        "concurrentPostgresFsync",
        "beforeConcurrentPostgresFsync",
        `PostgresStore, ${CONCURRENT_RUNS} runs at once, server with fsync on`,
      ],
    ] as const) {
      if (r[now] === undefined || r[old] === undefined) continue;
      out.push({
        workload: "W1s durable: this Quiver vs BENCH_DURABLE_BEFORE",
        measure: `µs per call, ${label.startsWith("Postgres") ? "" : "SqliteStore "}${label} (baseline: before)`,
        quiver: perCall(now),
        baseline: perCall(old),
        ratio: ratio(r[now]! / r[old]!),
      });
    }
  }
  if (r.postgres !== undefined) {
    out.push(
      {
        workload: "W1s durable: Postgres's floor",
        measure:
          "µs per commit: bare node-postgres, one small row per BEGIN, INSERT, COMMIT (three round trips; local server, fsync off)",
        quiver: fmt(r.postgresFloor!),
      },
      {
        workload: `W1s durable: PostgresStore, ${TURNS} turns × 1 call`,
        measure: `µs per call in bare Postgres commits (statements per call, each a round trip: ${fmt(r.postgresStatements!, 2)}; baseline: the floor, interleaved)`,
        quiver: perCall("postgres"),
        baseline: fmt(r.postgresFloor!),
        ratio: ratio(r.postgres / r.postgresFloor!),
        target: "≤ 2× the floor",
        met: r.postgres <= 2 * r.postgresFloor!,
      },
      {
        workload: `W1s durable: PostgresStore, ${TURNS} turns × 1 call`,
        measure: "µs per call (local server, fsync off; baseline: no store)",
        quiver: perCall("postgres"),
        baseline: fmt(memory),
        ratio: ratio(r.postgres / memory),
      },
      {
        workload: `W1s durable: PostgresStore, ${TURNS} turns × 1 call, over a link`,
        measure: `µs per call through a proxy holding each packet ${LINK_DELAY_MS} ms each way (baseline: the floor through it, interleaved)`,
        quiver: perCall("postgresLink"),
        baseline: perCall("postgresLinkFloor"),
        ratio: ratio(r.postgresLink! / r.postgresLinkFloor!),
      },
      {
        workload: `W1s durable: ${CONCURRENT_RUNS} runs at once, PostgresStore`,
        measure: "µs per call (pool of 10 connections)",
        quiver: perCall("concurrentPostgres"),
        baseline: perCall("postgres"),
        ratio: `${ratio(r.concurrentPostgres! / r.postgres)} of one run at a time`,
      },
    );
  }
  if (r.concurrentPostgresFsync !== undefined) {
    out.push({
      workload: `W1s durable: ${CONCURRENT_RUNS} runs at once, PostgresStore, server with fsync on`,
      measure:
        "µs per call (pool of 10 connections; PostgreSQL's default flushing; baseline: the same with fsync off)",
      quiver: perCall("concurrentPostgresFsync"),
      ...(r.concurrentPostgres !== undefined && {
        baseline: perCall("concurrentPostgres"),
        ratio: ratio(r.concurrentPostgresFsync / r.concurrentPostgres),
      }),
    });
  }
  return out;
}
