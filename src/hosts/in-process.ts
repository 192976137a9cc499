import type { RunContext } from "../contract/run-context.js";
import { InvalidToolArguments, ToolError, UserError } from "../errors.js";
import { Tool } from "../tool/tool.js";
import { ChangeFeed } from "./change-feed.js";
import type { ToolHost, ToolHostChange } from "./tool-host.js";

/**
 * A programmable tool host: a live set of tools you can add to and take from while runs are
 * going on (plugins, feature flags, tools that only exist after a login). A run lists the
 * host at its start and again before the next model request whenever `watch()` reported a
 * change, so a tool registered mid-run is offered from the next turn on.
 *
 * Listed entries are the registered `Tool` objects themselves, so inside a run every tool
 * option (retries, timeouts, policies, renderers, approval) works exactly as for a tool
 * given to the agent directly.
 *
 * @example
 * const host = new InProcessToolHost([getWeather, deleteFile]);
 * host.register(extraTool);
 * host.unregister("delete_file");
 * const agent = new Agent({ name: "assistant", model, tools: host });
 */
export class InProcessToolHost implements ToolHost {
  readonly #tools = new Map<string, Tool>();
  readonly #changes = new ChangeFeed();

  /** `tools`: one tool or several (the same rules as `register`). */
  constructor(tools: Tool | Iterable<Tool> = []) {
    for (const tool of tools instanceof Tool ? [tools] : tools) this.register(tool);
  }

  /**
   * Adds a tool and tells every watcher (`{ kind: "added", name }`). A name that is already
   * registered is a `UserError`: silently replacing a tool would change what a running
   * agent can do without anyone deciding it. Unregister the old one first.
   */
  register(tool: Tool): this {
    if (!(tool instanceof Tool)) {
      throw new UserError(
        `InProcessToolHost.register() takes a tool (tool(), new Tool); got ${tool === null ? "null" : typeof tool}`,
      );
    }
    if (this.#tools.has(tool.name)) {
      throw new UserError(
        `InProcessToolHost already has a tool named "${tool.name}": unregister("${tool.name}") first, or rename the new one`,
      );
    }
    this.#tools.set(tool.name, tool);
    this.#emit({ kind: "added", name: tool.name });
    return this;
  }

  /**
   * Removes the tool named `name` and tells every watcher (`{ kind: "removed", name }`).
   * Returns whether there was one; removing an unknown name is not an error (it is already
   * in the state the caller wants). A call already running finishes normally.
   */
  unregister(name: string): boolean {
    if (!this.#tools.delete(name)) return false;
    this.#emit({ kind: "removed", name });
    return true;
  }

  /** Whether a tool named `name` is registered. */
  has(name: string): boolean {
    return this.#tools.has(name);
  }

  /** The registered tools, in registration order. */
  get tools(): Tool[] {
    return [...this.#tools.values()];
  }

  /** The registered tools, in registration order (what a run offers the model). */
  async listTools(_signal?: AbortSignal): Promise<Tool[]> {
    return [...this.#tools.values()];
  }

  /**
   * Runs one tool outside the runner's executor (a custom dispatcher, a test): its own
   * `prepareArguments` and validation, then `execute`. An unknown name is a `ToolError`,
   * invalid arguments an `InvalidToolArguments`. Inside a run the runner calls listed tools
   * directly instead, with retries, timeouts, policies and approvals.
   */
  async call(name: string, args: unknown, ctx: RunContext): Promise<unknown> {
    const tool = this.#tools.get(name);
    if (!tool) {
      const known = [...this.#tools.keys()];
      throw new ToolError(`no tool named "${name}" is registered`, {
        hint: known.length ? `Registered tools: ${known.join(", ")}.` : "No tools are registered.",
      });
    }
    const parsed = await tool.parseArguments(args);
    if (!parsed.ok) throw new InvalidToolArguments(name, parsed.issues);
    return await tool.execute(parsed.value, ctx);
  }

  /**
   * Every later `register` and `unregister`, as `{ kind, name }`. Any number of watchers may
   * be live at once; each ends when `signal` aborts or its reader stops.
   */
  watch(signal?: AbortSignal): AsyncIterableIterator<ToolHostChange> {
    return this.#changes.watch(signal);
  }

  #emit(change: ToolHostChange): void {
    this.#changes.emit(change);
  }
}
