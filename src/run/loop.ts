import { UserError } from "../errors.js";
import type {
  AssistantMessage,
  ContentBlock,
  Message,
  Model,
  ModelSettings,
  ToolSpec,
} from "../model/types.js";
import type { ActiveRun } from "./active-run.js";
import type { Agent } from "./agent.js";
import type { StopReason } from "./events.js";
import { executeTurn, type RequestedCall } from "./executor.js";
import { resolveInstructions } from "./instructions.js";
import { streamModelTurn, toToolCall } from "./model-turn.js";
import { OutputValidationError, outputContract } from "./output-type.js";
import type { Permissions } from "./permissions.js";
import type { RunResult } from "./result.js";
import { addUsage } from "./result.js";
import { type CallResult, errorResult } from "./tool-result.js";
import { Toolset } from "./toolset.js";

/** What a run starts from: a user message, or a whole transcript (e.g. `previous.messages` plus a new turn). */
export type RunInput = string | Message | readonly Message[];

export function inputMessages(input: RunInput): Message[] {
  if (typeof input === "string") return [{ role: "user", content: input }];
  if (Array.isArray(input)) return [...input];
  return [input as Message];
}

/** Everything that changes when the run switches agents (handoffs). */
type AgentSetup = {
  model: Model;
  toolset: Toolset;
  system: string | undefined;
  settings: ModelSettings;
  permissions: Permissions | undefined;
  offered?: { from: ToolSpec[]; specs: ToolSpec[] };
};

/**
 * The loop: model turn → tool calls → results → next turn, until the model answers without
 * calls, a tool ends the turn, the run is cancelled, or it runs out of turns.
 */
export async function runLoop(run: ActiveRun, input: RunInput): Promise<RunResult<any>> {
  const messages = inputMessages(input);
  run.emit({
    type: "run_started",
    input: messages,
    ...(run.options.sessionId !== undefined && { sessionId: run.options.sessionId }),
    ...(run.options.userId !== undefined && { userId: run.options.userId }),
  });
  run.transcript.push(...messages);

  const setup = await prepareAgent(run, run.agent);
  const contract = run.agent.config.outputType
    ? outputContract(run.agent.config.outputType, run.agent.name)
    : undefined;
  if (contract && !setup.settings.responseFormat) {
    setup.settings = {
      ...setup.settings,
      responseFormat: { type: "json_schema", name: "output", schema: contract.jsonSchema },
    };
  }
  let lastText = "";
  let corrected = false;

  while (true) {
    if (run.signal.aborted) return stop(run, "cancelled", lastText);
    if (run.turn >= run.maxTurns) return stop(run, "max_turns", lastText);
    run.turn++;
    run.emit({ type: "turn_started", turn: run.turn });
    if (run.turn > 1) await setup.toolset.refresh();

    const turn = await streamModelTurn(run, setup.model, {
      ...(setup.system !== undefined && { system: setup.system }),
      messages: run.transcript,
      tools: offeredSpecs(setup),
      settings: setup.settings,
      signal: run.signal,
    });
    if (!turn) return stop(run, "cancelled", lastText);

    if (Object.keys(turn.usage).length) {
      addUsage(run.usage, turn.usage);
      run.emit({ type: "usage", usage: turn.usage, total: { ...run.usage } });
    }

    const requested: RequestedCall[] = turn.calls.map((raw) => toToolCall(run, raw));
    const assistant = assistantMessage(turn.text, turn.reasoning, requested, turn.providerData);
    append(run, assistant);
    if (turn.text) lastText = turn.text;

    if (requested.length === 0) {
      run.emit({ type: "turn_completed", turn: run.turn });
      if (!contract) return stop(run, "completed", lastText);
      const checked = await contract.check(turn.text);
      if (checked.ok) return stop(run, "completed", checked.value);
      if (corrected) {
        throw new OutputValidationError(
          `the final output of agent "${run.agent.name}" does not match its outputType:\n${checked.problems.slice(0, 10).join("\n")}`,
        );
      }
      corrected = true;
      append(run, {
        role: "user",
        content: `Your answer does not match the required output schema:\n${checked.problems
          .slice(0, 10)
          .map((p) => `- ${p}`)
          .join("\n")}\nReply again with only a JSON value that matches the schema.`,
      });
      continue;
    }

    for (const [index, { call }] of requested.entries())
      run.emit({ type: "tool_call_requested", call, index });
    let results: CallResult[];
    let execution: Awaited<ReturnType<typeof executeTurn>> | undefined;
    if (turn.finish === "length") {
      // The response was cut off mid-call: running calls with truncated arguments is unsafe.
      results = requested.map(({ call }) => {
        const result = errorResult(
          call,
          "truncated_arguments",
          `the response hit the output token limit while writing the arguments for ${call.name}, so the call was not run`,
          "Make the call again with shorter arguments, or split the work into smaller calls.",
        );
        run.emit({
          type: "tool_call_completed",
          call,
          ok: false,
          output: result.record.output,
          error: result.record.error!,
          durationMs: 0,
        });
        return result;
      });
    } else {
      execution = await executeTurn(run, setup.toolset, requested);
      results = execution.results;
    }
    for (const result of results) {
      run.records.push(result.record);
      append(run, result.message);
    }
    run.emit({ type: "turn_completed", turn: run.turn });

    if (execution?.stop) return stop(run, execution.stop.reason, lastText);
    if (execution?.endedBy) {
      const ended = results.find((r) => r.record.ok && r.record.call.name === execution!.endedBy!.name);
      return stop(run, "ends_turn", turn.text || ended?.record.output || "");
    }
  }
}

async function prepareAgent(run: ActiveRun, agent: Agent<any, any>): Promise<AgentSetup> {
  const model = await resolveModel(agent.config.model, agent.name);
  const toolset = new Toolset(agent.config.tools, run.signal);
  await toolset.refresh();
  for (const tool of toolset.tools) {
    if (tool.strictWarning)
      run.emit({ type: "warning", code: "strict_unsupported", message: tool.strictWarning });
  }
  const system = await resolveInstructions(agent.config.instructions, {
    ...run.baseContext(),
    signal: run.signal,
  });
  return {
    model,
    toolset,
    system,
    settings: agent.config.modelSettings ?? {},
    permissions: agent.config.permissions,
  };
}

async function resolveModel(model: Model | string | undefined, agentName: string): Promise<Model> {
  if (model === undefined)
    throw new UserError(`agent "${agentName}" has no model: pass { model } to new Agent()`);
  if (typeof model !== "string") return model;
  // Loaded on demand so `import "quiver"` never pulls in provider code.
  const registry: { resolveModel(id: string): Model } = await import(PROVIDERS_MODULE);
  return registry.resolveModel(model);
}
const PROVIDERS_MODULE = "../providers/index.js";

/** The tools the model is shown: permissions may hide tools they would always deny. */
function offeredSpecs(setup: AgentSetup): ToolSpec[] {
  const offers = setup.permissions?.offers?.bind(setup.permissions);
  if (!offers) return setup.toolset.specs;
  if (setup.offered?.from !== setup.toolset.specs) {
    const specs = setup.toolset.specs.filter((spec) => {
      const tool = setup.toolset.get(spec.name)!;
      return offers({
        name: tool.name,
        destructive: tool.destructive ?? false,
        readOnly: tool.readOnly ?? false,
      });
    });
    setup.offered = { from: setup.toolset.specs, specs };
  }
  return setup.offered.specs;
}

function assistantMessage(
  text: string,
  reasoning: ContentBlock[],
  requested: RequestedCall[],
  providerData: Record<string, unknown> | undefined,
): AssistantMessage {
  const content: string | ContentBlock[] = reasoning.length
    ? [...reasoning, ...(text ? [{ type: "text" as const, text }] : [])]
    : text;
  const message: AssistantMessage = { role: "assistant", content };
  if (requested.length) message.toolCalls = requested.map((r) => r.call);
  if (providerData) message.providerData = providerData;
  return message;
}

function append(run: ActiveRun, message: Message): void {
  run.transcript.push(message);
  run.emit({ type: "message", message });
}

function stop(run: ActiveRun, stopReason: StopReason, output: unknown): RunResult<any> {
  run.emit({ type: "run_completed", output, stopReason, usage: { ...run.usage } });
  return {
    runId: run.runId,
    output,
    messages: run.transcript,
    toolCalls: run.records,
    usage: { ...run.usage },
    stopReason,
    lastAgent: run.agent,
  };
}
