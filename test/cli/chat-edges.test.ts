import { describe, expect, it } from "vitest";
import { charges, chatAtChargePrompt, terminalProjects } from "./terminal-project.js";

const projects = terminalProjects();

describe("quiver chat's edges in a real terminal (tmux)", () => {
  it("Ctrl+C on an empty line leaves like /exit, with the line that continues the session, and ends by SIGINT", async () => {
    const { cwd, effects, term } = projects.setup();
    const chat = term();
    chat.start([process.execPath, projects.bin, "chat", "chatty-agent.mjs#chatty", "--session", "s7"], {
      cwd,
      env: { NO_COLOR: "1", SIDE_EFFECTS_FILE: effects },
    });
    await chat.waitFor("› ");
    chat.type("hello");
    chat.send("Enter");
    await chat.waitFor(/You said: hello[\s\S]*› /);
    chat.send("C-c");
    await chat.waitFor("session s7 — continue with: quiver chat chatty-agent.mjs#chatty --session s7");
    // 130 in a shell: the process ends by the signal itself, so a script around it stops too.
    expect(await chat.exit()).toEqual({ code: 130, signal: "SIGINT" });
  });

  it("Ctrl+C on an approval prompt: the closed prompt says it was not answered, never 'Yes'", async () => {
    const made = projects.setup();
    const chat = made.term();
    await chatAtChargePrompt(projects.bin, made, chat, "memory");
    expect(chat.screen()).toMatch(/Allow charge_card\(amount: 42\)\?\n│\s+● Yes\n/);
    chat.send("C-c");
    const screen = await chat.waitFor(/run run_[\w-]+ is parked/);
    expect(screen).toMatch(/Allow charge_card\(amount: 42\)\?\n│\s+not answered \(dismissed\)\n/);
    expect(screen).not.toMatch(/^│\s+(● )?Yes\s*$/m);
    expect(charges(made.effects)).toBe(0);
    const parked = await chat.waitFor(/parked[\s\S]*› /);
    // A memory store ends with this process: no commands for another one, which would find nothing.
    expect(parked).toMatch(/it is not stored \(a memory store ends with this process\)/);
    expect(parked).not.toMatch(/quiver runs (decide|resume)/);
    chat.send("C-d");
    expect(await chat.exitCode()).toBe(0);
  });

  it("a shell script stops at the Ctrl+C that cancelled a run, instead of going on with its next command", async () => {
    const { cwd, term } = projects.setup();
    const shell = term();
    const script = `"${process.execPath}" "${projects.bin}" run chatty-agent.mjs#chatty "go slow"; echo "the script went on"`;
    shell.start(["bash", "-c", script], { cwd, env: { NO_COLOR: "1" } });
    await shell.waitFor(/⋯ slow_task: step \d+/);
    shell.send("C-c");
    await shell.waitFor("cancelling…");
    expect(await shell.exit()).toEqual({ code: 130, signal: "SIGINT" });
    expect(shell.screen()).not.toContain("the script went on");
  });
});
