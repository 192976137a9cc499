import { createHash } from "node:crypto";
import type { RunContext } from "../contract/run-context.js";
import type { Message } from "../model/types.js";

/**
 * What a file tool puts in its result's `details` so the read ledger can be rebuilt from the
 * transcript: the real root, the path under it and the sha256 of the whole file as the tool saw it.
 */
export type FileFact = { root: string; path: string; sha256: string };

/**
 * The largest file the ledger hashes, and so the largest existing file `write_file` and
 * `edit_file` replace (an edit holds the file in memory several times over). `read_file` reads
 * a file up to this size to its end through SHA-256 (in bounded memory), so the run can edit it
 * later; a larger file is read only as far as the lines it returns, and is not hashed.
 */
export const MAX_EDIT_BYTES = 50 * 1024 * 1024;

/** Tools whose results say "this run has seen this content". */
const LEDGER_TOOLS = new Set(["read_file", "write_file", "edit_file"]);
/** Runs whose ledger is kept in memory; an evicted run's ledger is rebuilt from its transcript. */
const MAX_RUNS = 256;

export function sha256(data: Uint8Array | string): string {
  return createHash("sha256").update(data).digest("hex");
}

/**
 * Which files each run has read or written, and the content hash it saw. A write or an edit of
 * an existing file is allowed only if the hash still matches, so a file changed behind the
 * model's back (by a person, a formatter that really changed it, another process) is never
 * overwritten blind — while one merely touched is.
 *
 * State lives in the run's transcript: every read/write result carries its `FileFact` in
 * `details`, so a run resumed in a fresh process rebuilds its ledger from the log. The map here
 * only adds what the current turn did before its results reach the transcript.
 */
export class ReadLedger {
  readonly #runs = new Map<string, Map<string, string>>();

  /** The hash this run last saw for `path`, or `undefined` if it never read nor wrote it. */
  seen(ctx: RunContext, root: string, path: string): string | undefined {
    return this.#forRun(ctx, root).get(path);
  }

  record(ctx: RunContext, fact: FileFact): void {
    this.#forRun(ctx, fact.root).set(fact.path, fact.sha256);
  }

  #forRun(ctx: RunContext, root: string): Map<string, string> {
    let files = this.#runs.get(ctx.runId);
    if (files) {
      // Most recently used last, for eviction.
      this.#runs.delete(ctx.runId);
      this.#runs.set(ctx.runId, files);
      return files;
    }
    files = rebuild(ctx.transcript, root);
    this.#runs.set(ctx.runId, files);
    if (this.#runs.size > MAX_RUNS) this.#runs.delete(this.#runs.keys().next().value!);
    return files;
  }
}

/** The ledger a transcript implies: the last fact per path, from successful file-tool results. */
function rebuild(transcript: readonly Message[], root: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const message of transcript) {
    if (message.role !== "tool" || message.isError || !LEDGER_TOOLS.has(message.name)) continue;
    const fact = message.details as Partial<FileFact> | undefined;
    if (fact && fact.root === root && typeof fact.path === "string" && typeof fact.sha256 === "string") {
      files.set(fact.path, fact.sha256);
    }
  }
  return files;
}
