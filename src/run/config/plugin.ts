import type { InstructionContext, InstructionFragment } from "../../contract/instructions.js";
import { UserError } from "../../errors.js";
import type { ToolHost } from "../../hosts/tool-host.js";
import type { Tool } from "../../tool/tool.js";
import type { ActiveRun } from "../state/active-run.js";

/** What a plugin's `setup` receives: the run's context (its `signal` ends with the run or the setup's timeout). */
export type PluginContext<Deps = unknown> = InstructionContext<Deps>;

/** What a plugin's `teardown` receives: `signal` aborts when its time is up. */
export type PluginTeardownContext = { runId: string; signal: AbortSignal };

/** A plugin's tools: tools and tool hosts, one or a list (read-only lists welcome). */
export type PluginTools = Tool<any, any> | ToolHost | ReadonlyArray<Tool<any, any> | ToolHost>;

/** Everything `plugin()` accepts. Only `name` is required. */
export interface PluginConfig<Deps = unknown> {
  /** Names the plugin in errors (a tool-name clash, a failed setup). 1-64 letters, digits, " _.-". */
  name: string;
  tools?: PluginTools;
  /** Prompt text that comes with the tools: added after the agent's own instructions. */
  instructions?: InstructionFragment<Deps> | ReadonlyArray<InstructionFragment<Deps>>;
  /** Runs once per run, before its first model request. A failure (or a timeout) fails the run. */
  setup?: (ctx: PluginContext<Deps>) => void | Promise<void>;
  /** Runs once after the run ends — completed, failed, cancelled or parked — if `setup` ran. */
  teardown?: (ctx: PluginTeardownContext) => void | Promise<void>;
  /** How long `setup` and `teardown` may each take. Default 30,000. */
  timeoutMs?: number;
}

/** A packaged capability: tools, the prompt text that explains them, and their lifecycle. */
export type Plugin<Deps = unknown> = Readonly<PluginConfig<Deps>> & { readonly kind: "plugin" };

/** A plugin's `setup` failed or timed out: the run fails with this error. */
export class PluginSetupError extends Error {
  override name = "PluginSetupError";
  readonly plugin: string;
  constructor(plugin: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.plugin = plugin;
  }
}

export const DEFAULT_PLUGIN_TIMEOUT_MS = 30_000;
const PLUGIN_NAME = /^[a-zA-Z0-9_-][a-zA-Z0-9 _.-]{0,63}$/;

/**
 * Packages tools with the prompt text that explains them and a lifecycle, as one value an
 * agent takes in `plugins`. Tool names stay unique across the agent's tools, hosts, plugins
 * and handoffs: a clash fails the run at its start, naming both sources.
 *
 * @example
 * const web = plugin({
 *   name: "web",
 *   tools: [webFetch()],
 *   instructions: "Cite the URL of every page you quote.",
 * });
 * const agent = new Agent({ name: "researcher", model, plugins: [web] });
 */
export function plugin<Deps = unknown>(config: PluginConfig<Deps>): Plugin<Deps> {
  if (config === null || typeof config !== "object")
    throw new UserError(
      "plugin() takes an object: plugin({ name, tools?, instructions?, setup?, teardown? })",
    );
  const { name, setup, teardown, timeoutMs } = config;
  if (typeof name !== "string" || !PLUGIN_NAME.test(name)) {
    throw new UserError(`invalid plugin name ${JSON.stringify(name)}: use 1-64 letters, digits, " _.-"`);
  }
  for (const [field, value] of [
    ["setup", setup],
    ["teardown", teardown],
  ] as const) {
    if (value !== undefined && typeof value !== "function")
      throw new UserError(`plugin "${name}": ${field} must be a function`);
  }
  if (timeoutMs !== undefined && (!Number.isFinite(timeoutMs) || timeoutMs <= 0))
    throw new UserError(
      `plugin "${name}": timeoutMs must be a positive number of milliseconds, got ${timeoutMs}`,
    );
  return Object.freeze({ ...config, kind: "plugin" as const });
}

/** Checks an agent's `plugins`: plugin values with distinct names. */
export function checkPlugins(
  plugins: readonly Plugin<any>[] | undefined,
  agent: string,
): readonly Plugin<any>[] {
  if (plugins === undefined) return [];
  if (!Array.isArray(plugins))
    throw new UserError(`agent "${agent}": plugins must be an array of plugin() values`);
  const names = new Set<string>();
  for (const entry of plugins) {
    if (entry?.kind !== "plugin")
      throw new UserError(
        `agent "${agent}": every entry of plugins must come from plugin(); got ${typeof entry}`,
      );
    if (names.has(entry.name))
      throw new UserError(
        `agent "${agent}" has two plugins named "${entry.name}": plugin names must be unique`,
      );
    names.add(entry.name);
  }
  return plugins;
}

/** The plugins set up in a run, in setup order. */
const started = new WeakMap<ActiveRun, Plugin<any>[]>();

/**
 * Sets up the plugins of `plugins` the run has not set up yet (a handoff may bring new ones).
 * A failure or timeout rejects with `PluginSetupError`; a cancelled run stops waiting at once.
 */
export async function setupPlugins(run: ActiveRun, plugins: readonly Plugin<any>[]): Promise<void> {
  let done = started.get(run);
  if (!done) {
    done = [];
    started.set(run, done);
  }
  for (const entry of plugins) {
    if (done.includes(entry)) continue;
    if (!entry.setup) {
      done.push(entry);
      continue;
    }
    const ms = entry.timeoutMs ?? DEFAULT_PLUGIN_TIMEOUT_MS;
    const signal = AbortSignal.any([run.signal, AbortSignal.timeout(ms)]);
    const ctx: PluginContext<any> = { ...run.baseContext(), agent: run.agent.name, signal };
    try {
      await within(() => entry.setup!(ctx), signal);
    } catch (error) {
      if (run.signal.aborted) return;
      const timedOut = signal.aborted;
      throw new PluginSetupError(
        entry.name,
        timedOut
          ? `plugin "${entry.name}" did not finish its setup within ${ms} ms, so the run cannot start; raise its timeoutMs if setup is slow`
          : `plugin "${entry.name}" failed to set up: ${(error as Error)?.message ?? String(error)}`,
        { cause: error },
      );
    }
    done.push(entry);
  }
}

/**
 * Tears down every plugin the run set up, newest first. Each gets `timeoutMs`; a failing or
 * hanging teardown is reported as a `plugin_teardown_failed` warning and never holds the run.
 */
export function teardownPlugins(run: ActiveRun): Promise<void> | undefined {
  const done = started.get(run);
  // No promise when nothing was set up: most runs have no plugins, and this runs at every run's end.
  if (!done?.length) return undefined;
  started.delete(run);
  return teardownAll(run, done.reverse());
}

async function teardownAll(run: ActiveRun, plugins: Plugin<any>[]): Promise<void> {
  for (const entry of plugins) {
    if (!entry.teardown) continue;
    const ms = entry.timeoutMs ?? DEFAULT_PLUGIN_TIMEOUT_MS;
    const signal = AbortSignal.timeout(ms);
    try {
      await within(() => entry.teardown!({ runId: run.runId, signal }), signal);
    } catch (error) {
      run.emit({
        type: "warning",
        code: "plugin_teardown_failed",
        message: signal.aborted
          ? `plugin "${entry.name}" did not finish its teardown within ${ms} ms; the run went on without waiting`
          : `plugin "${entry.name}" failed to tear down: ${(error as Error)?.message ?? String(error)}`,
      });
    }
  }
}

/** Runs `fn` until it settles or `signal` aborts, whichever is first (a hung promise is abandoned, its rejection caught). */
function within(fn: () => void | Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  let work: Promise<void>;
  try {
    work = Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(error);
  }
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      () => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      },
      (error) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
