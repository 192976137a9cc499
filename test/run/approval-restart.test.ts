import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const dir = mkdtempSync(join(tmpdir(), "quiver-approval-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function step(env: Record<string, string>): Promise<Record<string, unknown>> {
  return new Promise((done, fail) => {
    execFile(
      process.execPath,
      ["--import", "tsx", join(root, "test/fixtures/durability/approval-agent.ts")],
      { cwd: root, env: { ...process.env, DB: join(dir, "runs.db"), ...env }, timeout: 60_000 },
      (error, stdout, stderr) =>
        error ? fail(new Error(`${error.message}\n${stderr}`)) : done(JSON.parse(stdout)),
    );
  });
}

describe("an approval decided from another process after a restart", () => {
  it.each([
    ["approve", "refunded A1", ["A1"]],
    ["deny", "Tool error: refund was not approved", []],
  ])(
    "%s: the run parks, the process exits, another stores the decision, a third resumes",
    async (decision, said, paid) => {
      const runId = `refund-${decision}`;
      const effects = join(dir, `${runId}.log`);
      writeFileSync(effects, "");
      const env = { RUN_ID: runId, EFFECTS: effects };
      expect(await step({ ...env, MODE: "start" })).toEqual({ stopReason: "awaiting_approval" });
      // Restarting without a decision never pays.
      expect(await step({ ...env, MODE: "resume" })).toMatchObject({ stopReason: "awaiting_approval" });
      expect(readFileSync(effects, "utf8")).toBe("");
      await step({ ...env, MODE: "decide", DECISION: decision });
      const resumed = await step({ ...env, MODE: "resume" });
      expect(resumed).toMatchObject({ stopReason: "completed" });
      expect(String(resumed.output)).toContain(said);
      expect(readFileSync(effects, "utf8").split("\n").filter(Boolean)).toEqual(paid);
    },
  );
});
