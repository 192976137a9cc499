/**
 * Several plain events in one row of the log. A durable call appends about seven events at
 * once (the model's turn, the call's request and start, the last call's end), and each row
 * costs the database a heap tuple, an index entry and their WAL records: one row for the
 * seven cut a local server's work per append by a fifth (measured in docs/durability.md).
 *
 * A batch row's `seq` is the seq of its last event, so a read of the events after `afterSeq`
 * (`seq > afterSeq`) finds every row holding one, and the primary key still orders the log.
 * Its body is a JSON array of the events, in order, each as a plain (version 1) row holds it.
 * A Quiver that reads only versions 1 to 3 refuses such a row instead of misreading it.
 */
import { StoreError } from "./types.js";

/** The format version of a row holding several plain events. */
export const BATCH_ROW_VERSION = 4;

/** The version of a row holding one event whole (no payload references). */
const PLAIN = 1;

type Row = { seq: number; version: number; body: string };

/**
 * `rows` as one batch row when there are several and all are plain; otherwise unchanged (a row
 * that refers to payloads keeps a row of its own, as its version says how to read it).
 *
 * @example
 * batchRows([{ seq: 4, version: 1, body: a }, { seq: 5, version: 1, body: b }])
 * // → [{ seq: 5, version: 4, body: `[${a},${b}]` }]
 */
export function batchRows<R extends Row>(rows: readonly R[]): readonly Row[] {
  if (rows.length < 2) return rows;
  let body = "[";
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    if (row.version !== PLAIN) return rows;
    body += i === 0 ? row.body : `,${row.body}`;
  }
  return [{ seq: rows[rows.length - 1]!.seq, version: BATCH_ROW_VERSION, body: `${body}]` }];
}

/**
 * The events of a batch row as parsed JSON values (not yet checked as events), with the seq of
 * the first. `next` is the seq the read expects next, used to name the damage when the row
 * cannot be read at all.
 */
export function unbatch(runId: string, row: Row, next: number): { first: number; values: unknown[] } {
  let values: unknown;
  try {
    values = JSON.parse(row.body);
  } catch (cause) {
    throw new StoreError(
      `run ${runId}: event seq ${next} is damaged and cannot be decoded (its row holds the events up to seq ${row.seq}): ${(cause as Error).message}`,
      { runId, cause },
    );
  }
  if (!Array.isArray(values) || values.length === 0) {
    throw new StoreError(
      `run ${runId}: event seq ${next} is damaged: its row (events up to seq ${row.seq}) is not a list of events`,
      { runId },
    );
  }
  return { first: row.seq - values.length + 1, values };
}
