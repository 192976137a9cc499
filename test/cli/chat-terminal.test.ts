import { describe, expect, it } from "vitest";
import { quiver } from "./binary.js";
import { charges, chatAtChargePrompt, terminalProjects } from "./terminal-project.js";

const projects = terminalProjects();
/** A project and one terminal in it. */
function setup() {
  const made = projects.setup();
  return { cwd: made.cwd, effects: made.effects, term: made.term() };
}

describe("quiver chat in a real terminal (tmux)", () => {
  it("streams replies, takes approvals from the keyboard, and Ctrl+C cancels a reply", async () => {
    const { cwd, effects, term } = setup();
    term.start([process.execPath, projects.bin, "chat", "chatty-agent.mjs#chatty", "--session", "s1"], {
      cwd,
      env: { NO_COLOR: "1", SIDE_EFFECTS_FILE: effects },
    });
    await term.waitFor("it plays a fixed script and is not a language model");
    await term.waitFor("› ");

    term.type("hello there");
    term.send("Enter");
    await term.waitFor("Hello from the script! You said: hello there");

    // Yes, once.
    term.type("please charge");
    term.send("Enter");
    await term.waitFor("Allow charge_card(amount: 42)?");
    expect(charges(effects)).toBe(0); // nothing runs while the prompt waits
    term.send("Enter");
    await term.waitFor("Done: charged 42.");
    expect(charges(effects)).toBe(1);

    // No, with a reason the agent sees.
    term.type("charge again");
    term.send("Enter");
    await term.waitFor(/charge again[\s\S]*Allow charge_card/);
    term.send("Down", "Down", "Enter");
    await term.waitFor("Why not?");
    term.type("over the limit");
    term.send("Enter");
    await term.waitFor("charge_card denied: over the limit");
    await term.waitFor("Done: Tool error: charge_card was not approved: over the limit");
    expect(charges(effects)).toBe(1);

    // Ctrl+C while the agent works cancels that reply; the chat goes on.
    term.type("go slow");
    term.send("Enter");
    await term.waitFor(/⋯ slow_task: step \d+/);
    term.send("C-c");
    await term.waitFor("(cancelled)");
    await term.waitFor(/\(cancelled\)\s*\n\s*\n?› /);

    // Ctrl+C on an approval prompt leaves the call undecided: the stored run parks, nothing runs.
    term.type("charge later");
    term.send("Enter");
    await term.waitFor(/charge later[\s\S]*Allow charge_card/);
    term.send("C-c");
    const parked = await term.waitFor(/run (run_[\w-]+) is parked/);
    const runId = /run (run_[\w-]+) is parked/.exec(parked)![1]!;
    expect(charges(effects)).toBe(1);

    // Ctrl+D leaves.
    await term.waitFor(/parked[\s\S]*› /);
    term.send("C-d");
    expect(await term.exitCode()).toBe(0);

    const listed = await quiver(projects.bin, ["runs", "list", "--json"], { cwd });
    const runs = JSON.parse(listed.stdout) as Array<{ runId: string; status: string; sessionId?: string }>;
    expect(runs.map((r) => r.status)).toEqual(["completed", "completed", "completed", "completed", "parked"]);
    expect(runs.every((r) => r.sessionId === "s1")).toBe(true);
    expect(runs.at(-1)!.runId).toBe(runId);
    const shown = JSON.parse(
      (await quiver(projects.bin, ["runs", "show", runs[3]!.runId, "--json"], { cwd })).stdout,
    );
    expect(shown.stopReason).toBe("cancelled");
  });

  it("yes for this tool this session stops asking; Ctrl+C at an empty prompt exits 130", async () => {
    const made = projects.setup();
    const term = made.term();
    const { effects } = made;
    await chatAtChargePrompt(projects.bin, made, term, "memory");
    term.send("Down", "Enter");
    await term.waitFor("Done: charged 42.");
    term.type("charge two");
    term.send("Enter");
    await term.waitFor("(charge_card is allowed for this session)");
    await term.waitFor(/charge two[\s\S]*Done: charged 42\./);
    expect(term.count("Allow charge_card")).toBe(1);
    expect(charges(effects)).toBe(2);
    term.send("C-c");
    expect(await term.exitCode()).toBe(130);
  });

  it("an approval prompt goes away when the agent's approval timeout decides first", async () => {
    const { cwd, effects, term } = setup();
    term.start([process.execPath, projects.bin, "run", "chatty-agent.mjs#impatient", "please charge"], {
      cwd,
      env: { NO_COLOR: "1", SIDE_EFFECTS_FILE: effects },
    });
    await term.waitFor("Allow charge_card(amount: 42)?");
    // Nobody answers: after 1.5 s the timeout denies the call and the prompt is dismissed.
    await term.waitFor(/charge_card denied: nobody decided within 1500 ms \(by timeout\)/);
    await term.waitFor("Done: Tool error: charge_card was not approved");
    expect(await term.exitCode()).toBe(0);
    expect(charges(effects)).toBe(0);
  });
});
