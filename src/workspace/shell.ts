import { constants as osConstants } from "node:os";
import type { RunContext } from "../contract/run-context.js";
import { ToolError, UserError } from "../errors.js";
import { jsonSchema } from "../tool/json-schema.js";
import type { Validation } from "../tool/parameters.js";
import { Tool } from "../tool/tool.js";
import { loadBashParser, loadedBashParser } from "./bash-parser.js";
import { type ShellRule, shellRule } from "./command-rules.js";
import { OutputStreamer } from "./output-streamer.js";
import { realRoot } from "./paths.js";
import { type CommandOutcome, runCommand } from "./process-group.js";
import type { ProtectedPaths } from "./protected-paths.js";
import { bwrapArguments, planSandbox, type SandboxMode } from "./sandbox.js";
import { type ShellEnvironmentOption, shellEnvironment } from "./shell-environment.js";

export const DEFAULT_SHELL_TIMEOUT_MS = 120_000;
export const MAX_SHELL_TIMEOUT_MS = 600_000;
/** What the model reads of a command's output: head and tail of this much, the rest recallable. */
export const DEFAULT_SHELL_OUTPUT_CHARS = 30_000;

/**
 * How a command is started, replacing the built-in sandbox: wrap it to run commands in a
 * container or a sandbox of your own (the returned process gets its own process group, the
 * timeout and the kill all the same).
 *
 * @example
 * // a container per command
 * const executor: ShellExecutor = ({ command, cwd, env }) => ({
 *   file: "docker",
 *   args: ["run", "--rm", "--network=none", "-v", `${cwd}:${cwd}`, "-w", cwd, "node:20", "bash", "-c", command],
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
  env?: ShellEnvironmentOption;
  /**
   * Command prefixes that run without asking (`["git status", "npm test", "ls"]`): a command
   * line runs without asking only when a parse proves it is plain commands (no expansions, no
   * redirection to a file) and every one of them starts with one of these, word by word. Options
   * through which a known program writes a file or runs another still ask (`git diff --output=…`,
   * `sed -i`, `sort -o`, `find -exec`; `make` and `xargs` always do): see docs/permissions.md.
   */
  allow?: string[];
  /**
   * Command prefixes always refused, in every permission mode (`["rm -rf", "git push"]`), also
   * when nested, wrapped (`sudo`, `xargs`, `bash -c`…) or spelled differently (`\rm`, `rm -fr`).
   * A convenience against accidents, not a boundary: a determined command can evade any text rule.
   */
  deny?: string[];
  /** Characters of output the model reads (head + tail); the rest is kept for `recall_tool_result` in a stored run. Default 30,000. */
  maxOutputChars?: number;
  /**
   * Run each command in bubblewrap (`bwrap` on the command's PATH, Linux): its own PID namespace
   * (nothing outlives the call), the root writable but for its protected `.git`, hooks,
   * environment and editor settings, the rest of the file system read-only, a
   * private `/tmp`, no network unless `network`. `"auto"` (the default) falls back to running
   * without it when bwrap is missing or cannot work here; `"required"` refuses to run then;
   * `"off"` never uses it. The result's first line says which. An `executor` replaces it.
   */
  sandbox?: SandboxMode;
  /** Network access inside the sandbox (default `false`: only a loopback interface of its own). */
  network?: boolean;
};

type ShellArgs = { command: string; timeout_ms?: number; description?: string };

/** How one command was started, for the result's first line and `details.sandbox`. */
type Launch =
  | { sandbox: "bwrap"; network: boolean }
  | { sandbox: "none"; reason: string }
  | { sandbox: "executor" };

export function shellTool(
  root: string,
  options: ShellOptions,
  executor?: ShellExecutor,
  protectedPaths?: ProtectedPaths,
): Tool<ShellArgs> {
  const defaultTimeout = options.timeoutMs ?? DEFAULT_SHELL_TIMEOUT_MS;
  if (!Number.isFinite(defaultTimeout) || defaultTimeout <= 0 || defaultTimeout > MAX_SHELL_TIMEOUT_MS) {
    throw new UserError(
      `workspace shell timeoutMs must be between 1 and ${MAX_SHELL_TIMEOUT_MS}, got ${defaultTimeout}`,
    );
  }
  const sandbox = options.sandbox ?? "auto";
  if (!["required", "auto", "off"].includes(sandbox)) {
    throw new UserError(
      `workspace shell sandbox must be "required", "auto" or "off", got ${JSON.stringify(sandbox)}`,
    );
  }
  if (options.network !== undefined && typeof options.network !== "boolean") {
    throw new UserError(
      `workspace shell network must be true or false, got ${JSON.stringify(options.network)}`,
    );
  }
  return new ShellTool(root, options, sandbox, defaultTimeout, executor, protectedPaths);
}

class ShellTool extends Tool<ShellArgs> {
  readonly rule: ShellRule;
  readonly #env: Record<string, string>;

  constructor(
    readonly root: string,
    readonly options: ShellOptions,
    readonly sandbox: SandboxMode,
    readonly defaultTimeout: number,
    readonly executor: ShellExecutor | undefined,
    readonly protectedPaths: ProtectedPaths | undefined,
  ) {
    const rule = shellRule(options.allow ?? [], options.deny ?? []);
    super({
      name: "shell",
      label: "Shell",
      description:
        "Run a bash command in the workspace root (each call starts there; `cd` does not carry over). stdin is closed, so " +
        "interactive prompts fail instead of waiting: pass flags such as --yes. Processes left running in the " +
        `background are stopped when the command exits. Default timeout ${defaultTimeout.toLocaleString("en-US")} ms ` +
        `(at most ${MAX_SHELL_TIMEOUT_MS.toLocaleString("en-US")}). The result starts with the exit code and whether ` +
        "the command ran in a sandbox (there only the workspace, not its .git, and a private /tmp are writable, so git " +
        "commit fails, and the network " +
        "may be off); long output keeps its head and tail.",
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
      permissionRule: (args) => rule(args),
      describeCall: (args) => {
        const { command, description } = args as ShellArgs;
        return {
          description: description ? `${description}: ${command}` : `Run: ${command}`,
          details: { command },
        };
      },
    });
    this.#env = shellEnvironment(options.env);
    this.rule = rule;
  }

  /**
   * Arguments are parsed before permissions are checked: with allow or deny rules, that is
   * where the Bash parser loads (once, ~20 ms), so the synchronous rule has it at decision time.
   */
  override parseArguments(raw: unknown): Validation | Promise<Validation> {
    if (!this.rule.parses || loadedBashParser()) return super.parseArguments(raw);
    const parse = () => super.parseArguments(raw);
    // A parser that cannot load leaves the rule asking for every call (and deny refusing at execute).
    return loadBashParser().then(parse, parse);
  }

  override async execute({ command, timeout_ms }: ShellArgs, ctx: RunContext): Promise<unknown> {
    if (command.trim() === "") throw new ToolError("the command is empty");
    await this.#checkDeny(command);
    const cwd = await realRoot(this.root);
    // Cancelled while the root was resolved (the run may already have ended): nothing starts,
    // not even the executor's sandbox.
    ctx.signal.throwIfAborted();
    const { spec, launch } = await this.#launch(command, cwd);
    ctx.signal.throwIfAborted();
    const streamer = new OutputStreamer(ctx);
    let outcome: CommandOutcome;
    try {
      outcome = await runCommand(
        { file: spec.file, args: spec.args, cwd: spec.cwd ?? cwd, env: spec.env ?? this.#env },
        {
          timeoutMs: Math.min(timeout_ms ?? this.defaultTimeout, MAX_SHELL_TIMEOUT_MS),
          signal: ctx.signal,
          onOutput: (t) => streamer.push(t),
          // A PID namespace takes everything down with it; outside one, /proc is walked.
          trackDescendants: launch.sandbox !== "bwrap",
          terminateInside: launch.sandbox === "bwrap",
        },
      );
    } catch (error) {
      throw new ToolError(`could not start ${spec.file}: ${(error as Error).message}`);
    } finally {
      streamer.close();
    }
    if (outcome.cancelled) ctx.signal.throwIfAborted();
    if (launch.sandbox === "bwrap") outcome = signalFromSandbox(outcome);
    const details = {
      command,
      exitCode: outcome.exitCode,
      signal: outcome.signal,
      timedOut: outcome.timedOut,
      durationMs: outcome.durationMs,
      outputChars: outcome.output.length + outcome.droppedChars,
      sandbox: launch,
    };
    return {
      content: [{ type: "text" as const, text: `${statusLine(outcome, launch)}\n${outcome.output}` }],
      details,
    };
  }

  /** Deny rules hold here too, so a custom `Permissions` that ignores the rule cannot let a call through. */
  async #checkDeny(command: string): Promise<void> {
    if (!this.rule.parses) return;
    if (!loadedBashParser() && (this.options.deny?.length ?? 0) > 0) {
      try {
        await loadBashParser();
      } catch (error) {
        throw new ToolError(
          `refused: the deny rules cannot be checked because the Bash parser did not load (${(error as Error).message})`,
        );
      }
    }
    const verdict = this.rule.denies(command);
    if (verdict?.behavior === "deny") throw new ToolError(`refused: ${verdict.reason}`);
  }

  async #launch(command: string, cwd: string): Promise<{ spec: ReturnType<ShellExecutor>; launch: Launch }> {
    if (this.executor) {
      return {
        spec: this.executor({ command, cwd, env: { ...this.#env } }),
        launch: { sandbox: "executor" },
      };
    }
    const plain = { file: "bash", args: ["-c", command] };
    if (this.sandbox === "off") return { spec: plain, launch: { sandbox: "none", reason: 'sandbox: "off"' } };
    const plan = await planSandbox(this.#env.PATH, cwd);
    if ("bwrap" in plan) {
      const network = this.options.network ?? false;
      return {
        spec: {
          file: plan.bwrap,
          args: bwrapArguments({
            root: cwd,
            command,
            network,
            readOnly: this.protectedPaths?.readOnlyInSandbox(cwd),
          }),
        },
        launch: { sandbox: "bwrap", network },
      };
    }
    if (this.sandbox === "required") {
      throw new ToolError(`refused: the shell's sandbox is required, but ${plan.unavailable}`, {
        hint: 'install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or set shell: { sandbox: "auto" }',
      });
    }
    return { spec: plain, launch: { sandbox: "none", reason: plan.unavailable } };
  }
}

/**
 * bwrap reports a command killed by a signal as exit code 128 + the signal's number (as shells
 * do), so under the sandbox such a code names the signal too. A command that exits with 137 on
 * its own reads as killed by SIGKILL: the sandbox leaves no way to tell them apart.
 */
function signalFromSandbox(outcome: CommandOutcome): CommandOutcome {
  const code = outcome.exitCode;
  if (code === null || code <= 128 || code > 128 + 31 || outcome.signal !== null) return outcome;
  const name = Object.entries(osConstants.signals).find(([, n]) => n === code - 128)?.[0];
  return name === undefined ? outcome : { ...outcome, signal: name as NodeJS.Signals };
}

function statusLine(outcome: CommandOutcome, launch: Launch): string {
  const took = `${(outcome.durationMs / 1000).toFixed(1)} s`;
  const where =
    launch.sandbox === "bwrap"
      ? `sandboxed: bwrap, ${launch.network ? "network on" : "no network"}`
      : launch.sandbox === "executor"
        ? "custom executor"
        : "not sandboxed";
  if (outcome.timedOut) {
    return `[timed out after ${took}: the command and everything it started were stopped; ${where}]`;
  }
  if (outcome.exitCode !== null && outcome.signal !== null) {
    return `[killed by ${outcome.signal} (exit code ${outcome.exitCode} from the sandbox), ${took}${outcome.output === "" ? ", no output" : ""}, ${where}]`;
  }
  if (outcome.exitCode !== null) {
    return `[exit code ${outcome.exitCode}, ${took}${outcome.output === "" ? ", no output" : ""}, ${where}]`;
  }
  return `[killed by ${outcome.signal}, ${took}, ${where}]`;
}
