import type { InstructionContext, InstructionFragment } from "../../contract/instructions.js";
import { UserError } from "../../errors.js";
import type { ToolHost } from "../../hosts/tool-host.js";
import type { Tool } from "../../tool/tool.js";

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
  // Not a spread: V8 freezes a spread's copy into dictionary mode, slow to read (see Agent).
  return Object.freeze(Object.assign({}, config, { kind: "plugin" as const }));
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
