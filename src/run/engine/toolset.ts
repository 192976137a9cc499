import type { Stopper } from "../../abort.js";
import type { RunContext } from "../../contract/run-context.js";
import { ToolError, UserError } from "../../errors.js";
import { type HostedTool, isToolHost, type ToolHost } from "../../hosts/tool-host.js";
import type { ToolSpec } from "../../model/types.js";
import { thrownMessage } from "../../thrown.js";
import { jsonSchema } from "../../tool/json-schema.js";
import { Tool } from "../../tool/tool.js";
import type { AgentTools } from "../config/agent.js";
import { describeToolEntry } from "../config/agent-tools.js";
import type { PluginTools } from "../config/plugin.js";

/** A host failed to carry out a call (transport, crash): reported as `host_error`. */
export class HostCallError extends Error {
  override name = "HostCallError";
}

/** A tool listed by a `ToolHost`: validated against the listed schema, run by `host.call`. */
class HostedToolAdapter extends Tool {
  readonly #host: ToolHost;
  /** Its description came from a peer the user did not vet (see `HostedTool`). */
  readonly untrustedDescription: boolean;
  constructor(host: ToolHost, listed: HostedTool) {
    const { name, description, parameters, strict: _strict, untrustedDescription, ...hints } = listed;
    super({ ...hints, name, description, parameters: jsonSchema(parameters) });
    this.#host = host;
    this.untrustedDescription = untrustedDescription === true;
  }
  override async execute(args: unknown, ctx: RunContext): Promise<unknown> {
    try {
      return await this.#host.call(this.name, args, ctx);
    } catch (error) {
      // A ToolError is the tool speaking (MCP `isError`); anything else is the host failing.
      if (error instanceof ToolError || ctx.signal.aborted) throw error;
      throw new HostCallError(thrownMessage(error), { cause: error });
    }
  }
}

type HostEntry = { tools: Tool[]; key: string; dirty: boolean; watching: boolean };

/** Tools from one place, and how a name clash names that place ("the agent's tools", `plugin "web"`). */
export type ToolGroup = { from: string; tools: AgentTools | PluginTools | undefined };
type Source = { source: Tool | ToolHost; from: string };

/**
 * The tools one agent offers in one run: its own tools plus what its hosts list, with names
 * unique across every source. Hosts are listed at run start and re-listed before a model
 * request when they have no `watch`, or when their `watch` reported a change.
 */
export class Toolset {
  readonly #sources: Source[];
  readonly #hasHosts: boolean;
  #listed = false;
  readonly #hosts = new Map<ToolHost, HostEntry>();
  /** Ends host listings and watches when the run ends (not only when it is cancelled); made only when there are hosts. */
  #lifetime: AbortController | undefined;
  /** The run's stop; kept only when there are hosts (a toolset without is shared by runs). */
  readonly #run: Stopper | undefined;
  /** The `strict` warnings of the tools, found once per listing. */
  #warnings: ToolWarning[] = [];
  /** Says what went wrong listing a host again mid-run (each message once per run). */
  readonly #onWarning: ((warning: HostWarning) => void) | undefined;
  readonly #warned = new Set<string>();
  #byName = new Map<string, Tool>();
  #specs: ToolSpec[] = [];
  #describedByPeer: string | undefined;

  /** `tools` is one list (the agent's tools), or groups whose names a clash reports. */
  constructor(
    tools: AgentTools | ToolGroup[] | undefined,
    run: Stopper,
    onWarning?: (warning: HostWarning) => void,
  ) {
    this.#sources = [];
    const groups = isGroupList(tools) ? tools : [{ from: "the agent's tools", tools }];
    for (const group of groups) {
      const list = group.tools === undefined ? [] : isList(group.tools) ? group.tools : [group.tools];
      for (const source of list) {
        if (!(source instanceof Tool) && !isToolHost(source)) {
          throw new UserError(
            `${group.from} must be tools (tool(), new Tool) or ToolHosts; got ${describeToolEntry(source)}`,
          );
        }
        this.#sources.push({ source, from: group.from });
      }
    }
    this.#hasHosts = this.#sources.some(({ source }) => !(source instanceof Tool));
    this.#run = this.#hasHosts ? run : undefined;
    this.#onWarning = this.#hasHosts ? onWarning : undefined;
  }

  /**
   * The toolset for `groups`: one without hosts has nothing per run — the same tools give the
   * same names, specs and warnings — so it is built, checked and listed once and shared by every
   * run whose tools are the same ones (compared by identity, in order), whichever agent offers
   * them: a server that makes a new `Agent` per request over tools defined once builds none per
   * request. With hosts, a fresh one per run.
   */
  static forRun(groups: ToolGroup[], run: Stopper, onWarning?: (warning: HostWarning) => void): Toolset {
    const key = firstSource(groups) ?? NO_TOOLS;
    const cached = shared.get(key);
    if (cached !== undefined)
      for (const toolset of cached) if (Toolset.#same(toolset, groups)) return toolset;
    const toolset = new Toolset(groups, run, onWarning);
    if (toolset.#hasHosts) return toolset;
    toolset.#listed = true;
    toolset.#reindex();
    if (cached === undefined) shared.set(key, [toolset]);
    else {
      // A few lists per first tool; past that the oldest goes (it is rebuilt if it comes back).
      if (cached.length >= SHARED_PER_KEY) cached.shift();
      cached.push(toolset);
    }
    return toolset;
  }

  /** True when `groups` hold exactly the sources of `toolset`, in order. */
  static #same(toolset: Toolset, groups: ToolGroup[]): boolean {
    const sources = toolset.#sources;
    let i = 0;
    for (const group of groups) {
      const tools = group.tools;
      if (tools === undefined) continue;
      if (isList(tools)) {
        for (const source of tools) if (sources[i++]?.source !== source) return false;
      } else if (sources[i++]?.source !== tools) return false;
    }
    return i === sources.length;
  }

  /** Whether tools come from hosts (listed per run), or only from tools given directly. */
  get hasHosts(): boolean {
    return this.#hasHosts;
  }

  /**
   * Warnings about the tools, emitted once per run: one that asked for `strict` where its schema
   * cannot be strict; one of the agent's own with no description (a port from a framework that
   * read docstrings loses them), of which the model sees only the name.
   */
  get warnings(): readonly ToolWarning[] {
    return this.#warnings;
  }

  /** Lists what needs listing and rebuilds the name index. Throws `UserError` on a name clash. */
  /** Resolves at once (no promise) when there are no hosts: the common case costs nothing per turn. */
  refresh(): Promise<void> | undefined {
    if (this.#listed && !this.#hasHosts) return undefined;
    return this.#refresh();
  }

  async #refresh(): Promise<void> {
    let changed = !this.#listed;
    this.#listed = true;
    for (const { source, from } of this.#sources) {
      if (source instanceof Tool) continue;
      if (await this.#listHost(source, from)) changed = true;
    }
    if (changed) this.#reindex();
  }

  /** Indexes every tool by name (a clash is a `UserError`), and their specs and warnings. */
  #reindex(): void {
    const byName = this.#index(true);
    this.#byName = byName;
    this.#specs = [...byName.values()].map((tool) => tool.toSpec());
    this.#describedByPeer = undefined;
    for (const tool of byName.values()) {
      if (tool instanceof HostedToolAdapter && tool.untrustedDescription) {
        this.#describedByPeer = tool.name;
        break;
      }
    }
    this.#warnings = [];
    for (const tool of byName.values())
      if (tool.strictWarning)
        this.#warnings.push({ code: "strict_unsupported", message: tool.strictWarning });
    for (const { source } of this.#sources) {
      if (source instanceof Tool && source.description.trim() === "")
        this.#warnings.push({
          code: "tool_without_description",
          message: `tool "${source.name}" has no description: the model sees only its name and parameters; say what it does and when to use it`,
        });
    }
  }

  /**
   * Checks the names of the tools given directly (not those hosts will list): a clash among
   * them is a `UserError` before anything else of the run happens (a plugin's setup).
   */
  checkNames(): void {
    this.#index(false);
  }

  #index(withHosts: boolean): Map<string, Tool> {
    const byName = new Map<string, Tool>();
    const fromOf = new Map<string, string>();
    const add = (tool: Tool, from: string) => {
      const existing = fromOf.get(tool.name);
      if (existing !== undefined) {
        const where = existing === from ? `both in ${from}` : `one in ${existing}, one in ${from}`;
        throw new UserError(
          `two tools are named "${tool.name}" (${where}): tool names must be unique across an agent's tools, ` +
            "tool hosts, plugins, workspace and handoffs; rename one, leave one out, or give the host a prefix",
        );
      }
      byName.set(tool.name, tool);
      fromOf.set(tool.name, from);
    };
    for (const { source, from } of this.#sources) {
      if (source instanceof Tool) add(source, from);
      else if (withHosts)
        for (const tool of this.#hosts.get(source)?.tools ?? []) add(tool, `a tool host of ${from}`);
    }
    return byName;
  }

  async #listHost(host: ToolHost, from: string): Promise<boolean> {
    let entry = this.#hosts.get(host);
    if (entry?.watching && !entry.dirty) return false;
    let listed: HostedTool[];
    if (!entry) {
      try {
        listed = await host.listTools(this.#signal);
      } catch (error) {
        // The run was stopped (cancelled, a deadline) while the host connected or listed: not
        // the host's failure. The run ends as stopped at its next check, with no tools from it.
        if (this.#run?.aborted) return false;
        throw error;
      }
    } else {
      // Mid-run, a host that cannot be listed must not end the run and lose its work: its last
      // listing stays on offer (a call to a tool it no longer has fails as that call's error),
      // and the next model request tries again.
      try {
        listed = await host.listTools(this.#signal, (message) =>
          this.#warn({ code: "tool_host_tool_dropped", message }),
        );
      } catch (error) {
        if (this.#run?.aborted) return false;
        if (this.#signal.aborted) throw error;
        this.#warn({
          code: "tool_host_unavailable",
          message: `a tool host of ${from}${hostName(host)} could not be listed again (${thrownMessage(error)}); the tools it listed before stay on offer`,
        });
        return false;
      }
    }
    // A Tool is keyed by identity: one replaced under the same name must not stay cached.
    const key = JSON.stringify(listed.map((t) => (t instanceof Tool ? `tool#${identity(t)}` : t)));
    if (entry && entry.key === key) {
      entry.dirty = false;
      return false;
    }
    const tools = listed.map((t) => (t instanceof Tool ? t : new HostedToolAdapter(host, t)));
    const watching = entry?.watching ?? this.#watch(host);
    entry = { tools, key, dirty: false, watching };
    this.#hosts.set(host, entry);
    return true;
  }

  #warn(warning: HostWarning): void {
    if (this.#warned.has(warning.message)) return;
    this.#warned.add(warning.message);
    this.#onWarning?.(warning);
  }

  #watch(host: ToolHost): boolean {
    if (typeof host.watch !== "function") return false;
    const changes = host.watch(this.#signal);
    void (async () => {
      try {
        for await (const _change of changes) {
          const entry = this.#hosts.get(host);
          if (entry) entry.dirty = true;
        }
      } catch {
        // A broken watch degrades to listing before every request.
      }
      const entry = this.#hosts.get(host);
      if (entry) entry.watching = false;
    })();
    return true;
  }

  get #signal(): AbortSignal {
    if (!this.#lifetime) {
      const lifetime = new AbortController();
      const run = this.#run!;
      if (run.aborted) lifetime.abort(run.reason);
      else run.watch(() => lifetime.abort(run.reason));
      this.#lifetime = lifetime;
    }
    return this.#lifetime.signal;
  }

  /** Stops watching hosts: the run that used this toolset is over. */
  close(): void {
    this.#lifetime?.abort(new Error("the run ended"));
  }

  get(name: string): Tool | undefined {
    return this.#byName.get(name);
  }

  /** A tool offered whose description a peer wrote (the first such), if any: offering it taints. */
  get describedByPeer(): string | undefined {
    return this.#describedByPeer;
  }

  get specs(): ToolSpec[] {
    return this.#specs;
  }

  get tools(): Iterable<Tool> {
    return this.#byName.values();
  }
}

function isList<T>(value: T | ReadonlyArray<T>): value is ReadonlyArray<T> {
  return Array.isArray(value);
}

function isGroupList(value: AgentTools | ToolGroup[] | undefined): value is ToolGroup[] {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every(
      (entry) => entry !== null && typeof entry === "object" && "from" in entry && !(entry instanceof Tool),
    )
  );
}

/** A `warning` event about a tool host listed again mid-run. */
export type HostWarning = { code: "tool_host_unavailable" | "tool_host_tool_dropped"; message: string };

/** ` (name)` for a host that has a string `name` (an MCP server's), else nothing. */
function hostName(host: ToolHost): string {
  const name = (host as { name?: unknown }).name;
  return typeof name === "string" && name ? ` (${name.slice(0, 100)})` : "";
}

/** A `warning` event's code and message about one of the run's tools. */
export type ToolWarning = { code: "strict_unsupported" | "tool_without_description"; message: string };

/**
 * The shared toolsets of tool lists with no host (see `Toolset.forRun`), keyed by the list's first
 * tool (weakly: they go with it), or by NO_TOOLS for an empty list.
 */
const shared = new WeakMap<object, Toolset[]>();
const NO_TOOLS = {};
const SHARED_PER_KEY = 8;

/** The first tool or host of `groups`, if any. */
function firstSource(groups: ToolGroup[]): Tool | ToolHost | undefined {
  for (const { tools } of groups) {
    if (tools === undefined) continue;
    if (!isList(tools)) return tools;
    if (tools.length) return tools[0];
  }
  return undefined;
}

const identities = new WeakMap<Tool, number>();
let nextIdentity = 0;
function identity(tool: Tool): number {
  let id = identities.get(tool);
  if (id === undefined) {
    id = ++nextIdentity;
    identities.set(tool, id);
  }
  return id;
}
