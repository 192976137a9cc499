import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cliProjects, quiver, repo } from "./binary.js";

const cli = cliProjects([]);

describe("quiver init", () => {
  it("writes agent.mjs, which runs as it is: the built-in now tool, played by a ScriptedModel", async () => {
    const cwd = cli.project();
    const init = await quiver(cli.bin, ["init"], { cwd });
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toContain("wrote agent.mjs");
    expect(init.stdout).toContain("npx quiver chat agent.mjs");
    expect(init.stdout).not.toContain("not installed");
    expect(readFileSync(join(cwd, "agent.mjs"), "utf8")).toBe(
      readFileSync(join(repo, "examples/agents/hello.mjs"), "utf8"),
    );

    const ran = await quiver(cli.bin, ["run", "agent.mjs", "what time is it?"], { cwd });
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stderr).toMatch(/● now\(\)\n {2}⎿ /);
    expect(ran.stdout).toMatch(/^Let me check the clock\.\nDone — \d{4}-\d\d-\d\d/);
  });

  it("keeps an existing agent.mjs unless --force, and writes into a folder it is given", async () => {
    const cwd = cli.project();
    writeFileSync(join(cwd, "agent.mjs"), "// mine\n");
    const refused = await quiver(cli.bin, ["init"], { cwd });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("agent.mjs exists already: pass --force to replace it");
    expect(readFileSync(join(cwd, "agent.mjs"), "utf8")).toBe("// mine\n");

    const forced = await quiver(cli.bin, ["init", "--force"], { cwd });
    expect(forced.code, forced.stderr).toBe(0);
    expect(readFileSync(join(cwd, "agent.mjs"), "utf8")).toContain("ScriptedModel");

    const nested = await quiver(cli.bin, ["init", "bots/first"], { cwd });
    expect(nested.code, nested.stderr).toBe(0);
    expect(existsSync(join(cwd, "bots/first/agent.mjs"))).toBe(true);
    expect(nested.stdout).toContain("cd bots/first");
  });

  it("the example the package ships runs from node_modules", async () => {
    const cwd = cli.project();
    const ran = await quiver(
      cli.bin,
      ["run", "node_modules/quiver-agents/examples/agents/hello.mjs", "hello"],
      {
        cwd,
      },
    );
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain("I'm a ScriptedModel");
  });
});
