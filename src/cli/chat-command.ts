import { randomBytes } from "node:crypto";
import { ScriptedModel } from "../model/scripted.js";
import type { Agent } from "../run/config/agent.js";
import { Runner } from "../run/runner.js";
import { loadAgentFile, modelName, withModel } from "./agent-file.js";
import { agentForCli } from "./agent-setup.js";
import { attachmentLabel, readAttachment, withAttachments } from "./attachments.js";
import { cancelStoredRun } from "./cancel-run.js";
import { drive } from "./drive.js";
import { noteInterrupt } from "./interrupt.js";
import { LineReader } from "./line-reader.js";
import { AGENT_OPTIONS, FILE_OPTION, flag, modeOption, parseCommand, text, texts } from "./options.js";
import { EventRenderer } from "./render.js";
import { type OpenedStore, openStoreOrMemory, storeArgument } from "./store-option.js";
import { colorsFor, isInteractive } from "./terminal.js";
import { terminalText } from "./terminal-text.js";
import { CHAT_HELP, EXIT, UsageError } from "./usage.js";

/**
 * `quiver chat <agent-file>`: a conversation in the terminal. Each message is one run of the
 * session (kept in the store, so `--session ID` continues it later); replies stream, calls
 * print as they happen, approvals are asked at the keyboard.
 */
export async function chatCommand(args: string[]): Promise<number> {
  const parsed = parseCommand(args, { ...AGENT_OPTIONS, ...FILE_OPTION }, CHAT_HELP);
  if (flag(parsed, "help")) {
    process.stdout.write(`${CHAT_HELP}\n`);
    return EXIT.completed;
  }
  const [agentSpec, ...extra] = parsed.positionals;
  if (!agentSpec) throw new UsageError("quiver chat needs an agent file", CHAT_HELP);
  if (extra.length) throw new UsageError(`unexpected argument "${extra[0]}"`, CHAT_HELP);
  if (flag(parsed, "json")) throw new UsageError("--json is for quiver run; chat is for a person", CHAT_HELP);
  const mode = modeOption(parsed, CHAT_HELP);
  // `--file` goes with the first message; `/file PATH` adds one to the next.
  let attached = await Promise.all(texts(parsed, "file").map((path) => readAttachment(path, CHAT_HELP)));
  const agent = await withModel(await loadAgentFile(agentSpec), text(parsed, "model"));
  const c = colorsFor(process.stdout);
  const opened = await openStoreOrMemory(text(parsed, "store"), (note) =>
    process.stdout.write(`${c.dim(note)}\n`),
  );
  const reader = new LineReader();
  // SIGTERM ends the chat: a reply being written is cancelled and stored first (drive() does
  // that), a wait for the next message ends at once; then the exit code is 143.
  const terminate = new AbortController();
  const onTerminate = () => terminate.abort();
  process.on("SIGTERM", onTerminate);
  try {
    const approvals = { dismissed: new Set<string>(), stored: true };
    const cliAgent = agentForCli(agent, { mode, approvals });
    const given = text(parsed, "session");
    const sessionId =
      given ?? `chat-${new Date().toISOString().slice(0, 10)}-${randomBytes(3).toString("hex")}`;
    const resumed = given !== undefined && (await opened.store.listRuns({ sessionId })).length > 0;
    banner(agent, sessionId, resumed, opened, c);
    const renderer = new EventRenderer({
      out: process.stdout,
      err: process.stderr,
      colors: colorsFor(process.stderr),
      showReasoning: flag(parsed, "show-reasoning"),
    });
    const sessionAllowed = new Set<string>();
    let parkedRun: string | undefined;
    let interrupted = false;
    while (!terminate.signal.aborted) {
      const read = await reader.read(c.bold(c.cyan("› ")), terminate.signal);
      if ("eof" in read || "stopped" in read) break;
      // Ctrl+C on an empty line leaves like /exit (the session line below), with 130.
      if ("interrupt" in read) {
        interrupted = true;
        noteInterrupt();
        break;
      }
      const message = read.line.trim();
      if (!message) continue;
      if (message === "/exit" || message === "/quit") break;
      if (message === "/help") {
        process.stdout.write(`${CHAT_HELP}\n`);
        continue;
      }
      if (message === "/file" || message.startsWith("/file ")) {
        const path = message.slice("/file".length).trim();
        try {
          if (!path) throw new Error("/file needs a path: /file chart.png");
          const part = await readAttachment(path, CHAT_HELP);
          attached.push(part);
          process.stdout.write(
            c.dim(`attached ${attachmentLabel(path, part)}: it goes with your next message\n`),
          );
        } catch (error) {
          process.stdout.write(`${c.red((error as Error).message)}\n`);
        }
        continue;
      }
      if (parkedRun) {
        // The session's next run starts from the parked one's transcript, whose calls have no
        // results yet: moving on means giving up on them, so they get cancelled results.
        await abandonParked(opened, parkedRun, renderer);
        parkedRun = undefined;
      }
      const input = withAttachments(message, attached);
      attached = [];
      const handle = Runner.stream(cliAgent, input, { store: opened.store, sessionId });
      const outcome = await drive(handle, {
        json: false,
        renderer,
        interactive: isInteractive(),
        approvals,
        sessionAllowed,
        agentDecides: agent.config.approvalHandler !== undefined,
        store: opened,
        agentSpec,
      });
      renderer.settle();
      if (outcome.code === EXIT.parked) parkedRun = handle.runId;
      if (outcome.error) renderer.note(renderer.colors.red(`error: ${terminalText(outcome.error.message)}`));
      else if (outcome.code === EXIT.cancelled || outcome.code === EXIT.terminated)
        renderer.note(renderer.colors.yellow("(cancelled)"));
      process.stdout.write("\n");
    }
    process.stdout.write(
      c.dim(
        opened.spec === "memory"
          ? `session ${sessionId} — not stored (a memory store ends with this process): give --store sqlite:PATH to continue a chat later\n`
          : `session ${sessionId} — continue with: quiver chat ${agentSpec} --session ${sessionId}${storeArgument(opened)}\n`,
      ),
    );
    if (terminate.signal.aborted) return EXIT.terminated;
    return interrupted ? EXIT.cancelled : EXIT.completed;
  } finally {
    process.off("SIGTERM", onTerminate);
    reader.close();
    await opened.store.close();
  }
}

async function abandonParked(opened: OpenedStore, runId: string, renderer: EventRenderer): Promise<void> {
  const c = renderer.colors;
  const summary = await opened.store.getRun(runId);
  if (summary?.status !== "parked") return; // decided and resumed elsewhere meanwhile
  try {
    const { pending } = await cancelStoredRun(opened.store, runId);
    renderer.note(
      c.dim(
        `(the parked run ${runId} was cancelled: ${pending === 1 ? "its call was" : `${pending} calls were`} not run)`,
      ),
    );
  } catch (error) {
    renderer.note(
      c.yellow(
        `could not cancel the parked run ${runId}: ${terminalText(error instanceof Error ? error.message : String(error))}`,
      ),
    );
  }
}

function banner(
  agent: Agent<any, any>,
  sessionId: string,
  resumed: boolean,
  opened: OpenedStore,
  c: ReturnType<typeof colorsFor>,
): void {
  const model = agent.config.model;
  const scripted =
    model instanceof ScriptedModel ||
    (typeof model === "object" && !Array.isArray(model) && (model as { name?: string }).name === "scripted");
  process.stdout.write(`${c.bold(`quiver chat · ${agent.name}`)} ${c.dim(`· model ${modelName(agent)}`)}\n`);
  if (scripted)
    process.stdout.write(
      c.yellow(
        "This agent's model is a ScriptedModel: it plays a fixed script and is not a language model.\n",
      ) + c.dim("Use --model provider:id (e.g. openai:gpt-4.1-mini) to talk to a real one.\n"),
    );
  process.stdout.write(
    c.dim(
      `session ${sessionId}${resumed ? " (continued)" : ""} · store ${opened.spec}\n` +
        "/exit or Ctrl+D leaves · Ctrl+C cancels a reply\n",
    ),
  );
}
