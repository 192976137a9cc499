/**
 * A bound on a wait holds the process open until it fires: a guardrail's `timeoutMs`, a
 * budget's `maxDurationMs` and a plugin's setup `timeoutMs`, each over a promise that never
 * settles and holds nothing else alive, in a child process with nothing else to do. With a timer
 * that does not hold the process (`AbortSignal.timeout`'s), the child exits with code 13 before
 * the bound fires and the run has no outcome at all.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const exec = promisify(execFile);
const fixture = fileURLToPath(new URL("../fixtures/bounded-waits/hang.ts", import.meta.url));

describe("bounded waits in a process with nothing else to do", () => {
  it("time out and end the run instead of letting the process exit", async () => {
    const { stdout } = await exec(process.execPath, ["--import", "tsx", fixture], { timeout: 30_000 });
    const report = JSON.parse(stdout.trim().split("\n").pop()!) as Record<string, string>;
    expect(report.inputGuardrail).toMatch(/^GuardrailTripped: .*did not answer within 200 ms/);
    expect(report.outputGuardrail).toMatch(/^GuardrailTripped: .*did not answer within 200 ms/);
    expect(report.maxDuration).toBe("completed: budget");
    expect(report.pluginSetup).toMatch(/^PluginSetupError: .*within 200 ms/);
  });
});
