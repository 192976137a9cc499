/**
 * A throwaway PostgreSQL cluster for the store tests: `initdb` + `pg_ctl` in a temp dir,
 * listening on 127.0.0.1 on a free port with its unix socket in the same dir, stopped and
 * deleted afterwards. initdb refuses to run as root, so under root (as in CI) the server runs
 * as the `postgres` OS user, which owns the temp dir.
 */
import { execFile, execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export type PostgresCluster = {
  connectionString: string;
  stop(): Promise<void>;
  /** Freezes the server (SIGSTOP to the postmaster and every backend): connections stay open, nothing answers. */
  pause(): void;
  /** Thaws a paused server (SIGCONT). */
  unpause(): void;
  /** `pg_ctl stop -m immediate`: every connection drops at once, as in a crash. */
  crash(): Promise<void>;
  /** Starts the server again on the same data and port after `crash()`. */
  restart(): Promise<void>;
};

/**
 * `durable`: commits are on disk (the WAL) when acknowledged, as on a real server, so a
 * `crash()` loses nothing that was committed. Without it commits are acknowledged before the
 * WAL is written (faster tests that never crash the server). `fsync`: the server also flushes
 * to the disk (PostgreSQL's defaults), as a production server does; off unless asked, since
 * the tests only crash the server, never the machine.
 */
export async function startPostgresCluster(
  options: { durable?: boolean; fsync?: boolean } = {},
): Promise<PostgresCluster> {
  const bin = findBinDir();
  const dir = mkdtempSync(join(tmpdir(), "quiver-pg-"));
  const data = join(dir, "data");
  const asUser = serverUser(dir);
  const command = (program: string, args: string[]): [string, string[]] =>
    asUser === undefined
      ? [join(bin, program), args]
      : ["runuser", ["-u", asUser, "--", join(bin, program), ...args]];
  const pg = (program: string, args: string[]) => run(...command(program, args), { timeout: 60_000 });
  try {
    await pg("initdb", ["-D", data, "-U", "quiver", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"]);
    let lastError: unknown;
    // The free port is found before the server binds it, so another process may take it in
    // between: try a few.
    for (let attempt = 0; attempt < 3; attempt++) {
      const port = await freePort();
      // fsync=off is safe for a crash of the server (the OS keeps what it wrote), not of the machine.
      const settings = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir}${options.fsync ? "" : " -c fsync=off -c full_page_writes=off"}${options.durable ? "" : " -c synchronous_commit=off"}`;
      try {
        const startServer = () =>
          pg("pg_ctl", [
            "-D",
            data,
            "-l",
            join(dir, "server.log"),
            "-o",
            settings,
            "-w",
            "-t",
            "30",
            "start",
          ]);
        await startServer();
        // The server outlives its starter: if the test process exits without calling stop()
        // (a crash, a timeout), stop it on the way out rather than leave it running.
        const stopNow = () => {
          try {
            execFileSync(...command("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]), {
              stdio: "ignore",
              timeout: 10_000,
            });
          } catch {}
          rmSync(dir, { recursive: true, force: true });
        };
        process.once("exit", stopNow);
        return {
          connectionString: `postgresql://quiver@127.0.0.1:${port}/postgres`,
          stop: async () => {
            process.off("exit", stopNow);
            signalServer(data, "SIGCONT");
            await pg("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]).catch(() => {});
            rmSync(dir, { recursive: true, force: true });
          },
          pause: () => signalServer(data, "SIGSTOP"),
          unpause: () => signalServer(data, "SIGCONT"),
          crash: async () => {
            await pg("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
          },
          restart: async () => {
            await startServer();
          },
        };
      } catch (error) {
        lastError = error;
      }
    }
    throw new Error(`could not start PostgreSQL: ${String(lastError)}\n${readLog(dir)}`);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** pg_config's bindir, else the newest Debian /usr/lib/postgresql/<version>/bin, else PATH. */
function findBinDir(): string {
  const candidates: string[] = [];
  try {
    candidates.push(execFileSync("pg_config", ["--bindir"], { encoding: "utf8" }).trim());
  } catch {}
  try {
    const versions = readdirSync("/usr/lib/postgresql").sort((a, b) => Number(b) - Number(a));
    candidates.push(...versions.map((v) => `/usr/lib/postgresql/${v}/bin`));
  } catch {}
  candidates.push(...(process.env.PATH ?? "").split(":").filter(Boolean));
  const found = candidates.find((dir) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl")));
  if (found === undefined) {
    throw new Error("PostgreSQL's initdb and pg_ctl were not found: install Debian's `postgresql` package");
  }
  return found;
}

/** Under root, the OS user that runs the server (given the temp dir); otherwise undefined. */
function serverUser(dir: string): string | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const user = process.env.QUIVER_TEST_PG_USER ?? "postgres";
  let ids: string[];
  try {
    ids = execFileSync("id", [user], { encoding: "utf8" }).match(/\d+/g) ?? [];
  } catch {
    throw new Error(
      `running as root, PostgreSQL needs a non-root OS user "${user}" (create it, or set QUIVER_TEST_PG_USER)`,
    );
  }
  chownSync(dir, Number(ids[0]), Number(ids[1]));
  return user;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}

function readLog(dir: string): string {
  try {
    return readFileSync(join(dir, "server.log"), "utf8").slice(-2000);
  } catch {
    return "";
  }
}

/** Sends `signal` to the postmaster and all its children (the backends serving connections). */
function signalServer(data: string, signal: NodeJS.Signals): void {
  let postmaster: number;
  try {
    postmaster = Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]);
  } catch {
    return; // not running
  }
  let listed = "";
  try {
    listed = execFileSync("ps", ["-o", "pid=", "--ppid", String(postmaster)], { encoding: "utf8" });
  } catch {} // ps exits 1 when there are no children
  const children = listed
    .split("\n")
    .map((line) => Number(line.trim()))
    .filter((pid) => pid > 0);
  // The postmaster first when freezing (no new backends), last when thawing.
  const order = signal === "SIGSTOP" ? [postmaster, ...children] : [...children, postmaster];
  for (const pid of order) {
    try {
      process.kill(pid, signal);
    } catch {}
  }
}
