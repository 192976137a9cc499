import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll } from "vitest";
import { builtPackage, project } from "./binary.js";
import { Terminal } from "./tmux.js";

/** A scratch project with the fixture agents, and the terminals a test opened in it. */
export type TerminalProject = { cwd: string; effects: string; term: () => Terminal };

/**
 * Registers the suite's hooks (the built `quiver` binary, cleanup after each test) and returns
 * `bin` and `setup()`, which makes a project whose terminals and files go away after the test.
 */
export function terminalProjects(): { readonly bin: string; setup(): TerminalProject } {
  let bin = "";
  let pkgRoot = "";
  const cleanups: Array<() => void> = [];
  beforeAll(async () => {
    ({ bin, root: pkgRoot } = await builtPackage());
  }, 150_000);
  afterEach(() => {
    for (const cleanup of cleanups.splice(0)) cleanup();
  });
  return {
    get bin() {
      return bin;
    },
    setup() {
      const cwd = project(pkgRoot, ["chatty-agent.mjs"]);
      const terms: Terminal[] = [];
      cleanups.push(() => {
        for (const term of terms) term.close();
        rmSync(cwd, { recursive: true, force: true });
      });
      const term = () => {
        const made = new Terminal();
        terms.push(made);
        return made;
      };
      return { cwd, effects: join(cwd, "effects.txt"), term };
    },
  };
}

/** How many charges the fixture agent's `charge_card` made (one line each in the effects file). */
export function charges(file: string): number {
  try {
    return readFileSync(file, "utf8").split("\n").filter(Boolean).length;
  } catch {
    return 0;
  }
}

/** Starts `quiver chat` on the fixture agent with a store, asks for a charge, and waits for its prompt. */
export async function chatAtChargePrompt(
  bin: string,
  { cwd, effects }: TerminalProject,
  chat: Terminal,
  store: string,
): Promise<void> {
  chat.start([process.execPath, bin, "chat", "chatty-agent.mjs#chatty", "--store", store], {
    cwd,
    env: { NO_COLOR: "1", SIDE_EFFECTS_FILE: effects },
  });
  await chat.waitFor("› ");
  chat.type("please charge");
  chat.send("Enter");
  await chat.waitFor("Allow charge_card(amount: 42)?");
}
