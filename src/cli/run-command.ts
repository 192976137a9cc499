import { Runner } from "../run/runner.js";
import { loadAgentFile, withModel } from "./agent-file.js";
import { agentForCli } from "./agent-setup.js";
import { readAttachment, withAttachments } from "./attachments.js";
import { drive } from "./drive.js";
import { AGENT_OPTIONS, FILE_OPTION, flag, modeOption, parseCommand, text, texts } from "./options.js";
import { EventRenderer } from "./render.js";
import { openStore } from "./store-option.js";
import { colorsFor, isInteractive } from "./terminal.js";
import { terminalText } from "./terminal-text.js";
import { RUN_HELP, UsageError } from "./usage.js";

/** `quiver run <agent-file>[#export] [prompt|-]`: one run, streamed; the exit code says how it ended. */
export async function runCommand(args: string[]): Promise<number> {
  const parsed = parseCommand(args, { ...AGENT_OPTIONS, ...FILE_OPTION }, RUN_HELP);
  if (flag(parsed, "help")) {
    process.stdout.write(`${RUN_HELP}\n`);
    return 0;
  }
  const [agentSpec, ...words] = parsed.positionals;
  if (!agentSpec) throw new UsageError("quiver run needs an agent file", RUN_HELP);
  const mode = modeOption(parsed, RUN_HELP);
  const prompt = await promptFrom(words);
  const files = await Promise.all(texts(parsed, "file").map((path) => readAttachment(path, RUN_HELP)));
  const agent = await withModel(await loadAgentFile(agentSpec), text(parsed, "model"));
  const opened = await openStore(text(parsed, "store"), null);
  try {
    const approvals = { dismissed: new Set<string>(), stored: opened !== undefined };
    const cliAgent = agentForCli(agent, { mode, approvals });
    const sessionId = text(parsed, "session");
    if (sessionId !== undefined && !opened)
      process.stderr.write(
        "note: --session without --store: this run is not kept, and nothing earlier is continued\n",
      );
    const handle = Runner.stream(cliAgent, withAttachments(prompt, files), {
      ...(opened && { store: opened.store }),
      ...(sessionId !== undefined && { sessionId }),
    });
    const json = flag(parsed, "json");
    const renderer = new EventRenderer({
      out: process.stdout,
      err: process.stderr,
      colors: colorsFor(process.stderr),
      showReasoning: flag(parsed, "show-reasoning"),
    });
    const outcome = await drive(handle, {
      json,
      renderer,
      interactive: isInteractive(),
      approvals,
      sessionAllowed: new Set(),
      agentDecides: agent.config.approvalHandler !== undefined,
      store: opened,
      agentSpec,
      footer: true,
    });
    if (outcome.error && json) process.stderr.write(`error: ${terminalText(outcome.error.message)}\n`);
    return outcome.code;
  } finally {
    await opened?.store.close();
  }
}

/** The prompt: the words given, or stdin when the prompt is "-" (or missing, with stdin piped). */
async function promptFrom(words: string[]): Promise<string> {
  const fromStdin = words.length === 1 && words[0] === "-";
  if (words.length && !fromStdin) return words.join(" ");
  if (!fromStdin && process.stdin.isTTY)
    throw new UsageError('quiver run needs a prompt (or "-" to read it from stdin)', RUN_HELP);
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const prompt = Buffer.concat(chunks).toString("utf8").trim();
  if (!prompt) throw new UsageError("the prompt read from stdin is empty", RUN_HELP);
  return prompt;
}
