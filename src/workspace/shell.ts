import type { RunContext } from "../contract/run-context.js";
import { ToolError, UserError } from "../errors.js";
import { CALL_REVIEWS } from "../run/config/permissions.js";
import { jsonSchema } from "../tool/json-schema.js";
import { type Tool, tool } from "../tool/tool.js";
import { shellRule } from "./command-rules.js";
import { realRoot } from "./paths.js";
import { type CommandOutcome, runCommand } from "./process-group.js";

export const DEFAULT_SHELL_TIMEOUT_MS = 120_000;
export const MAX_SHELL_TIMEOUT_MS = 600_000;
/** What the model reads of a command's output: head and tail of this much, the rest recallable. */
export const DEFAULT_SHELL_OUTPUT_CHARS = 30_000;
/** `tool_call_update`s of streamed output: at most one per this many ms… */
const UPDATE_INTERVAL_MS = 250;
/** …each with at most this much of the output since the last one. */
const MAX_UPDATE_CHARS = 8_000;

/**
 * How a command is started. The default runs `bash -c <command>`; wrap it to run commands in
 * a sandbox or a container (the returned process gets its own process group all the same).
 *
 * @example
 * // bubblewrap: the workspace writable, the rest of the system read-only, no network
 * const executor: ShellExecutor = ({ command, cwd, env }) => ({
 *   file: "bwrap",
 *   args: ["--ro-bind", "/", "/", "--bind", cwd, cwd, "--dev", "/dev", "--unshare-net", "--die-with-parent",
 *          "--chdir", cwd, "bash", "-c", command],
 *   env,
 * });
 */
export type ShellExecutor = (request: { command: string; cwd: string; env: Record<string, string> }) => {
  file: string;
  args: string[];
  cwd?: string;
  env?: Record<string, string>;
};

/** The shell's settings (`workspace({ shell: { … } })`). */
export type ShellOptions = {
  /** Default timeout of one command, in ms (default 120,000; at most 600,000). */
  timeoutMs?: number;
  /**
   * The command's environment. Default: a minimal one (PATH, HOME, LANG, TERM=dumb, CI=1,
   * GIT_TERMINAL_PROMPT=0, PAGER=cat). `"inherit"`: this process's environment (with the same
   * non-interactive settings on top); a list of names: the minimal one plus those variables from
   * this process; an object: the minimal one plus these values.
   */
  env?: "minimal" | "inherit" | string[] | Record<string, string>;
  /**
   * Command prefixes that run without asking (`["git status", "npm test", "ls"]`): a compound
   * command runs without asking only when every part matches one.
   */
  allow?: string[];
  /** Command prefixes always refused, in every permission mode (`["rm -rf", "git push"]`). */
  deny?: string[];
  /** Characters of output the model reads (head + tail); the rest is kept for `recall_tool_result` in a stored run. Default 30,000. */
  maxOutputChars?: number;
};

type ShellArgs = { command: string; timeout_ms?: number; description?: string };

const NON_INTERACTIVE = {
  TERM: "dumb",
  CI: "1",
  GIT_TERMINAL_PROMPT: "0",
  PAGER: "cat",
  GIT_PAGER: "cat",
};

/** The environment a command gets, from the `env` option. */
export function shellEnvironment(env: ShellOptions["env"]): Record<string, string> {
  const minimal: Record<string, string> = {
    PATH: process.env.PATH || "/usr/local/bin:/usr/bin:/bin",
    HOME: process.env.HOME || "/",
    LANG: process.env.LANG || "C.UTF-8",
    ...NON_INTERACTIVE,
  };
  if (env === undefined || env === "minimal") return minimal;
  if (env === "inherit") {
    const inherited: Record<string, string> = {};
    for (const [key, value] of Object.entries(process.env)) if (value !== undefined) inherited[key] = value;
    return { ...inherited, ...NON_INTERACTIVE };
  }
  if (Array.isArray(env)) {
    const picked = { ...minimal };
    for (const name of env) {
      const value = process.env[name];
      if (value !== undefined) picked[name] = value;
    }
    return picked;
  }
  if (typeof env === "object" && env !== null) return { ...minimal, ...env };
  throw new UserError(
    `workspace shell env must be "minimal", "inherit", a list of names or an object, got ${JSON.stringify(env)}`,
  );
}

export function shellTool(root: string, options: ShellOptions, executor?: ShellExecutor): Tool<ShellArgs> {
  const defaultTimeout = options.timeoutMs ?? DEFAULT_SHELL_TIMEOUT_MS;
  if (!Number.isFinite(defaultTimeout) || defaultTimeout <= 0 || defaultTimeout > MAX_SHELL_TIMEOUT_MS) {
    throw new UserError(
      `workspace shell timeoutMs must be between 1 and ${MAX_SHELL_TIMEOUT_MS}, got ${defaultTimeout}`,
    );
  }
  const env = shellEnvironment(options.env);
  const rule = shellRule(options.allow ?? [], options.deny ?? []);
  const shell = tool({
    name: "shell",
    label: "Shell",
    description:
      "Run a bash command in the workspace root (each call starts there; `cd` does not carry over). stdin is closed, so " +
      "interactive prompts fail instead of waiting: pass flags such as --yes. Processes left running in the " +
      `background are stopped when the command exits. Default timeout ${defaultTimeout.toLocaleString("en-US")} ms ` +
      `(at most ${MAX_SHELL_TIMEOUT_MS.toLocaleString("en-US")}). The result starts with the exit code; long output ` +
      "keeps its head and tail.",
    parameters: jsonSchema<ShellArgs>({
      type: "object",
      properties: {
        command: { type: "string", description: "The bash command line to run." },
        timeout_ms: {
          type: "integer",
          minimum: 1,
          maximum: MAX_SHELL_TIMEOUT_MS,
          description: `Timeout in milliseconds. Default ${defaultTimeout}.`,
        },
        description: {
          type: "string",
          description: "What the command does, in a few words, for the person approving it.",
        },
      },
      required: ["command"],
      additionalProperties: false,
    }),
    destructive: true,
    parallel: false,
    maxOutputChars: options.maxOutputChars ?? DEFAULT_SHELL_OUTPUT_CHARS,
    execute: async ({ command, timeout_ms }, ctx) => {
      if (command.trim() === "") throw new ToolError("the command is empty");
      // Refused here too, so a custom Permissions that ignores the rule cannot let it through.
      const verdict = rule({ command });
      if (verdict?.behavior === "deny") throw new ToolError(`refused: ${verdict.reason}`);
      const cwd = await realRoot(root);
      // Cancelled while the root was resolved (the run may already have ended): nothing starts,
      // not even the executor's sandbox.
      ctx.signal.throwIfAborted();
      const spec = executor
        ? executor({ command, cwd, env: { ...env } })
        : { file: "bash", args: ["-c", command] };
      const streamer = new OutputStreamer(ctx);
      let outcome: CommandOutcome;
      try {
        outcome = await runCommand(
          { file: spec.file, args: spec.args, cwd: spec.cwd ?? cwd, env: spec.env ?? env },
          {
            timeoutMs: Math.min(timeout_ms ?? defaultTimeout, MAX_SHELL_TIMEOUT_MS),
            signal: ctx.signal,
            onOutput: (t) => streamer.push(t),
          },
        );
      } catch (error) {
        throw new ToolError(`could not start ${spec.file}: ${(error as Error).message}`);
      } finally {
        streamer.close();
      }
      if (outcome.cancelled) ctx.signal.throwIfAborted();
      const details = {
        command,
        exitCode: outcome.exitCode,
        signal: outcome.signal,
        timedOut: outcome.timedOut,
        durationMs: outcome.durationMs,
        outputChars: outcome.output.length + outcome.droppedChars,
      };
      return {
        content: [{ type: "text" as const, text: `${statusLine(outcome)}\n${outcome.output}` }],
        details,
      };
    },
  });
  CALL_REVIEWS.set(shell, {
    rule,
    describe: (args) => {
      const { command, description } = args as ShellArgs;
      return {
        description: description ? `${description}: ${command}` : `Run: ${command}`,
        details: { command },
      };
    },
  });
  return shell;
}

function statusLine(outcome: CommandOutcome): string {
  const took = `${(outcome.durationMs / 1000).toFixed(1)} s`;
  if (outcome.timedOut) {
    return `[timed out after ${took}: the command and everything it started were stopped]`;
  }
  if (outcome.exitCode !== null) {
    return `[exit code ${outcome.exitCode}, ${took}${outcome.output === "" ? ", no output" : ""}]`;
  }
  return `[killed by ${outcome.signal}, ${took}]`;
}

/** Streams output to `tool_call_update`, at most one update per interval, each bounded in size. */
class OutputStreamer {
  #pending = "";
  #timer: NodeJS.Timeout | undefined;
  #last = 0;

  constructor(readonly ctx: RunContext) {}

  push(text: string): void {
    this.#pending += text;
    if (this.#pending.length > MAX_UPDATE_CHARS * 2) this.#pending = this.#pending.slice(-MAX_UPDATE_CHARS);
    if (this.#timer) return;
    const wait = Math.max(0, this.#last + UPDATE_INTERVAL_MS - Date.now());
    this.#timer = setTimeout(() => this.#flush(), wait);
  }

  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#flush();
  }

  #flush(): void {
    this.#timer = undefined;
    if (!this.#pending) return;
    let output = this.#pending;
    if (output.length > MAX_UPDATE_CHARS) output = `[...]\n${output.slice(-MAX_UPDATE_CHARS)}`;
    this.#pending = "";
    this.#last = Date.now();
    this.ctx.update({ output });
  }
}
