import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const child = resolve(root, "test/fixtures/run/cold-heap-child.ts");
const recompileChild = resolve(root, "test/fixtures/run/cold-heap-recompile-child.ts");

function runChild(file: string, flags: string[]): Promise<string> {
  return new Promise<string>((done, fail) => {
    execFile(
      process.execPath,
      ["--expose-gc", ...flags, "--import", "tsx", file],
      { cwd: root, timeout: 60_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout) => (error ? fail(error) : done(stdout)),
    );
  });
}

// Functions whose deopts are not the loop's: the child's own driver (it holds each phase's
// agent), and NodeEventTarget's `on` (tsx's loader port; the child runs under tsx).
const NOT_THE_LOOP = new Set(["phase", "on"]);

describe("a full GC between runs", () => {
  it("does not throw away the loop's optimized code", async () => {
    // V8 says which optimized code a full GC invalidates: code that embedded a hidden class
    // (or an object) the collection found dead. Such code reruns in the interpreter until it
    // is optimized again; a server's first runs after a quiet spell would pay for it.
    const output = await runChild(child, ["--trace-deopt"]);
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

  it("keeps the optimized code of what runs per turn", async () => {
    // V8 holds a function's optimized code weakly once no closure that ran it is alive: a
    // closure made per turn (a promise executor, an arrow handler) loses its code at every full
    // GC between runs, with no deopt to report, and is compiled again while the run goes on
    // unoptimized. Such closures are anonymous in V8's trace; the loop's must not be among what
    // it compiles after the warm-up (six phases of six runs, each after a full GC).
    const output = await runChild(recompileChild, ["--trace-opt"]);
    const afterWarmUp = output.slice(output.indexOf("=== after warm-up ==="));
    expect(afterWarmUp).toContain("=== done ===");
    const compiled = [...afterWarmUp.matchAll(/\[completed compiling \S+ <JSFunction ?(.*?) \(sfi/g)].map(
      (match) => match[1]!,
    );
    // Before the fix: 13-15 anonymous functions among ~30 compilations (a closure that loses its
    // code at every full GC is compiled again in most of the six phases); now 0-1 on a quiet
    // machine. Under the whole suite's load, compilations queued during the warm-up can finish
    // after the marker (up to 4 were seen, never reproduced alone): the bound leaves room for
    // those and still catches a per-turn closure.
    expect(compiled.filter((name) => name === "").length).toBeLessThanOrEqual(4);
    expect(compiled.length).toBeLessThanOrEqual(10);
  }, 60_000);
});
