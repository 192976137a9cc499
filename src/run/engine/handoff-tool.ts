import type { RunContext } from "../../contract/run-context.js";
import { jsonSchema } from "../../tool/json-schema.js";
import { Tool } from "../../tool/tool.js";
import { type Agent, Handoff, type HandoffArgs } from "../config/agent.js";

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
const NO_HANDOFFS: readonly HandoffTool[] = Object.freeze([]);

/** The handoff tools of an agent (built once per agent). */
export function handoffTools(agent: Agent<any, any>): readonly HandoffTool[] {
  // Most agents have none: nothing to remember (an agent made per request would fill the map).
  if (!agent.config.handoffs?.length) return NO_HANDOFFS;
  let tools = toolsOf.get(agent);
  if (!tools) {
    tools = (agent.config.handoffs ?? []).map(
      (h) => new HandoffTool(h instanceof Handoff ? h : new Handoff(h)),
    );
    toolsOf.set(agent, tools);
  }
  return tools;
}
