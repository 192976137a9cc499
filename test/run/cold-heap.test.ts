import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const child = resolve(root, "test/fixtures/run/cold-heap-child.ts");

// Functions whose deopts are not the loop's: the child's own driver (it holds each phase's
// agent), and NodeEventTarget's `on` (tsx's loader port; the child runs under tsx).
const NOT_THE_LOOP = new Set(["phase", "on"]);

describe("a full GC between runs", () => {
  it("does not throw away the loop's optimized code", async () => {
    // V8 says which optimized code a full GC invalidates: code that embedded a hidden class
    // (or an object) the collection found dead. Such code reruns in the interpreter until it
    // is optimized again; a server's first runs after a quiet spell would pay for it.
    const output = await new Promise<string>((done, fail) => {
      execFile(
        process.execPath,
        ["--expose-gc", "--trace-deopt", "--import", "tsx", child],
        { cwd: root, timeout: 60_000, maxBuffer: 64 * 1024 * 1024 },
        (error, stdout) => (error ? fail(error) : done(stdout)),
      );
    });
    const afterWarmUp = output.slice(output.indexOf("=== after warm-up ==="));
    expect(afterWarmUp).toContain("=== done ===");
    const invalidated = [
      ...afterWarmUp.matchAll(
        /<SharedFunctionInfo (.*?)>\) \(opt id \d+\) for deoptimization, reason: weak objects/g,
      ),
    ]
      .map((match) => match[1]!)
      .filter((name) => !NOT_THE_LOOP.has(name));
    expect(invalidated).toEqual([]);
  }, 60_000);
});
