import type { StandardSchemaV1 } from "@standard-schema/spec";
import type { ApprovalAnswer } from "../../contract/approvals.js";
import { assertGuardrails, type Guardrails } from "../../contract/guardrails.js";
import type { Instructions } from "../../contract/instructions.js";
import type { Permissions } from "../../contract/permissions.js";
import type { RunContext } from "../../contract/run-context.js";
import { UserError } from "../../errors.js";
import type { ToolHost } from "../../hosts/tool-host.js";
import type { Message, Model, ModelSettings, ToolCall } from "../../model/types.js";
import { jsonSchema, type TypedJsonSchema } from "../../tool/json-schema.js";
import { type Tool, tool } from "../../tool/tool.js";
import type { ResultRenderer, ToolOptions } from "../../tool/types.js";
import { assertWholeNumbers, type WholeNumberRule } from "../../whole-number.js";
import { assertAgentTools } from "./agent-tools.js";
import type { Budget } from "./budget.js";
import type { CompactionOptions } from "./compaction-options.js";
import type { Plugin } from "./plugin.js";

/**
 * A schema for the final answer that types `RunResult.output`: a Zod 4 (or any Standard)
 * schema, or `jsonSchema<T>({...})`.
 */
export type OutputSchema<Output> = StandardSchemaV1<any, Output> | TypedJsonSchema<Output>;

/**
 * What an agent's `model` accepts: a `Model`, a `"provider:model-id"`, or a fallback chain of
 * those (a list, or `fallback(...)`): a turn that fails on one model with a retryable provider
 * error goes to the next.
 */
export type AgentModel = Model | ModelId | ReadonlyArray<Model | ModelId>;

/**
 * A `"provider:model-id"` string; the built-in providers are spelt out for the editor to offer,
 * and any other string (a provider added with `registerProvider`) is taken too.
 */
export type ModelId =
  | `${"openai" | "openai-responses" | "anthropic" | "ollama" | "openrouter" | "groq" | "deepseek" | "lmstudio" | "llamacpp"}:${string}`
  | (string & {});

/** What an agent's `tools` accepts: one tool, a host, or an array mixing both. */
export type AgentTools = Tool<any, any> | ToolHost | Array<Tool<any, any> | ToolHost>;

/** Everything an `Agent` is configured with. Only `name` is required. */
export interface AgentConfig<Deps = unknown, Output = string> {
  /** 1-64 letters, digits, spaces, `_`, `.` or `-`; names the agent in events, handoffs (`transfer_to_<name>`) and traces. */
  name: string;
  /**
   * A `Model`, or `"provider:model-id"` resolved by `quiver-agents/providers` (e.g. `"openai:gpt-4.1-mini"`),
   * or a list of those tried in order when one fails with a retryable provider error.
   */
  model?: AgentModel;
  /** The system prompt: a string, a function of the run context (sync or async, evaluated at each run start), or a list of those joined with blank lines. */
  instructions?: Instructions<Deps>;
  /** Its tools: `tool()`s, tool hosts (MCP servers, `InProcessToolHost`), or a list mixing both. */
  tools?: AgentTools;
  /** Model settings sent with every request (temperature, maxTokens, reasoning, toolChoice…). */
  modelSettings?: ModelSettings;
  /** Retries for tools that set none. Default 0. */
  defaultToolRetries?: number;
  /** Per-attempt timeout for tools that set none. Default: none. */
  defaultToolTimeoutMs?: number;
  /** Cap on each rendered tool result for tools that set none. Default 200,000. */
  maxToolOutputChars?: number;
  /** Cap on the image bytes of one tool result. Default 5 MB. */
  maxImageBytes?: number;
  /** Renders successful results of tools that have no `resultRenderer`. */
  toolResultRenderer?: ResultRenderer;
  /** At most this many calls of one turn run at once. Default: no limit. */
  maxConcurrentToolCalls?: number;
  /**
   * A schema (Zod, any Standard Schema, or `jsonSchema()`) for the final answer: the model's
   * last text is parsed as JSON and validated; one corrective turn is allowed.
   */
  outputType?: OutputSchema<Output>;
  /**
   * Decides calls that need approval when the stream consumer did not:
   * `true | "allow"`, `false | "deny"`, or `"ask"` to wait for `handle.approvals`.
   */
  approvalHandler?: (call: ToolCall, ctx: RunContext<Deps>) => ApprovalAnswer | Promise<ApprovalAnswer>;
  /** How long an approval may wait for a decision before it is denied. Default 600,000 (10 minutes). */
  approvalTimeoutMs?: number;
  /** Permission rules. Default: `new StandardPermissions()` ("default" mode: destructive tools ask). */
  permissions?: Permissions;
  /**
   * `"ask"` (default): once untrusted output (web pages, MCP results) entered the run, destructive
   * tools need approval even where permissions would let them pass. `"off"` disables that.
   */
  taintPolicy?: "ask" | "off";
  /** Agents this one can hand the conversation to, as `transfer_to_<name>` tools. */
  handoffs?: Array<Agent<any, any> | Handoff<any>>;
  /** When one call of a turn fails, abort its still-running siblings (reported as cancelled). Default false. */
  cancelSiblingsOnError?: boolean;
  /**
   * Keeps long conversations inside the model's window: over `maxInputTokens` the model sees old
   * tool results as stubs (and, with `summarize`, older turns as a summary); the transcript keeps everything.
   */
  compaction?: CompactionOptions;
  /** Tools packaged with their prompt text and lifecycle (`plugin()`). */
  plugins?: ReadonlyArray<Plugin<Deps>>;
  /**
   * Checks on what the agent is given and what it answers (`guardrail()`): `input` guardrails see
   * its input when it first speaks (beside its first model turn by default), `output` guardrails
   * its final answer before the run completes. A trip fails the run with `GuardrailTripped`.
   */
  guardrails?: Guardrails<Deps>;
}

const AGENT_NAME = /^[a-zA-Z0-9_-][a-zA-Z0-9 _.-]{0,63}$/;

/**
 * An agent: a model, instructions and tools, plus the settings of its loop.
 *
 * @example
 * const agent = new Agent({ name: "support", model: "openai:gpt-4.1-mini",
 *   instructions: "You help customers with orders.", tools: [lookupOrder] });
 * const result = await Runner.run(agent, "Where is order A123?");
 */
export class Agent<Deps = unknown, Output = string> {
  readonly name: string;
  readonly config: Readonly<AgentConfig<Deps, Output>>;

  constructor(config: AgentConfig<Deps, Output>) {
    if (typeof config.name !== "string" || !AGENT_NAME.test(config.name)) {
      throw new UserError(
        `invalid agent name ${JSON.stringify(config.name)}: use 1-64 letters, digits, " _.-"`,
      );
    }
    this.name = config.name;
    assertGuardrails(config.guardrails, `agent "${config.name}"`);
    assertAgentTools(config.tools, config.name);
    assertWholeNumbers(config, "agent", config.name, AGENT_LIMITS);
    // Object.assign, not a spread: V8 freezes a spread's copy into dictionary mode (~0.4 µs),
    // and every later read of it (the run reads ~10 fields) then costs ~0.1 µs, not ~5 ns.
    this.config = Object.freeze(Object.assign({}, config));
  }

  /**
   * This agent as a tool (`{ input: string }`) another agent can call: each call is a child run.
   *
   * @example
   * const researcher = new Agent({ name: "researcher", model, tools: [webSearch(backend)] });
   * const writer = new Agent({ name: "writer", model, tools: [researcher.asTool({ budget: new Budget({ maxToolCalls: 10 }) })] });
   */
  asTool(options: AgentToolOptions = {}): Tool<{ input: string }> {
    return agentTool(this, options);
  }

  /** A copy of this agent with some settings changed. */
  clone(overrides: Partial<AgentConfig<Deps, Output>>): Agent<Deps, Output> {
    return new Agent<Deps, Output>({ ...this.config, ...overrides });
  }
}

/** What the model may say when it hands off: why (in the call's arguments, and given to `onHandoff`). */
export type HandoffArgs = { reason?: string };

/** How a handoff is offered (`handoff(agent, options)`). */
export type HandoffOptions<Deps = any> = {
  /** The tool's name. Default `transfer_to_<agent name>`. */
  name?: string;
  /** What the model reads about when to hand off. Default: built from the target agent's name. */
  description?: string;
  /** Rewrites the transcript the target agent sees (e.g. drop tool chatter). */
  inputFilter?: (messages: readonly Message[]) => Message[];
  /** Runs when the handoff is taken, before the target agent's first turn. Throwing cancels the handoff. */
  onHandoff?: (ctx: RunContext<Deps>, args: HandoffArgs) => void | Promise<void>;
};

/** A transfer of the conversation to another agent, offered to the model as a tool. */
export class Handoff<Deps = any> {
  readonly target: Agent<any, any>;
  readonly toolName: string;
  readonly description: string;
  readonly inputFilter: HandoffOptions<Deps>["inputFilter"];
  readonly onHandoff: HandoffOptions<Deps>["onHandoff"];

  constructor(target: Agent<any, any>, options: HandoffOptions<Deps> = {}) {
    this.target = target;
    this.toolName = options.name ?? `transfer_to_${sanitize(target.name)}`;
    this.description =
      options.description ??
      `Hand the conversation over to the ${target.name} agent, which takes it from here.`;
    this.inputFilter = options.inputFilter;
    this.onHandoff = options.onHandoff;
  }
}

/**
 * A handoff with options. A bare agent in `handoffs` is the same as `handoff(agent)`.
 *
 * @example
 * const triage = new Agent({ name: "triage", model, handoffs: [billing, handoff(refunds, { onHandoff: (ctx) => audit(ctx.runId) })] });
 */
export function handoff<Deps = any>(
  target: Agent<any, any>,
  options: HandoffOptions<Deps> = {},
): Handoff<Deps> {
  return new Handoff(target, options);
}

function sanitize(name: string): string {
  const clean = name
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "_")
    .replace(/^_+|_+$/g, "");
  if (!clean)
    throw new UserError(`cannot name a handoff tool after agent ${JSON.stringify(name)}: pass { name }`);
  return clean.slice(0, 64 - "transfer_to_".length);
}

/** How `agent.asTool()` exposes an agent. */
export type AgentToolOptions = ToolOptions<{ input: string }> & {
  /** Default: the agent's name. */
  name?: string;
  description?: string;
  /** The child run's own budget; running out of it is a recoverable error for the parent. */
  budget?: Budget;
  /** The child run's own turn limit. Default 50. */
  maxTurns?: number;
};

/** What an agent tool asks of the run its call belongs to: run `agent` on `input` as a child run. */
export type ChildRunRequest = {
  agent: Agent<any, any>;
  input: string;
  toolName: string;
  budget?: Budget | undefined;
  maxTurns?: number | undefined;
};

/**
 * The key under which a call's context offers to start a child run. The engine's call context
 * implements it, so an agent — defined here, below the engine — can become a tool without
 * importing the loop that will run it.
 */
export const START_CHILD_RUN: unique symbol = Symbol("quiver.startChildRun");

/** A call context that can start child runs (every context the engine makes for a call). */
export type ChildRunStarter = { [START_CHILD_RUN]?: (request: ChildRunRequest) => Promise<string> };

/**
 * An agent as a tool: each call runs a child run with its own `runId`, whose events reach the
 * root handle (with `path` and `parentRunId`), whose approvals are answered through the root
 * handle, whose usage counts toward every ancestor's budget, and which is cancelled with its
 * parent.
 */
export function agentTool(agent: Agent<any, any>, options: AgentToolOptions = {}): Tool<{ input: string }> {
  const { name, description, budget, maxTurns, ...toolOptions } = options;
  const toolName = name ?? agent.name.replace(/[^a-zA-Z0-9_-]+/g, "_").slice(0, 64);
  return tool({
    ...toolOptions,
    name: toolName,
    description: description ?? `Delegate a task to the ${agent.name} agent and get its answer.`,
    parameters: jsonSchema<{ input: string }>({
      type: "object",
      properties: {
        input: {
          type: "string",
          description: "The task or question for the agent, with all the context it needs.",
        },
      },
      required: ["input"],
      additionalProperties: false,
    }),
    execute: ({ input }, ctx: RunContext) => {
      const start = (ctx as ChildRunStarter)[START_CHILD_RUN];
      if (!start) throw new UserError(`${toolName} (an agent as a tool) can only run inside a run`);
      return start({ agent, input, toolName, budget, maxTurns });
    },
  });
}

// Checked when an agent is made (see whole-number.ts).
const AGENT_LIMITS = {
  maxConcurrentToolCalls: { min: 1, unbounded: true, hint: "the number of tool calls that may run at once" },
  defaultToolRetries: { min: 0 },
  defaultToolTimeoutMs: { min: 1, hint: "leave it out for no timeout" },
  maxToolOutputChars: { min: 1, unbounded: true },
  maxImageBytes: { min: 0, unbounded: true },
  approvalTimeoutMs: { min: 0, unbounded: true },
} satisfies Partial<Record<keyof AgentConfig<any, any>, WholeNumberRule>>;
