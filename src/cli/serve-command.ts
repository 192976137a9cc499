import { UserError } from "../errors.js";
import { loadAgentFile, modelName, withModel } from "./agent-file.js";
import { exitProcess, noteInterrupt } from "./interrupt.js";
import { flag, parseCommand, text } from "./options.js";
import { openStoreOrMemory } from "./store-option.js";
import { colorsFor } from "./terminal.js";
import { EXIT, SERVE_HELP, UsageError } from "./usage.js";

/**
 * `quiver serve <agent-file>`: the agent behind the bundled server (chat API, run streams, web
 * page), its runs in the default SQLite store unless `--store` says otherwise. Runs until
 * Ctrl+C or SIGTERM; then stops accepting connections, cancels the runs it drives, waits until
 * each has stored its end, closes the store and exits 130 or 143. A second signal exits at once.
 */
export async function serveCommand(args: string[]): Promise<number> {
  const parsed = parseCommand(
    args,
    {
      port: { type: "string" },
      hostname: { type: "string" },
      token: { type: "string" },
      store: { type: "string" },
      model: { type: "string" },
      a2a: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
    SERVE_HELP,
  );
  if (flag(parsed, "help")) {
    process.stdout.write(`${SERVE_HELP}\n`);
    return EXIT.completed;
  }
  const [agentSpec, ...extra] = parsed.positionals;
  if (!agentSpec) throw new UsageError("quiver serve needs an agent file", SERVE_HELP);
  if (extra.length) throw new UsageError(`unexpected argument "${extra[0]}"`, SERVE_HELP);
  const portText = text(parsed, "port") ?? "3000";
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65_535)
    throw new UsageError(`--port must be a number from 0 to 65535, got "${portText}"`, SERVE_HELP);
  const token = text(parsed, "token") ?? process.env.QUIVER_TOKEN;
  const agent = await withModel(await loadAgentFile(agentSpec), text(parsed, "model"));
  const { createServer, serve } = await import("../server/index.js");
  const a2a = flag(parsed, "a2a");
  // Before anything starts: a missing optional SDK is a UserError naming the install line.
  if (a2a) await (await import("../server/a2a-sdk.js")).loadA2aSdk();
  const opened = await openStoreOrMemory(text(parsed, "store"), (note) =>
    process.stderr.write(`${colorsFor(process.stderr).dim(note)}\n`),
  );
  const server = createServer({
    agent,
    store: opened.store,
    ...(token !== undefined && { auth: token }),
    ...(a2a && { a2a: true }),
  });
  const hostname = text(parsed, "hostname") ?? "127.0.0.1";
  let serving: Awaited<ReturnType<typeof serve>>;
  try {
    serving = await serve(server, { port, hostname });
  } catch (error) {
    await opened.store.close();
    // serve() names the library's option; here the way to give a token is the flag.
    if (token === undefined && /^refusing to listen on /.test((error as Error).message))
      throw new UserError(
        `refusing to listen on ${hostname} without a token: anyone who can reach it could run the agent. ` +
          "Pass --token <secret> (or set QUIVER_TOKEN), or leave --hostname at 127.0.0.1",
      );
    throw error;
  }
  const c = colorsFor(process.stdout);
  process.stdout.write(
    `${c.bold(`quiver serve · ${agent.name}`)} ${c.dim(`· model ${modelName(agent)} · store ${opened.spec}`)}\n` +
      `chat page   ${serving.url}/\n` +
      `chat API    POST ${serving.url}/api/chat\n` +
      `run events  GET ${serving.url}/api/runs/<runId>/events\n` +
      `AG-UI       POST ${serving.url}/api/ag-ui\n` +
      (a2a ? `A2A         ${serving.url}/.well-known/agent-card.json · POST ${serving.url}/a2a\n` : "") +
      `${token !== undefined ? "auth        Authorization: Bearer <token>\n" : c.dim("open on loopback only (no --token)\n")}` +
      c.dim("Ctrl+C stops the server\n"),
  );
  const codeOf = (signal: NodeJS.Signals) => {
    if (signal === "SIGTERM") return EXIT.terminated;
    noteInterrupt();
    return EXIT.cancelled;
  };
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  const again = (second: NodeJS.Signals) => exitProcess(codeOf(second));
  process.once("SIGINT", again);
  process.once("SIGTERM", again);
  process.stdout.write(
    c.dim(`${signal}: stopping, cancelling the runs in progress… (again to quit at once)\n`),
  );
  // Resolves once every run has stored its end (and its watchers got it): closing the store
  // before that would leave those runs `running` in it. A second signal is the way out of a wait.
  await serving.close({ timeoutMs: Number.POSITIVE_INFINITY });
  await opened.store.close();
  return codeOf(signal);
}
