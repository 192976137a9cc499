/** A command line that cannot be run as given: exit code 2, with help on stderr. */
export class UsageError extends Error {
  override name = "UsageError";
  /** The help text of the command that was misused (printed after the message). */
  readonly help: string;
  constructor(message: string, help: string) {
    super(message);
    this.help = help;
  }
}

/** Exit codes, as scripts rely on them. */
export const EXIT = {
  completed: 0,
  failed: 1,
  usage: 2,
  parked: 3,
  cancelled: 130,
  /** SIGTERM (128 + 15, what a shell reports for a process it ended): the run was cancelled and stored first. */
  terminated: 143,
} as const;

export const MAIN_HELP = `quiver — run, chat with and inspect Quiver agents

Usage:
  quiver run <agent-file>[#export] [prompt|-]   run once (prompt "-" or none: read stdin)
  quiver chat <agent-file>[#export]             an interactive conversation
  quiver serve <agent-file>[#export]            the HTTP API and web page
  quiver mcp <agent-file>[#export]              an MCP server (stdio, or --http PORT)
  quiver runs list|show|tail|decide|resume|cancel   stored runs
  quiver sessions list|clear                    stored sessions
  quiver demo                                   a scripted walk through the features
  quiver init [dir]                             write a starter agent file, agent.mjs

An agent file is a .js/.mjs module (.ts when tsx is installed) whose default export, or the
export named after #, is an Agent.

Common options:
  --store SPEC          sqlite:PATH, postgres://…, or memory (runs/sessions/chat/serve
                        default to sqlite:.quiver/quiver.db; run stores only when given)
  --model PROVIDER:ID   use this model instead of the agent's (e.g. openai:gpt-4.1-mini);
                        a,b,c is a fallback chain: a turn that fails on one goes to the next
  --json                one JSON event per line on stdout
  --show-reasoning      print the model's reasoning (hidden by default)
  -h, --help            help for a command

Exit codes: 0 completed, 1 failed, 2 usage error, 3 parked awaiting approval, 130 cancelled
(Ctrl+C), 143 terminated (SIGTERM; the run is cancelled and stored first).
Colors follow the terminal; NO_COLOR=1 turns them off.`;

export const RUN_HELP = `Usage: quiver run <agent-file>[#export] [prompt|-] [options]

Runs the agent once on the prompt (or on stdin when the prompt is "-" or missing and stdin is
not a terminal) and streams what it does.

Options:
  --json                  one JSON event per line on stdout (serializeEvent)
  --store SPEC            persist the run: sqlite:PATH | postgres://… | memory; a call that
                          needs approval with no terminal to ask then parks the run (exit 3)
  --session ID            continue (and store) this session's conversation (needs --store)
  --model PROVIDER:ID     override the agent's model (a,b: a fallback chain)
  --mode MODE             permission mode: default | acceptEdits | bypass
  --file PATH             send a file with the prompt (repeatable): png, jpg, gif, webp, pdf,
                          wav, mp3, txt, md, csv, json — by its extension
  --show-reasoning        print the model's reasoning`;

export const CHAT_HELP = `Usage: quiver chat <agent-file>[#export] [options]

An interactive conversation in the terminal. Type a message and press Enter; /exit or Ctrl+D
leaves. Ctrl+C while the agent works cancels its run; a second Ctrl+C exits. /file PATH
attaches a file (an image, a PDF, audio, a text file) to your next message.

Options:
  --session ID            continue this session (default: a new one)
  --store SPEC            where runs and sessions are kept (default sqlite:.quiver/quiver.db)
  --mode MODE             permission mode: default | acceptEdits | bypass
  --model PROVIDER:ID     override the agent's model (a,b: a fallback chain)
  --file PATH             send a file with the first message (repeatable; /file PATH later)
  --show-reasoning        print the model's reasoning`;

export const SERVE_HELP = `Usage: quiver serve <agent-file>[#export] [options]

Serves the agent over HTTP (the chat API, AG-UI, the run event streams and the web page).

Options:
  --port N                port to listen on (default 3000; 0 picks a free one)
  --hostname HOST         address to bind (default 127.0.0.1)
  --token T               require "Authorization: Bearer T" (needed off loopback)
  --store SPEC            where runs are kept (default sqlite:.quiver/quiver.db)
  --model PROVIDER:ID     override the agent's model (a,b: a fallback chain)
  --a2a                   also serve it over A2A (needs: npm install @a2a-js/sdk@1)`;

export const MCP_HELP = `Usage: quiver mcp <agent-file>[#export] [options]

Serves the agent to MCP clients (Claude Desktop, Cursor, VS Code, …): over stdio by default (the
client starts this command), or over streamable HTTP with --http. The agent is one tool, named
after it, whose call is a run; --tools offers its tools one by one instead. Calls that need
approval are asked of the client (MCP elicitation) and refused when it cannot be asked.

Options:
  --http PORT             streamable HTTP on this port (0 picks a free one) at /mcp
  --hostname HOST         address to bind with --http (default 127.0.0.1)
  --token T               with --http: require "Authorization: Bearer T" (needed off loopback)
  --tools                 offer the agent's tools instead of the agent
  --store SPEC            keep the agent's runs: sqlite:PATH | postgres://… | memory (default: none)
  --model PROVIDER:ID     override the agent's model (a,b: a fallback chain)
  --mode MODE             permission mode: default | acceptEdits | bypass`;

export const RUNS_HELP = `Usage: quiver runs <command> [options]

Commands:
  list [--status running|parked|completed|failed] [--json]
  show <runId> [--json]                 transcript, calls, approvals, usage and cost
  tail <runId> [--json]                 print the run's events and follow new ones
  decide <runId> <callId> --approve|--deny [--reason TEXT]
                                        decide a parked call, or answer the prompt of a
                                        run live in another quiver process
  resume <runId> <agent-file>[#export] [--json]
  cancel <runId>                        end a parked or abandoned run as cancelled

Options:
  --store SPEC            sqlite:PATH | postgres://… (default sqlite:.quiver/quiver.db)`;

export const SESSIONS_HELP = `Usage: quiver sessions <command> [options]

Commands:
  list [--json]           sessions with their number of runs
  clear <sessionId>       delete every run of a session

Options:
  --store SPEC            sqlite:PATH | postgres://… (default sqlite:.quiver/quiver.db)`;

export const DEMO_HELP = `Usage: quiver demo [--json] [--model PROVIDER:ID] [--show-reasoning]

Plays a short scripted session with the workspace's file and shell tools on a temporary copy of
some of the package's files — parallel calls, a retry, streamed shell output cut to head + tail,
an edit that asks for approval — with a ScriptedModel (a fixed script, not a language model).
--model drives it with a real model.`;

export const INIT_HELP = `Usage: quiver init [dir] [--force]

Writes a starter agent file, agent.mjs, into dir (default: the current folder): an agent with
the built-in now tool and a save_note tool that asks before it writes. With no model set it is
played by a ScriptedModel; --model provider:id or QUIVER_MODEL gives it a real one.

Options:
  --force                 replace an existing agent.mjs`;
