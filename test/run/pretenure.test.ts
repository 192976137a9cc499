import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const child = resolve(root, "test/fixtures/run/pretenure-child.ts");

describe("a run's messages, calls and records", () => {
  it("are born young even after V8 pretenured what runs keep", async () => {
    // Made as object literals, they were allocated straight into the old generation by every
    // run after one that outlived a few GCs (here: the tool message, the call and its record):
    // garbage for a full GC to find, which kept W1 stream() between 0.30× and 0.38× of
    // pi-agent-core in one process, depending on V8's history.
    const output = await new Promise<string>((done, fail) => {
      execFile(
        process.execPath,
        [
          "--expose-gc",
          "--allow-natives-syntax",
          "--min-semi-space-size=16",
          "--max-semi-space-size=16",
          "--import",
          "tsx",
          child,
        ],
        { cwd: root, timeout: 60_000 },
        (error, stdout) => (error ? fail(error) : done(stdout)),
      );
    });
    const { literalBornOld, bornOld } = JSON.parse(output.trim().split("\n").at(-1)!) as {
      literalBornOld: boolean;
      bornOld: string[];
    };
    // The scenario still makes this Node pretenure an object literal kept the same way.
    expect(literalBornOld).toBe(true);
    expect(bornOld).toEqual([]);
  }, 60_000);
});
