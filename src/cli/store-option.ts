import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { UserError } from "../errors.js";
import type { RunStore } from "../store/types.js";

/** Where commands that read stored runs look when `--store` is not given. */
export const DEFAULT_STORE = "sqlite:.quiver/quiver.db";

/** A store the command opened, with the spec to repeat in follow-up commands. */
export type OpenedStore = { store: RunStore; spec: string; isDefault: boolean };

/**
 * Opens `--store SPEC` (or `QUIVER_STORE`, or `fallback`; `null`: no store unless asked): `sqlite:PATH`, `postgres://…` /
 * `postgresql://…`, or `memory` (this process only). The drivers load only here.
 *
 * @example
 * const opened = await openStore("sqlite:.quiver/quiver.db");
 */
export async function openStore(
  spec: string | undefined,
  fallback: string | null = DEFAULT_STORE,
): Promise<OpenedStore | undefined> {
  const given = spec ?? process.env.QUIVER_STORE;
  const chosen = given ?? fallback;
  if (chosen === null) return undefined;
  const store = await storeFor(chosen);
  return { store, spec: chosen, isDefault: given === undefined };
}

/**
 * `openStore` for commands about runs already stored (`quiver runs …`, `quiver sessions …`): a
 * SQLite file that is not there is an error naming the path, never a new empty store (and its
 * folder) that reads as "no runs" — what a mistyped `--store`, a stale `QUIVER_STORE` or the
 * wrong directory would otherwise look like.
 *
 * @example
 * const opened = await openExistingStore(undefined); // UserError unless .quiver/quiver.db exists
 */
export async function openExistingStore(spec: string | undefined): Promise<OpenedStore> {
  const given = spec ?? process.env.QUIVER_STORE;
  const chosen = given ?? DEFAULT_STORE;
  const path = sqlitePath(chosen);
  if (path !== undefined && !existsSync(path)) {
    const from =
      spec !== undefined
        ? `--store ${shellQuote(chosen)}`
        : given !== undefined
          ? `QUIVER_STORE=${shellQuote(chosen)}`
          : `the default store, ${chosen}, in ${process.cwd()}`;
    throw new UserError(
      `no store at ${path} (from ${from}): nothing has been stored there. ` +
        "Check the path, or run this in the directory whose runs you mean",
    );
  }
  return (await openStore(spec))!;
}

/** The absolute file of a `sqlite:PATH` spec; undefined for any other kind of store. */
function sqlitePath(spec: string): string | undefined {
  const sqlite = /^sqlite:(?:\/\/)?(.+)$/i.exec(spec);
  return sqlite ? resolve(sqlite[1]!) : undefined;
}

/**
 * `openStore`, except that when no store was asked for (no `--store`, no `QUIVER_STORE`) and
 * the default one cannot open — better-sqlite3 is an optional package — the runs live in
 * memory, and `note` says so. `quiver chat` and `quiver serve` start this way.
 *
 * @example
 * const opened = await openStoreOrMemory(undefined, (text) => console.error(text));
 */
export async function openStoreOrMemory(
  spec: string | undefined,
  note: (text: string) => void,
): Promise<OpenedStore> {
  try {
    return (await openStore(spec))!;
  } catch (error) {
    if (spec !== undefined || process.env.QUIVER_STORE !== undefined) throw error;
    note(`not storing runs: ${error instanceof Error ? error.message : String(error)}`);
    return (await openStore("memory"))!;
  }
}

async function storeFor(spec: string): Promise<RunStore> {
  const { MemoryStore, PostgresStore, SqliteStore } = await import("../store/index.js");
  if (spec === "memory") return new MemoryStore();
  if (/^postgres(ql)?:\/\//i.test(spec)) return new PostgresStore({ connectionString: spec });
  const path = sqlitePath(spec);
  if (path !== undefined) return new SqliteStore({ path });
  throw new UserError(
    `--store "${spec}" is not a store: use sqlite:PATH (e.g. sqlite:.quiver/quiver.db), postgres://user@host/db, or memory`,
  );
}

/** The `--store …` words to repeat in a follow-up command (none when the default was used). */
export function storeArgument(opened: OpenedStore | undefined): string {
  if (!opened || opened.isDefault) return "";
  return ` --store ${shellQuote(opened.spec)}`;
}

/** Quotes a word for a POSIX shell when it needs it. */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}
