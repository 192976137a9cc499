import type { RunContext } from "../../contract/run-context.js";
import { UserError } from "../../errors.js";
import type { Message } from "../../model/types.js";
import { jsonSchema } from "../../tool/json-schema.js";
import { Tool } from "../../tool/tool.js";
import type { Agent } from "./agent.js";

export type HandoffArgs = { reason?: string };

export type HandoffOptions<Deps = any> = {
  /** The tool's name. Default `transfer_to_<agent name>`. */
  name?: string;
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

/** The tool a handoff becomes. Always a barrier: "the first handoff of a turn wins" stays race-free. */
export class HandoffTool extends Tool<HandoffArgs> {
  readonly handoff: Handoff;
  constructor(handoff: Handoff) {
    super({
      name: handoff.toolName,
      description: handoff.description,
      parameters: jsonSchema<HandoffArgs>({
        type: "object",
        properties: { reason: { type: "string", description: "Why the conversation is handed over." } },
        additionalProperties: false,
      }),
      parallel: false,
    });
    this.handoff = handoff;
  }

  override async execute(args: HandoffArgs, ctx: RunContext): Promise<string> {
    await this.handoff.onHandoff?.(ctx, args);
    return `Transferred to ${this.handoff.target.name}`;
  }
}

const toolsOf = new WeakMap<Agent<any, any>, HandoffTool[]>();

/** The handoff tools of an agent (built once per agent). */
export function handoffTools(agent: Agent<any, any>): HandoffTool[] {
  let tools = toolsOf.get(agent);
  if (!tools) {
    tools = (agent.config.handoffs ?? []).map(
      (h) => new HandoffTool(h instanceof Handoff ? h : new Handoff(h)),
    );
    toolsOf.set(agent, tools);
  }
  return tools;
}
