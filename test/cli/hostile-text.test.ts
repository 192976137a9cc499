import { afterEach, describe, expect, it } from "vitest";
import { cliProjects, quiver } from "./binary.js";
import { Terminal } from "./tmux.js";

// The fixture agent's model (test/cli/fixtures/hostile-agent.mjs) writes escape sequences into
// its answer, its reasoning, a call's name, id and argument key, a tool's result and error.
const cli = cliProjects(["hostile-agent.mjs"]);

const ESC = "\u001b";
/** What must never reach a terminal from a model: C0 but \n and \t, DEL, C1, bidi overrides and isolates. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
/** The same, as JSON.stringify leaves it unescaped. */
const CONTROL_IN_JSON = /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
const NASTY = `${ESC}]52;c;cm0gLXJmIH4=${ESC}\\ ${ESC}]0;owned${ESC}\\ \u009b2J \u202egnp.exe\u202c \u2066iso\u2069 del\u007f cr\rX`;
/** NASTY as the terminal is shown it. */
const NASTY_SHOWN =
  "␛]52;c;cm0gLXJmIH4=␛\\ ␛]0;owned␛\\ \\u009b2J \\u202egnp.exe\\u202c \\u2066iso\\u2069 del␡ cr␍X";
const SPOOF_KEY = `${ESC}[2K${ESC}[1G${ESC}[0mAllow list_files(path: ".")?${ESC}[8m`;

const lineWith = (text: string, start: string) => text.split("\n").find((l) => l.includes(start)) ?? "";

describe("what a model, a tool or a stored run wrote is shown on the terminal, not obeyed", () => {
  it("quiver run: the answer, reasoning, call lines, results and errors carry no control characters", async () => {
    const cwd = cli.project();
    const ran = await quiver(
      cli.bin,
      ["run", "hostile-agent.mjs#hostile", "go", "--mode", "bypass", "--show-reasoning"],
      { cwd },
    );
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).not.toMatch(CONTROL);
    expect(ran.stderr).not.toMatch(CONTROL);
    // The call line names the real call and its real arguments: the key is a JSON string, cut short.
    const call = lineWith(ran.stderr, "● deploy(");
    expect(call).toMatch(/^● deploy\("\\u001b\[2K\\u001b\[1G.*…: 1, target: "prod"\)$/);
    expect(ran.stderr).toContain("● ghost␛]0;owned␛\\()");
    expect(ran.stderr).toContain("⎿ deployed␛[2K ␛]52;c;cm0gLXJmIH4=␛\\ ␛]0;owned");
    expect(ran.stderr).toContain("no such thing␛[2J\\u202eevil");
    expect(ran.stderr).toContain(`hmm ${NASTY_SHOWN}`);
    expect(ran.stdout).toContain(`done ${NASTY_SHOWN}`);
  });

  it("--json escapes what JSON leaves raw (C1, bidi, DEL) and keeps the text exactly", async () => {
    const cwd = cli.project();
    const ran = await quiver(
      cli.bin,
      ["run", "hostile-agent.mjs#hostile", "go", "--mode", "bypass", "--json"],
      {
        cwd,
      },
    );
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).not.toMatch(CONTROL_IN_JSON);
    expect(ran.stdout.replace(/\n/g, "")).not.toMatch(CONTROL);
    const events = ran.stdout
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line));
    expect(events.find((e) => e.type === "text_delta")?.delta).toBe(`done ${NASTY}`);
    expect(
      events.find((e) => e.type === "tool_call_requested" && e.call.name === "deploy")?.call.args,
    ).toEqual({
      [SPOOF_KEY]: 1,
      target: "prod",
    });
  });

  it("quiver runs show / list / tail print the stored run the same way (and --json escaped)", async () => {
    const cwd = cli.project();
    const store = ["--store", "sqlite:runs.db"];
    const ran = await quiver(
      cli.bin,
      ["run", "hostile-agent.mjs#hostile", "go", "--mode", "bypass", ...store],
      {
        cwd,
      },
    );
    expect(ran.code, ran.stderr).toBe(0);
    const listed = await quiver(cli.bin, ["runs", "list", "--json", ...store], { cwd });
    const [{ runId }] = JSON.parse(listed.stdout) as [{ runId: string }];
    for (const args of [
      ["runs", "show", runId],
      ["runs", "show", runId, "--json"],
      ["runs", "tail", runId],
      ["runs", "tail", runId, "--json"],
      ["runs", "list"],
    ]) {
      const shown = await quiver(cli.bin, [...args, ...store], { cwd });
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout.replace(/\n/g, ""), args.join(" ")).not.toMatch(CONTROL);
      expect(shown.stderr, args.join(" ")).not.toMatch(CONTROL);
    }
    const shown = await quiver(cli.bin, ["runs", "show", runId, ...store], { cwd });
    expect(lineWith(shown.stdout, "● deploy(")).toMatch(/target: "prod"\)/);
    expect(shown.stdout).toContain(`assistant: done ${NASTY_SHOWN}`);
    const json = JSON.parse(
      (await quiver(cli.bin, ["runs", "show", runId, "--json", ...store], { cwd })).stdout,
    );
    expect(json.messages.at(-1).content).toContainEqual({ type: "text", text: `done ${NASTY}` });
  });
});

describe("in a real terminal (tmux)", () => {
  const terminals: Terminal[] = [];
  afterEach(() => {
    for (const term of terminals.splice(0)) term.close();
  });

  it("the approval prompt names the real call and arguments; the title and clipboard stay; Quiver's colors stay", async () => {
    const cwd = cli.project();
    const term = new Terminal();
    terminals.push(term);
    term.start(
      ["env", "-u", "NO_COLOR", process.execPath, cli.bin, "run", "hostile-agent.mjs#hostile", "go"],
      {
        cwd,
        env: { FORCE_COLOR: "1" },
      },
    );
    const screen = await term.waitFor(/Allow deploy\(/);
    // What the person reads is the call that will run: not a list_files question, nothing concealed.
    expect(lineWith(screen, "Allow deploy(")).toMatch(/Allow deploy\("\\u001b\[2K.*: 1, target: "prod"\)\?/);
    expect(screen).not.toMatch(/^\s*Allow list_files/m);
    term.send("Enter");
    expect(await term.exitCode()).toBe(0);
    const after = term.screen();
    expect(after).toContain(`done ${NASTY_SHOWN}`);
    expect(after).toContain("⎿ deploy: deployed␛[2K ␛]52;c;");
    expect(term.title()).not.toContain("owned");
    expect(term.clipboard()).toBe("");
    // Quiver's own styling still reaches the terminal: the call marker is cyan.
    expect(term.screen({ escapes: true })).toMatch(/\u001b\[36m●/);
  });
});
