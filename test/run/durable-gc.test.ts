import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const child = resolve(root, "test/fixtures/run/durable-gc-child.ts");

describe("durable runs and young-generation GCs", () => {
  it("leave little for a scavenge to keep: a run's objects die young", async () => {
    // A closure made per call in the executor once held the call, its turn and the run, and V8
    // kept it through scavenges: every durable run's objects were moved to the old generation
    // (~26 KB per 20-call run here, 6–7 ms scavenge pauses in the benchmark), against ~3 KB now.
    const dir = mkdtempSync(join(tmpdir(), "quiver-durable-gc-"));
    try {
      const output = await new Promise<string>((done, fail) => {
        execFile(
          process.execPath,
          ["--expose-gc", "--import", "tsx", child, join(dir, "runs.db")],
          { cwd: root, timeout: 90_000 },
          (error, stdout) => (error ? fail(error) : done(stdout)),
        );
      });
      const { bytesPerRun } = JSON.parse(output.trim().split("\n").at(-1)!) as { bytesPerRun: number[] };
      expect(bytesPerRun.length).toBeGreaterThan(0);
      expect(Math.min(...bytesPerRun)).toBeLessThan(10_000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
