/**
 * The deadlines a PostgresStore gives its one-round-trip appends, on the database's clock: never
 * later than the moment the store gives up, whatever the two clocks read.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { DatabaseClock } from "../../src/store/database-clock.js";

/** Local monotonic time, set by the test. */
let local = 0;
afterEach(() => vi.restoreAllMocks());
function useLocalClock(start: number) {
  local = start;
  vi.spyOn(performance, "now").mockImplementation(() => local);
}

describe("DatabaseClock", () => {
  it("has no deadline before it has read the database's clock, or after forgetting it", () => {
    useLocalClock(1_000);
    const clock = new DatabaseClock();
    expect(clock.deadline(10_000)).toBeUndefined();
    clock.observe(5_000_000, 999);
    expect(clock.deadline(10_000)).toBeDefined();
    clock.forget();
    expect(clock.deadline(10_000)).toBeUndefined();
  });

  it("never gives a deadline later than the store's give-up time on the database's clock", () => {
    // The database's clock runs 3,600,000 ms ahead. A statement sent at local 1,000 read it at
    // local 1,004 (database 3,601,004) and was answered at local 1,010.
    useLocalClock(1_010);
    const clock = new DatabaseClock();
    clock.observe(3_601_004, 1_000);
    local = 1_500;
    const deadline = clock.deadline(10_000)!;
    // The store gives up at local 11,500: database 3,611,500.
    expect(deadline).toBeLessThanOrEqual(3_611_500);
    // Early only by what the reading could not tell (its 6 ms answer) and a small margin.
    expect(deadline).toBeGreaterThan(3_611_500 - 20);
  });

  it("widens its margin as the reading ages, and stops using a reading a minute old", () => {
    useLocalClock(0);
    const clock = new DatabaseClock();
    clock.observe(1_000_000, 0);
    const fresh = clock.deadline(10_000)!;
    local = 30_000;
    // 30 s later, at 1,000 ppm of drift allowed: 30 ms earlier than the clocks' offset alone says.
    expect(clock.deadline(10_000)! - 30_000).toBeLessThanOrEqual(fresh - 30);
    local = 60_001;
    expect(clock.deadline(10_000)).toBeUndefined();
  });

  it("gives no deadline when the reading leaves less than half the time to the statement", () => {
    useLocalClock(500);
    const clock = new DatabaseClock();
    // Answered 400 ms after it was sent: the offset is known only to within 400 ms.
    clock.observe(9_000_000, 100);
    expect(clock.deadline(10_000)).toBeDefined();
    expect(clock.deadline(600)).toBeUndefined();
  });
});
