import { timeoutSignal, untilAborted } from "../../abort.js";
import {
  DEFAULT_PLUGIN_TIMEOUT_MS,
  type Plugin,
  type PluginContext,
  PluginSetupError,
} from "../config/plugin.js";
import type { ActiveRun } from "../state/active-run.js";

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
    const deadline = timeoutSignal(ms);
    const signal = AbortSignal.any([run.control.signal, deadline.signal]);
    const ctx: PluginContext<any> = { ...run.baseContext(), agent: run.agent.name, signal };
    try {
      await within(() => entry.setup!(ctx), signal);
    } catch (error) {
      if (run.control.signal.aborted) return;
      const timedOut = signal.aborted;
      throw new PluginSetupError(
        entry.name,
        timedOut
          ? `plugin "${entry.name}" did not finish its setup within ${ms} ms, so the run cannot start; raise its timeoutMs if setup is slow`
          : `plugin "${entry.name}" failed to set up: ${(error as Error)?.message ?? String(error)}`,
        { cause: error },
      );
    } finally {
      deadline.clear();
    }
    done.push(entry);
  }
}

/** Whether the run's end waits for plugin teardowns (`teardownPlugins` returns a promise). */
export function pluginsSetUp(run: ActiveRun): boolean {
  return (started.get(run)?.length ?? 0) > 0;
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
    const deadline = timeoutSignal(ms);
    const { signal } = deadline;
    try {
      await within(() => entry.teardown!({ runId: run.runId, signal }), signal);
    } catch (error) {
      run.events.emit({
        type: "warning",
        code: "plugin_teardown_failed",
        message: signal.aborted
          ? `plugin "${entry.name}" did not finish its teardown within ${ms} ms; the run went on without waiting`
          : `plugin "${entry.name}" failed to tear down: ${(error as Error)?.message ?? String(error)}`,
      });
    } finally {
      deadline.clear();
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
  return untilAborted(work, signal);
}
