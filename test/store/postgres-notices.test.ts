import { describe, expect, it } from "vitest";
import { PostgresNotices } from "../../src/store/postgres-notices.js";

/** A notices queue whose sends are recorded, and held open until `finish()` lets the last one end. */
function recorded(intervalMs: number) {
  const sent: string[][] = [];
  let finish: (() => void) | undefined;
  const notices = new PostgresNotices((payloads) => {
    sent.push(payloads);
    return new Promise<void>((done) => {
      finish = done;
    });
  }, intervalMs);
  return {
    notices,
    sent,
    async finish() {
      finish?.();
      await new Promise((r) => setTimeout(r, 0));
    },
  };
}

describe("PostgresStore's notices", () => {
  it("go out at most once per interval, batched, in the order they were added", async () => {
    const { notices, sent, finish } = recorded(60_000);
    notices.add("a");
    expect(sent).toEqual([["a"]]); // the first after a quiet spell: at once
    await finish();
    notices.add("b");
    notices.add("c");
    expect(sent).toEqual([["a"]]); // within the interval: queued
    const flushed = notices.flush(); // as close() does
    expect(sent).toEqual([["a"], ["b", "c"]]);
    await finish();
    await flushed;
  });

  it("send a run's last notice at once, with everything queued before it", async () => {
    const { notices, sent, finish } = recorded(60_000);
    notices.add("a");
    await finish();
    notices.add("b");
    notices.add("c", true);
    // Not after the minute-long interval: now, b first.
    expect(sent).toEqual([["a"], ["b", "c"]]);
    await finish();
  });

  it("send a run's last notice right after the send in flight, not an interval later", async () => {
    const { notices, sent, finish } = recorded(60_000);
    notices.add("a");
    notices.add("b");
    notices.add("c", true);
    expect(sent).toEqual([["a"]]); // "a" is still being sent
    await finish();
    expect(sent).toEqual([["a"], ["b", "c"]]);
    await finish();
    notices.add("d");
    await finish();
    expect(sent).toEqual([["a"], ["b", "c"]]); // an ordinary one waits out the interval again
    const flushed = notices.flush(); // no timer left behind
    await finish();
    await flushed;
  });
});
