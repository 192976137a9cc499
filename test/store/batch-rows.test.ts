import { describe, expect, it } from "vitest";
import { BATCH_ROW_VERSION, batchRows } from "../../src/store/batch-rows.js";
import { decodeEvents, failureKindOf } from "../../src/store/log-rules.js";
import { StoreError } from "../../src/store/types.js";

const event = (seq: number, extra: Record<string, unknown> = {}) => ({
  type: "text_delta",
  delta: `delta ${seq}`,
  runId: "r",
  seq,
  at: 1_000 + seq,
  agent: "assistant",
  ...extra,
});
const plain = (seq: number) => ({ seq, version: 1, body: JSON.stringify(event(seq)) });
/** The one row an append of events `from` … `to` is stored as. */
const batch = (from: number, to: number) => {
  const rows = [];
  for (let seq = from; seq <= to; seq++) rows.push(plain(seq));
  const [row] = batchRows(rows);
  return row!;
};
const seqs = (afterSeq: number, lastSeq: number, rows: ReturnType<typeof plain>[]) =>
  decodeEvents("r", afterSeq, lastSeq, rows).map((e) => e.seq);

describe("several plain events in one row", () => {
  it("makes one row of an append's plain events, under the last event's seq", () => {
    const [row, ...rest] = batchRows([plain(4), plain(5), plain(6)]);
    expect(rest).toEqual([]);
    expect(row).toMatchObject({ seq: 6, version: BATCH_ROW_VERSION });
    expect(JSON.parse(row!.body)).toEqual([event(4), event(5), event(6)]);
  });

  it("leaves one event, and any append with a row that refers to payloads, a row per event", () => {
    expect(batchRows([plain(1)])).toEqual([plain(1)]);
    const withPayload = [plain(1), { seq: 2, version: 2, body: "{}" }];
    expect(batchRows(withPayload)).toEqual(withPayload);
  });

  it("reads every event of a log that mixes batch rows and rows of one event, from any seq", () => {
    const log = [plain(1), batch(2, 5), plain(6), batch(7, 8)];
    expect(seqs(0, 8, log)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // A read after seq 3 gets the batch row holding 4 and 5 (its seq, 5, is after 3).
    expect(seqs(3, 8, log.slice(1))).toEqual([4, 5, 6, 7, 8]);
    expect(seqs(7, 8, log.slice(3))).toEqual([8]);
    expect(decodeEvents("r", 0, 5, [plain(1), batch(2, 5)])[2]).toEqual(event(3));
  });

  it("reports a missing event before a batch, and an event stored twice, naming the seq", () => {
    expect(() => seqs(0, 5, [plain(1), batch(3, 5)])).toThrow(/run r: event seq 2 is missing/);
    expect(() => seqs(0, 5, [batch(1, 3), batch(3, 5)])).toThrow(/run r: event seq 3 is stored twice/);
    expect(() => seqs(0, 6, [batch(1, 3)])).toThrow(/run r: event seq 4 is missing/);
    // A row wholly before the read's start (not what any store's read returns) is no progress either.
    expect(() => seqs(4, 6, [batch(1, 3), batch(5, 6)])).toThrow(/run r: event seq 1 is stored twice/);
  });

  it("reports a damaged batch row as a StoreError naming the first event it could not read", () => {
    const damaged = (body: string) => [plain(1), { seq: 4, version: BATCH_ROW_VERSION, body }];
    const cases: Array<[string, RegExp]> = [
      [
        '[{"type":"text_del',
        /run r: event seq 2 is damaged and cannot be decoded \(its row holds the events up to seq 4\)/,
      ],
      [
        JSON.stringify(event(2)),
        /run r: event seq 2 is damaged: its row \(events up to seq 4\) is not a list of events/,
      ],
      ["[]", /run r: event seq 2 is damaged: its row \(events up to seq 4\) is not a list of events/],
      [JSON.stringify([event(2), event(7), event(4)]), /run r: event seq 3 is damaged: it carries seq 7/],
      [JSON.stringify([event(2), event(3), 42]), /run r: event seq 4 is damaged: it is not an event object/],
      [
        JSON.stringify([event(2), event(3, { $payloads: ["delta"] }), event(4)]),
        /run r: event seq 3 is damaged: a row of several events cannot refer to payloads/,
      ],
    ];
    for (const [body, message] of cases) {
      const error = (() => {
        try {
          decodeEvents("r", 0, 4, damaged(body));
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).runId).toBe("r");
      expect((error as Error).message).toMatch(message);
    }
  });

  it("refuses a row of a version after batch rows, as a newer Quiver's", () => {
    const row = { ...batch(1, 2), version: BATCH_ROW_VERSION + 1 };
    expect(() => seqs(0, 2, [row])).toThrow(/event seq 2 is stored in event schema version 5/);
  });

  it("finds a failed run's kind at the end of a batch row", () => {
    const failed = { ...event(3), type: "run_failed", kind: "store_unavailable" };
    expect(failureKindOf(JSON.stringify([event(2), failed]))).toBe("store_unavailable");
    expect(failureKindOf(JSON.stringify([failed, event(3)]))).toBeUndefined();
  });
});
