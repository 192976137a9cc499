import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cliProjects, quiver } from "./binary.js";

const cli = cliProjects(["gated-agent.mjs"]);

describe("commands about stored runs, on a store that is not there", () => {
  it("say so and exit 1, creating no file and no folder (default store, --store, QUIVER_STORE)", async () => {
    const cwd = cli.project();
    const before = readdirSync(cwd).sort();

    const byDefault = await quiver(cli.bin, ["runs", "list"], { cwd });
    expect(byDefault.code).toBe(1);
    expect(byDefault.stdout).toBe("");
    expect(byDefault.stderr).toContain(`no store at ${join(cwd, ".quiver/quiver.db")}`);
    expect(byDefault.stderr).toContain("the default store");

    const typo = await quiver(cli.bin, ["runs", "list", "--store", "sqlite:typo.db"], { cwd });
    expect(typo.code).toBe(1);
    expect(typo.stderr).toContain(`no store at ${join(cwd, "typo.db")} (from --store sqlite:typo.db)`);

    const deep = join(cwd, "missing-dir/x.db");
    for (const args of [
      ["runs", "list", "--json"],
      ["runs", "show", "run_x"],
      ["runs", "tail", "run_x"],
      ["runs", "decide", "run_x", "call_1", "--approve"],
      ["runs", "cancel", "run_x"],
      ["runs", "resume", "run_x", "gated-agent.mjs"],
      ["sessions", "list"],
      ["sessions", "clear", "s1"],
    ]) {
      const ran = await quiver(cli.bin, [...args, "--store", `sqlite:${deep}`], { cwd });
      expect(ran.code, args.join(" ")).toBe(1);
      expect(ran.stderr, args.join(" ")).toContain(`no store at ${deep}`);
    }

    const fromEnv = await quiver(cli.bin, ["runs", "list"], {
      cwd,
      env: { QUIVER_STORE: "sqlite:elsewhere.db" },
    });
    expect(fromEnv.code).toBe(1);
    expect(fromEnv.stderr).toContain("(from QUIVER_STORE=sqlite:elsewhere.db)");

    expect(readdirSync(cwd).sort()).toEqual(before);
    expect(existsSync(join(cwd, ".quiver"))).toBe(false);
  });

  it("a store that exists is read as before, empty or not", async () => {
    const cwd = cli.project();
    const parked = await quiver(
      cli.bin,
      ["run", "gated-agent.mjs", "charge it", "--store", "sqlite:runs.db"],
      {
        cwd,
      },
    );
    expect(parked.code, parked.stderr).toBe(3);
    const listed = await quiver(cli.bin, ["runs", "list", "--json", "--store", "sqlite:runs.db"], { cwd });
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ status: "parked" })]);
  });
});
