import { readFileSync } from "node:fs";
import { type Agent, StandardPermissions } from "../index.js";
import { loadAgentFile, modelName, withModel } from "./agent-file.js";
import { ModePermissions } from "./agent-setup.js";
import { exitProcess, noteInterrupt } from "./interrupt.js";
import { flag, modeOption, parseCommand, text } from "./options.js";
import { openStore } from "./store-option.js";
import { EXIT, MCP_HELP, UsageError } from "./usage.js";

/**
 * `quiver mcp <agent-file>`: the agent as an MCP server, for Claude Desktop, Cursor, VS Code and
 * any other MCP client. Over stdio by default (the client starts this command; stdout is the
 * protocol, so everything else, the agent file's `console.log` included, goes to stderr), or
 * over streamable HTTP with `--http PORT`. The agent is one tool (its call is a run) unless
 * `--tools` exposes its tools one by one. Stdio ends when the client closes stdin (exit 0);
 * both end on Ctrl+C or SIGTERM (130, 143) once the calls in progress are cancelled.
 */
export async function mcpCommand(args: string[]): Promise<number> {
  const parsed = parseCommand(
    args,
    {
      http: { type: "string" },
      hostname: { type: "string" },
      token: { type: "string" },
      tools: { type: "boolean" },
      store: { type: "string" },
      model: { type: "string" },
      mode: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    MCP_HELP,
  );
  if (flag(parsed, "help")) {
    process.stdout.write(`${MCP_HELP}\n`);
    return EXIT.completed;
  }
  const [agentSpec, ...extra] = parsed.positionals;
  if (!agentSpec) throw new UsageError("quiver mcp needs an agent file", MCP_HELP);
  if (extra.length) throw new UsageError(`unexpected argument "${extra[0]}"`, MCP_HELP);
  const portText = text(parsed, "http");
  const port = Number(portText);
  if (portText !== undefined && (!/^\d+$/.test(portText) || port > 65_535))
    throw new UsageError(`--http must be a port number from 0 to 65535, got "${portText}"`, MCP_HELP);
  if (
    portText === undefined &&
    (text(parsed, "hostname") !== undefined || text(parsed, "token") !== undefined)
  )
    throw new UsageError("--hostname and --token go with --http PORT", MCP_HELP);
  const exposeTools = flag(parsed, "tools");
  if (exposeTools && text(parsed, "store") !== undefined)
    throw new UsageError("--store keeps the agent's runs; with --tools there are none", MCP_HELP);
  const mode = modeOption(parsed, MCP_HELP);
  // Over stdio, stdout carries the protocol: an agent file that logs must not corrupt it.
  if (portText === undefined) redirectConsoleToStderr();

  let agent = await withModel(await loadAgentFile(agentSpec), text(parsed, "model"));
  if (mode)
    agent = agent.clone({
      permissions: new ModePermissions(mode, agent.config.permissions ?? new StandardPermissions()),
    });
  const { mcpServer } = await import("../mcp-server/index.js");
  const opened = exposeTools ? undefined : await openStore(text(parsed, "store"), null);
  const version = packageVersion();
  const server = exposeTools
    ? mcpServer({ tools: agent.config.tools ?? [] }, { name: agent.name, version, ...toolSettings(agent) })
    : mcpServer({ agent }, { name: agent.name, version, ...(opened && { store: opened.store }) });
  const what = exposeTools ? "its tools" : `one tool, ${agent.name} · model ${modelName(agent)}`;
  const signals = stopSignal();
  try {
    if (portText === undefined) {
      const connection = await server.connect("stdio");
      process.stderr.write(`quiver mcp · ${agent.name} · ${what} · stdio\n`);
      const ended = await Promise.race([connection.closed.then(() => undefined), signals.next]);
      await server.close();
      return ended === undefined ? EXIT.completed : codeOf(ended);
    }
    const token = text(parsed, "token") ?? process.env.QUIVER_TOKEN;
    const listening = await server.listen({
      port,
      hostname: text(parsed, "hostname") ?? "127.0.0.1",
      ...(token !== undefined && { auth: token }),
    });
    process.stdout.write(
      `quiver mcp · ${agent.name} · ${what}\n` +
        `MCP endpoint ${listening.url}\n` +
        `${token !== undefined ? "auth         Authorization: Bearer <token>\n" : "open on loopback only (no --token)\n"}` +
        "Ctrl+C stops the server\n",
    );
    const signal = await signals.next;
    process.stderr.write(`${signal}: stopping, cancelling the calls in progress… (again to quit at once)\n`);
    await server.close();
    return codeOf(signal);
  } finally {
    signals.dispose();
    await opened?.store.close();
  }
}

/** The loop settings an agent gives its tools, for serving them without it. */
function toolSettings(agent: Agent<any, any>) {
  const c = agent.config;
  return {
    ...(c.permissions && { permissions: c.permissions }),
    ...(c.approvalTimeoutMs !== undefined && { approvalTimeoutMs: c.approvalTimeoutMs }),
    ...(c.defaultToolRetries !== undefined && { defaultToolRetries: c.defaultToolRetries }),
    ...(c.defaultToolTimeoutMs !== undefined && { defaultToolTimeoutMs: c.defaultToolTimeoutMs }),
    ...(c.maxToolOutputChars !== undefined && { maxToolOutputChars: c.maxToolOutputChars }),
    ...(c.maxImageBytes !== undefined && { maxImageBytes: c.maxImageBytes }),
    ...(c.toolResultRenderer && { toolResultRenderer: c.toolResultRenderer }),
  };
}

function redirectConsoleToStderr(): void {
  for (const method of ["log", "info", "debug"] as const) console[method] = console.error;
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return pkg.version;
}

const codeOf = (signal: NodeJS.Signals) => {
  if (signal === "SIGTERM") return EXIT.terminated;
  noteInterrupt();
  return EXIT.cancelled;
};

/** The first SIGINT or SIGTERM; a second one exits at once. */
function stopSignal(): { next: Promise<NodeJS.Signals>; dispose(): void } {
  let first: ((signal: NodeJS.Signals) => void) | undefined;
  const next = new Promise<NodeJS.Signals>((resolve) => {
    first = resolve;
  });
  let seen = false;
  const on = (signal: NodeJS.Signals) => {
    if (seen) exitProcess(codeOf(signal));
    seen = true;
    first?.(signal);
  };
  process.on("SIGINT", on);
  process.on("SIGTERM", on);
  return {
    next,
    dispose: () => {
      process.off("SIGINT", on);
      process.off("SIGTERM", on);
    },
  };
}
