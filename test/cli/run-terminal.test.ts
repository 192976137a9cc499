import { describe, expect, it } from "vitest";
import { quiver } from "./binary.js";
import { charges, chatAtChargePrompt, terminalProjects } from "./terminal-project.js";
import type { Terminal } from "./tmux.js";

const projects = terminalProjects();
const setup = () => projects.setup();

/** `quiver <args>` in a terminal, with FORCE_COLOR unset (and NO_COLOR too when `color`). */
function runIn(
  terminal: Terminal,
  cwd: string,
  args: string[],
  { color = false, env = {} }: { color?: boolean; env?: Record<string, string> } = {},
): void {
  const unset = color ? ["-u", "NO_COLOR", "-u", "FORCE_COLOR"] : ["-u", "FORCE_COLOR"];
  terminal.start(["env", ...unset, process.execPath, projects.bin, ...args], { cwd, env });
}

/** Any escape sequence: colors and styles come out of `screen({ escapes: true })` as `ESC[…m`. */
const ESCAPE = "\u001b[";
/** Red text (SGR 31), as tmux reports it. */
const RED = /\u001b\[31m/;

/** The run and call ids of the one running run whose approval prompt is open, read by other processes. */
async function openPrompt(cwd: string, store: string): Promise<{ runId: string; callId: string }> {
  const listed = await quiver(
    projects.bin,
    ["runs", "list", "--status", "running", "--json", "--store", store],
    {
      cwd,
    },
  );
  expect(listed.code, listed.stderr).toBe(0);
  const running = JSON.parse(listed.stdout) as Array<{ runId: string }>;
  expect(running).toHaveLength(1);
  const runId = running[0]!.runId;
  const shown = await quiver(projects.bin, ["runs", "show", runId, "--json", "--store", store], { cwd });
  const pending = JSON.parse(shown.stdout).pending as Array<{ id: string; name: string }>;
  expect(pending.map((call) => call.name)).toEqual(["charge_card"]);
  return { runId, callId: pending[0]!.id };
}

describe("quiver in a real terminal (tmux): decisions from elsewhere, Ctrl+C, colors", () => {
  it("quiver runs decide from another process answers the open prompt; the prompt goes away and the run goes on", async () => {
    const made = setup();
    const { cwd, effects } = made;
    const store = "sqlite:runs.db";
    const chat = made.term();
    // Approved from another process while the prompt waits.
    await chatAtChargePrompt(projects.bin, made, chat, store);
    const first = await openPrompt(cwd, store);
    const approved = await quiver(
      projects.bin,
      ["runs", "decide", first.runId, first.callId, "--approve", "--store", store],
      {
        cwd,
      },
    );
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toBe(
      `approved ${first.callId} of ${first.runId}: the process running it took the decision\n`,
    );
    await chat.waitFor("(decided in another process: quiver runs decide)");
    await chat.waitFor("Done: charged 42.");
    expect(charges(effects)).toBe(1);
    // The prompt went away with its options; its question stays, once, above the note.
    expect(chat.count("don't ask again")).toBe(0);
    expect(chat.screen()).toMatch(/◇ +Allow charge_card[^\n]*\n\s*\(decided in another process/);

    // Denied from another process, with a reason the model sees.
    await chat.waitFor(/Done: charged 42\.[\s\S]*\n› *\n*$/);
    chat.type("charge again");
    chat.send("Enter");
    await chat.waitFor(/charge again[\s\S]*Allow charge_card/);
    const second = await openPrompt(cwd, store);
    const denied = await quiver(
      projects.bin,
      [
        "runs",
        "decide",
        second.runId,
        second.callId,
        "--deny",
        "--reason",
        "over the limit",
        "--store",
        store,
      ],
      { cwd },
    );
    expect(denied.code, denied.stderr).toBe(0);
    await chat.waitFor("Done: Tool error: charge_card was not approved: over the limit");
    expect(charges(effects)).toBe(1);

    // The prompt really is gone: the keyboard belongs to the chat again.
    await chat.waitFor(/not approved: over the limit[\s\S]*\n› *\n*$/);
    chat.type("hello");
    chat.send("Enter");
    await chat.waitFor("Hello from the script! You said: hello");
    expect(chat.count("Allow charge_card")).toBe(2);
    chat.send("C-d");
    expect(await chat.exitCode()).toBe(0);

    const listed = await quiver(projects.bin, ["runs", "list", "--json", "--store", store], { cwd });
    const runs = JSON.parse(listed.stdout) as Array<{ status: string }>;
    expect(runs.map((r) => r.status)).toEqual(["completed", "completed", "completed"]);
    const shown = await quiver(projects.bin, ["runs", "show", first.runId, "--store", store], { cwd });
    expect(shown.stdout).toMatch(/approved by channel/);
  });

  it("runs decide on a call that is not waiting says so, and changes nothing", async () => {
    const made = setup();
    const { cwd, effects } = made;
    const store = "sqlite:runs.db";
    const chat = made.term();
    await chatAtChargePrompt(projects.bin, made, chat, store);
    const { runId } = await openPrompt(cwd, store);
    const wrong = await quiver(
      projects.bin,
      ["runs", "decide", runId, "call_nope", "--approve", "--store", store],
      {
        cwd,
      },
    );
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain(`run ${runId} has no call call_nope waiting for approval`);
    // The prompt is still there and still answers to the keyboard.
    chat.send("Down", "Down", "Enter");
    await chat.waitFor("Why not?");
    chat.send("Enter");
    await chat.waitFor("Done: Tool error: charge_card was not approved");
    expect(charges(effects)).toBe(0);
    chat.send("C-d");
    expect(await chat.exitCode()).toBe(0);
  });

  it("Ctrl+C while streaming cancels (exit 130 once the run has ended); a second Ctrl+C exits at once", async () => {
    const { cwd, term } = setup();
    // The agent's plugin takes LINGER_MS to tear down after the run, cancelled or not.
    const cancelledOnce = async (lingerMs: number) => {
      const t = term();
      t.start([process.execPath, projects.bin, "run", "chatty-agent.mjs#lingering", "go slow"], {
        cwd,
        env: { NO_COLOR: "1", LINGER_MS: String(lingerMs) },
      });
      await t.waitFor(/⋯ slow_task: step \d+/);
      t.send("C-c");
      await t.waitFor("cancelling… (Ctrl+C again to quit at once)");
      return t;
    };

    const once = await cancelledOnce(1500);
    expect(await once.exitCode()).toBe(130);
    expect(once.screen()).toMatch(/slow_task[\s\S]*cancelled/);

    const twice = await cancelledOnce(120_000);
    // The cancelled run now waits two minutes for the teardown; the second Ctrl+C does not.
    twice.send("C-c");
    expect(await twice.exitCode(10_000)).toBe(130);
  });

  it("NO_COLOR output has no escape sequences; on a terminal without it, errors are red", async () => {
    const { cwd, effects, term } = setup();
    // NO_COLOR: the call lines, the approval prompt and the answer are plain text.
    const plain = term();
    runIn(plain, cwd, ["run", "chatty-agent.mjs#chatty", "please charge"], {
      env: { NO_COLOR: "1", SIDE_EFFECTS_FILE: effects },
    });
    await plain.waitFor("Allow charge_card(amount: 42)?");
    expect(plain.screen({ escapes: true })).not.toContain(ESCAPE);
    plain.send("Enter");
    await plain.waitFor("Done: charged 42.");
    expect(await plain.exitCode()).toBe(0);
    const plainEnd = plain.screen({ escapes: true });
    expect(plainEnd).toContain("● charge_card(amount: 42)");
    expect(plainEnd).not.toContain(ESCAPE);

    const plainFailure = term();
    runIn(plainFailure, cwd, ["run", "chatty-agent.mjs#chatty", "fail now"], { env: { NO_COLOR: "1" } });
    expect(await plainFailure.exitCode()).toBe(1);
    const plainFailed = plainFailure.screen({ escapes: true });
    expect(plainFailed).toContain("✗ the run failed");
    expect(plainFailed).not.toContain(ESCAPE);

    // The same failures on a terminal with no NO_COLOR (whatever the test's own environment holds).
    const colored = term();
    runIn(colored, cwd, ["run", "chatty-agent.mjs#chatty", "fail now"], { color: true });
    expect(await colored.exitCode()).toBe(1);
    const red = colored.screen({ escapes: true });
    expect(red).toMatch(
      new RegExp(`${RED.source}✗ the run failed: Error: the scripted model was told to fail`),
    );

    const coloredUsage = term();
    runIn(coloredUsage, cwd, ["run", "chatty-agent.mjs#chatty", "hi", "--model", "nosuch:model"], {
      color: true,
    });
    expect(await coloredUsage.exitCode()).toBe(1);
    expect(coloredUsage.screen({ escapes: true })).toMatch(
      new RegExp(`${RED.source}error:(\\u001b\\[39m)? unknown model provider "nosuch"`),
    );
  });
});
