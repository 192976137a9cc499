import { Runner } from "../run/runner.js";
import { withModel } from "./agent-file.js";
import { agentForCli } from "./agent-setup.js";
import { demoAgent } from "./demo-agent.js";
import { drive } from "./drive.js";
import { flag, parseCommand, text } from "./options.js";
import { EventRenderer } from "./render.js";
import { colorsFor, isInteractive } from "./terminal.js";
import { terminalText } from "./terminal-text.js";
import { DEMO_HELP, EXIT, UsageError } from "./usage.js";

/**
 * `quiver demo`: a short session that shows parallel calls, a retry, progress updates, a
 * truncated result and an approval with a diff. It says plainly that a ScriptedModel plays it.
 */
export async function demoCommand(args: string[]): Promise<number> {
  const parsed = parseCommand(
    args,
    {
      json: { type: "boolean" },
      model: { type: "string" },
      "show-reasoning": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
    DEMO_HELP,
  );
  if (flag(parsed, "help")) {
    process.stdout.write(`${DEMO_HELP}\n`);
    return EXIT.completed;
  }
  if (parsed.positionals.length)
    throw new UsageError(`unexpected argument "${parsed.positionals[0]}"`, DEMO_HELP);
  const model = text(parsed, "model");
  const json = flag(parsed, "json");
  const c = colorsFor(process.stderr);
  const demo = await demoAgent();
  try {
    const agent = await withModel(demo.agent, model);
    const note = (line: string) => process.stderr.write(`${line}\n`);
    if (!json) {
      note(c.bold("Quiver demo"));
      note(
        model
          ? c.dim(`model: ${model} (a real model; its answers will differ from the script)`)
          : c.yellow("model: a ScriptedModel plays a fixed script — it is not a language model.") +
              c.dim("\nquiver demo --model openai:gpt-4.1-mini (or anthropic:…, ollama:…) uses a real one."),
      );
      note("");
    }
    // No store: the demo's agent is not a file that `quiver runs resume` could load again.
    const approvals = { dismissed: new Set<string>(), stored: false };
    const handle = Runner.stream(
      agentForCli(agent, { approvals }),
      "Inspect the package and record what you find.",
    );
    const outcome = await drive(handle, {
      json,
      renderer: new EventRenderer({
        out: process.stdout,
        err: process.stderr,
        colors: c,
        showReasoning: flag(parsed, "show-reasoning"),
      }),
      interactive: isInteractive(),
      approvals,
      sessionAllowed: new Set(),
      agentDecides: false,
      store: undefined,
      agentSpec: "",
      footer: true,
    });
    if (outcome.error) process.stderr.write(`error: ${terminalText(outcome.error.message)}\n`);
    return outcome.code;
  } finally {
    await demo.close();
  }
}
