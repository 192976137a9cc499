import type { EventOf, StopReason } from "../../contract/events.js";
import type { Guardrail } from "../../contract/guardrails.js";
import type { Permissions } from "../../contract/permissions.js";
import { BudgetExceeded, UserError } from "../../errors.js";
import { FallbackModel } from "../../model/fallback.js";
import { pairCalls } from "../../model/paired-calls.js";
import type {
  AssistantMessage,
  ContentBlock,
  FinishReason,
  Message,
  Model,
  ModelSettings,
  ToolCall,
  ToolSpec,
  Usage,
} from "../../model/types.js";
import { StoreError } from "../../store/types.js";
import type { Agent, AgentModel } from "../config/agent.js";
import { type Compaction, resolveCompaction } from "../config/compaction-options.js";
import { GuardrailTripped } from "../config/guardrail.js";
import { type OutputContract, OutputValidationError, outputContract } from "../config/output-type.js";
import { checkPlugins, type Plugin } from "../config/plugin.js";
import { inputMessages, type RunInput } from "../config/run-input.js";
import { compactRequest, observeUsage, resetView } from "../conversation/compaction.js";
import { sharedRecallTool } from "../conversation/recall.js";
import type { ActiveRun } from "../state/active-run.js";
import { costOf } from "../state/pricing.js";
import type { RunResult } from "../state/result.js";
import { assistantMessageOf } from "../state/transcript-objects.js";
import { runEnded } from "./call-scope.js";
import { executeTurn, type PriorTurn, type RequestedCall, type TurnExecution } from "./executor.js";
import { inputSubject, runGuardrails } from "./guardrail-checks.js";
import { handoffTools } from "./handoff-tool.js";
import { type TurnRequest, turnRequest } from "./model-request.js";
import { streamModelTurn, toToolCall } from "./model-turn.js";
import { pluginsSetUp, setupPlugins, teardownPlugins } from "./plugin-lifecycle.js";
import { resolveInstructions } from "./system-prompt.js";
import { markTainted } from "./taint.js";
import { type CallResult, errorResult } from "./tool-result.js";
import { type ToolGroup, Toolset } from "./toolset.js";

/** Everything that changes when the run switches agents (handoffs). */
export type AgentSetup = {
  model: Model;
  toolset: Toolset;
  system: string | undefined;
  settings: ModelSettings;
  permissions: Permissions | undefined;
  contract: OutputContract | undefined;
  offered?: { from: ToolSpec[]; specs: ToolSpec[] };
  compaction?: Compaction;
  /** The agent's guardrails, when it has any of that stage. */
  inputGuardrails?: ReadonlyArray<Guardrail<any>>;
  outputGuardrails?: ReadonlyArray<Guardrail<any>>;
};

/**
 * The loop: model turn → tool calls → results → next turn, until the model answers without
 * calls, a tool ends the turn, the run is cancelled, a budget runs out, or it runs out of turns.
 * `history`: how many of `input`'s first messages are its session's conversation so far.
 */
export async function runLoop(run: ActiveRun, input: RunInput, history = 0): Promise<RunResult<any>> {
  try {
    const setup = start(run, input, history);
    return await turns(run, setup instanceof Promise ? await setup : setup);
  } finally {
    const ending = endRun(run);
    if (ending) await ending;
  }
}

/**
 * The run's end: its plugins are torn down (their warnings come first), then the `run_completed`
 * held for them is emitted, then the run closes. Without plugins nothing waits.
 */
export function endRun(run: ActiveRun): Promise<void> | undefined {
  const ending = teardownPlugins(run);
  if (!ending) {
    closeRun(run);
    return undefined;
  }
  return ending.then(() => {
    const held = heldEnds.get(run);
    if (held) {
      heldEnds.delete(run);
      run.events.emit(held);
    }
    closeRun(run);
  });
}

/** A run's last event waiting for its plugin teardowns, so that it stays the last. */
const heldEnds = new WeakMap<ActiveRun, EventOf<"run_completed"> | EventOf<"run_parked">>();

function emitEnd(run: ActiveRun, end: EventOf<"run_completed"> | EventOf<"run_parked">): void {
  // A message sent from here on would be stored after the end and never read.
  run.mailbox.close();
  if (pluginsSetUp(run)) heldEnds.set(run, end);
  else run.events.emit(end);
}

/** The run has stopped: timers and watches go, and with no call left running the run context stops being tracked. */
function closeRun(run: ActiveRun): void {
  run.control.close();
  run.mailbox.close();
  runEnded();
}

/** `run_started`, the input into the transcript, and the first agent's setup. */
function start(run: ActiveRun, input: RunInput, history: number): AgentSetup | Promise<AgentSetup> {
  const given = inputMessages(input);
  // A transcript from outside may hold calls without results (or the reverse): no provider takes that.
  const messages = pairCalls(given);
  // Assigned, not spread in: a conditional spread takes V8's slow path.
  const started: EventOf<"run_started"> = {
    type: "run_started",
    input: messages,
    runId: "",
    seq: 0,
    at: 0,
    agent: "",
  };
  if (run.sessionId !== undefined) started.sessionId = run.sessionId;
  if (history > 0) started.history = Math.min(history, messages.length);
  if (run.userId !== undefined) started.userId = run.userId;
  if (run.parent) started.parentCallId = run.parent.callId;
  else if (run.state.value !== undefined) started.state = run.state.value;
  run.events.emit(started);
  run.mailbox.recordTo(run.events);
  run.transcript.push(...messages);
  // Taint belongs to the transcript: a conversation that read untrusted text keeps asking
  // before destructive calls in every run that continues it (sessions, `result.messages`).
  const inherited = given.find((m) => m.role === "tool" && m.untrusted);
  if (inherited && !run.tainted) {
    markTainted(
      run,
      `earlier untrusted output in the conversation (${(inherited as { name: string }).name})`,
    );
  }
  // A sub-agent works from what its caller's model wrote, after whatever that model read.
  const above = run.parent?.run.tainted;
  if (above && !run.tainted) markTainted(run, `its caller's run read ${above}`);
  return prepareAgent(run, run.agent);
}

/**
 * A turn a resumed run must finish before it goes on: its calls, with what the log knows of
 * them, and how its model answer ended (for the turn's `turn_completed`).
 */
export type UnfinishedTurn = {
  text: string;
  requested: RequestedCall[];
  prior: PriorTurn;
  ended?: TurnEnding;
};

/** How a turn's model answer ended: what its `turn_completed` says (`model` only after a fallback). */
export type TurnEnding = {
  finish: FinishReason;
  usage: Partial<Usage> | undefined;
  model: string | undefined;
};

/**
 * The turns of a run, from wherever it is: a fresh run starts with a model request; a resumed
 * run may first finish a turn whose calls were under way.
 */
export async function turns(
  run: ActiveRun,
  firstSetup: AgentSetup,
  unfinished?: UnfinishedTurn,
): Promise<RunResult<any>> {
  // Every field in the literal: one added later makes a hidden class that a full GC can drop (shapes.ts).
  const state: LoopState = {
    setup: firstSetup,
    corrected: false,
    ended: undefined,
    guarded: undefined,
    besideTurn: undefined,
    request: undefined,
  };
  if (unfinished) {
    const { text, requested, prior } = unfinished;
    state.ended = unfinished.ended;
    const execution = await executeTurn(run, state.setup.toolset, requested, prior);
    const closed = closeTurn(run, state, text, execution, prior);
    const outcome = closed instanceof Promise ? await closed : closed;
    if (outcome) return outcome;
  }

  while (true) {
    if (run.control.stopper.aborted) return stopOnAbort(run, state.setup);
    const overBudget = run.limits.exceeded();
    if (overBudget) return finishRun(run, "budget", unanswered(run, state.setup), overBudget);
    if (run.turn >= run.limits.maxTurns) return finishRun(run, "max_turns", unanswered(run, state.setup));
    const ownBudget = run.limits.budgets[0]?.runId === run.runId ? run.limits.budgets[0] : undefined;
    if (ownBudget && !ownBudget.turnsLeft()) {
      const error = new BudgetExceeded(
        run.runId,
        "maxTurns",
        `budget exceeded: maxTurns is ${ownBudget.limits.maxTurns}`,
      );
      return finishRun(run, "budget", unanswered(run, state.setup), error);
    }
    const injected = deliverInbox(run);
    const { setup } = state;
    run.turn++;
    for (const tracker of run.limits.budgets) tracker.turns++;
    run.events.emit({
      type: "turn_started",
      turn: run.turn,
      model: setup.model.name,
      runId: "",
      seq: 0,
      at: 0,
      agent: "",
    });
    if (run.turn > 1) {
      const relisted = setup.toolset.refresh();
      if (relisted) await relisted;
    }

    // An agent's input guardrails check its input once, when it first speaks: those that must
    // finish first, now; the others beside its first model turn (awaited before any of its calls).
    // A message injected since is input too: checked the same way before the turn that reads it.
    if (setup.inputGuardrails && (state.guarded !== run.agent || injected)) {
      const scope = state.guarded === run.agent ? `injected@${run.transcript.length}` : undefined;
      state.guarded = run.agent;
      const guarding = await guardInput(run, setup.inputGuardrails, scope);
      if (guarding) state.besideTurn = guarding.beside;
    }
    // A peer's tool descriptions are text the model reads with this request, like its results.
    const described = setup.toolset.describedByPeer;
    if (described !== undefined && !run.tainted)
      markTainted(run, `the description of ${described}, written by its server`);
    const request = modelRequest(run, setup, state);
    if (setup.compaction) {
      const compacting = compactRequest(run, setup.compaction, request);
      if (compacting) await compacting;
    }
    const turn = state.besideTurn
      ? await besideGuardrails(run, state.besideTurn, streamModelTurn(run, setup.model, request))
      : await streamModelTurn(run, setup.model, request);
    if (state.besideTurn) {
      const beside = state.besideTurn;
      state.besideTurn = undefined;
      await beside;
      // A trip stopped the run (and the turn, if it was still streaming): none of its calls runs.
      // DESIGN pins `guardrail_tripped` then `run_failed`: the turn is left as it was.
      if (run.control.stopper.aborted) return stopOnAbort(run, state.setup);
    }
    if (!turn) {
      if (run.control.stopper.aborted) {
        // Cancelled (or out of budget) mid-stream: the turn is closed first, so the log pairs its
        // start and `replay()` finds no turn open in a finished run.
        completeTurn(run);
        return stopOnAbort(run, state.setup);
      }
      // Interrupted by a steering message: the partial turn is dropped, the message goes in next.
      run.events.emit({
        type: "warning",
        code: "turn_interrupted",
        message: "the model turn was interrupted by a new user message",
      });
      completeTurn(run);
      continue;
    }

    state.ended = { finish: turn.finish, usage: undefined, model: turn.model };
    if (hasUsage(turn.usage)) {
      // Priced as the model that answered (a fallback chain may have moved past the first).
      const answeredBy = turn.model ?? setup.model.name;
      const costUsd = costOf(answeredBy, turn.usage);
      if (costUsd === undefined) warnUnpriced(run, answeredBy);
      const usage = costUsd === undefined ? turn.usage : { ...turn.usage, costUsd };
      state.ended.usage = usage;
      run.addUsage(usage, answeredBy);
      if (setup.compaction) observeUsage(run, turn.usage);
    }

    const requested: RequestedCall[] = turn.calls.map((raw) => toToolCall(run, raw));
    append(run, assistantMessage(turn.text, turn.reasoning, requested, turn.providerData));
    if (turn.text) run.lastText = turn.text;

    if (requested.length === 0) {
      completeTurn(run, state);
      if (setup.contract) {
        const checked = await setup.contract.check(turn.text);
        if (!checked.ok) {
          if (state.corrected) {
            throw new OutputValidationError(
              `the final output of agent "${run.agent.name}" does not match its outputType:\n${checked.problems.slice(0, 10).join("\n")}`,
            );
          }
          state.corrected = true;
          const problems = checked.problems
            .slice(0, 10)
            .map((p) => `- ${p}`)
            .join("\n");
          append(run, {
            role: "user",
            content: `Your answer does not match the required output schema:\n${problems}\nReply again with only a JSON value that matches the schema.`,
          });
          continue;
        }
        if (!run.mailbox.inbox.length && !run.mailbox.followUps.length)
          return finishWithOutput(run, setup, "completed", checked.value, turn.text);
      }
      // A message injected during this last turn, or a queued follow-up, keeps the run going.
      if (run.mailbox.inbox.length) continue;
      if (run.mailbox.followUps.length) {
        run.mailbox.promoteFollowUps();
        continue;
      }
      return finishWithOutput(run, setup, "completed", run.lastText, run.lastText);
    }

    for (let index = 0; index < requested.length; index++) {
      const { call, repairs } = requested[index]!;
      const requestedEvent: EventOf<"tool_call_requested"> = {
        type: "tool_call_requested",
        call,
        index,
        runId: "",
        seq: 0,
        at: 0,
        agent: "",
      };
      if (repairs) requestedEvent.repairs = repairs;
      run.events.emit(requestedEvent);
    }
    // Awaited here, not inside a helper: an async helper would cost two promises per turn.
    const execution =
      turn.finish === "length"
        ? truncatedCalls(run, requested)
        : await executeTurn(run, setup.toolset, requested);
    const closed = closeTurn(run, state, turn.text, execution);
    const outcome = closed instanceof Promise ? await closed : closed;
    if (outcome) return outcome;
  }
}

type LoopState = {
  setup: AgentSetup;
  corrected: boolean;
  /** The agent whose input guardrails have run (each agent's once, when it first speaks). */
  guarded: Agent<any, any> | undefined;
  /** Input guardrails running beside the current model turn. */
  besideTurn: Promise<void> | undefined;
  /** How the current turn's model answer ended, for its `turn_completed` (absent for a resumed turn). */
  ended: TurnEnding | undefined;
  /** The last turn's request, asked again when nothing in it changed (see `modelRequest`). */
  request: TurnRequest | undefined;
};

/**
 * The request of one model turn (see `turnRequest`). The last turn's request, when it would
 * ask the same (the same transcript array, tools, settings, stop and system prompt, as most
 * turns of a run do): a request is made with an accessor (~0.2 µs), and a model must not keep
 * one past its call anyway. Compaction rewrites a turn's request, so it gets a new one each turn.
 */
function modelRequest(run: ActiveRun, setup: AgentSetup, state: LoopState): TurnRequest {
  const tools = offeredSpecs(setup);
  const stopper = run.control.modelStopper();
  const last = state.request;
  if (last?.asks(run.transcript, tools, setup.settings, stopper, setup.system) && !setup.compaction)
    return last;
  const request = turnRequest(run.transcript, tools, setup.settings, stopper, setup.system);
  state.request = request;
  return request;
}

/** Emits `turn_completed`, with the model answer's finish reason and usage when the turn had one. */
function completeTurn(run: ActiveRun, state?: LoopState): void {
  const ended = state?.ended;
  if (!ended) {
    run.events.emit({ type: "turn_completed", turn: run.turn, runId: "", seq: 0, at: 0, agent: "" });
    return;
  }
  state.ended = undefined;
  // One literal per shape (see shapes.ts): the same fields, in the same order, as before.
  const { finish, usage, model } = ended;
  let event: EventOf<"turn_completed">;
  if (usage)
    event = { type: "turn_completed", turn: run.turn, runId: "", seq: 0, at: 0, agent: "", finish, usage };
  else event = { type: "turn_completed", turn: run.turn, runId: "", seq: 0, at: 0, agent: "", finish };
  // Only after a fallback chain moved on: the model that answered, when it is not the one asked.
  if (model !== undefined) event.model = model;
  run.events.emit(event);
}

/**
 * Closes a turn whose calls have run: tool messages in request order, then whatever the calls
 * decided (stop, end the turn, hand off, park). Returns the result when the run stops; a
 * promise only when a handoff's new agent needs one to be prepared.
 */
function closeTurn(
  run: ActiveRun,
  state: LoopState,
  text: string,
  execution: TurnExecution,
  prior?: PriorTurn,
): RunResult<any> | undefined | Promise<RunResult<any> | undefined> {
  const { results } = execution;
  if (execution.parked) return park(run, state.setup, execution.parked, results);
  for (const result of results) {
    run.records.push(result.record);
    if (!prior?.appended?.has(result.record.call.id)) append(run, result.message);
  }
  completeTurn(run, state);

  if (execution.stop) {
    return execution.stop.reason === "budget"
      ? finishRun(run, "budget", unanswered(run, state.setup), execution.stop.error)
      : stopOnAbort(run, state.setup);
  }
  const { endedBy } = execution;
  if (endedBy) {
    const ended = results.find((r) => r.record.ok && r.record.call.name === endedBy.name);
    const output = text || ended?.record.output || "";
    return finishWithOutput(run, state.setup, "ends_turn", output, output);
  }
  if (execution.handoff) {
    const { handoff, call } = execution.handoff;
    const from = run.agent.name;
    run.switchAgent(handoff.target);
    let transcript: Message[] | undefined;
    if (handoff.inputFilter) {
      transcript = pairCalls(handoff.inputFilter([...run.transcript]));
      run.transcript.splice(0, run.transcript.length, ...transcript);
      resetView(run);
    }
    run.events.emit({
      type: "handoff",
      from,
      to: handoff.target.name,
      call,
      ...(transcript && { transcript }),
    });
    state.corrected = false;
    const next = prepareAgent(run, handoff.target);
    if (next instanceof Promise) {
      return next.then((setup) => {
        state.setup = setup;
        return undefined;
      });
    }
    state.setup = next;
  }
  return undefined;
}

/** A stored run waiting for approval leaves memory: its log says where to pick it up. */
function park(
  run: ActiveRun,
  setup: AgentSetup,
  pending: ToolCall[],
  finished: CallResult[],
): RunResult<any> {
  emitEnd(run, { type: "run_parked", pending, runId: "", seq: 0, at: 0, agent: "" });
  return {
    runId: run.runId,
    output: unanswered(run, setup),
    messages: run.transcript,
    toolCalls: [...run.records, ...finished.map((r) => r.record)],
    usage: { ...run.usage },
    stopReason: "awaiting_approval",
    lastAgent: run.agent,
    pending,
    state: run.state.value,
  };
}

/** A turn cut off by the output-token limit: running calls with truncated arguments is unsafe. */
function truncatedCalls(run: ActiveRun, requested: RequestedCall[]): TurnExecution {
  const results = requested.map(({ call }) => {
    const result = errorResult(
      call,
      "truncated_arguments",
      `the response hit the output token limit while writing the arguments for ${call.name}, so the call was not run`,
      "Make the call again with shorter arguments, or split the work into smaller calls.",
    );
    run.events.emit({
      type: "tool_call_completed",
      call,
      ok: false,
      output: result.record.output,
      error: result.record.error!,
      durationMs: 0,
    });
    return result;
  });
  return { results };
}

/** Messages `handle.inject()` queued go in before the next model request. */
/** Appends the messages injected since the last turn; true when there were any. */
function deliverInbox(run: ActiveRun): boolean {
  if (run.mailbox.inbox.length === 0) return false;
  for (const { message, queuedSeq } of run.mailbox.takeInbox()) append(run, message, queuedSeq);
  return true;
}

/**
 * What the run needs of `agent`: its model, tools, system prompt and settings. Without a model
 * id to resolve, compaction, plugins, hosts or instruction functions there is nothing to wait
 * for: it returns the setup itself, not a promise (most runs start here).
 */
export function prepareAgent(run: ActiveRun, agent: Agent<any, any>): AgentSetup | Promise<AgentSetup> {
  const config = agent.config;
  const configured = config.model;
  if (
    typeof configured !== "object" ||
    configured === null ||
    Array.isArray(configured) ||
    config.compaction !== undefined
  )
    return prepareResolving(run, agent);
  const given = configured as Model;
  const plugins = checkPlugins(config.plugins, agent.name);
  if (plugins.length) return prepareResolving(run, agent);
  const toolset = agentToolset(run, agent, plugins, undefined);
  if (toolset.hasHosts) return prepareResolving(run, agent, toolset);
  return finishSetup(run, agent, plugins, given, toolset, undefined);
}

/** `prepareAgent` with its waits: a model id, compaction, plugins' setup, hosts' listings. */
async function prepareResolving(
  run: ActiveRun,
  agent: Agent<any, any>,
  built?: Toolset,
): Promise<AgentSetup> {
  const model = await resolveModel(agent.config.model, agent.name);
  const compaction = await resolveCompaction(agent.config.compaction, agent.name, (id) =>
    resolveModel(id, agent.name),
  );
  const plugins = checkPlugins(agent.config.plugins, agent.name);
  const toolset = built ?? agentToolset(run, agent, plugins, compaction);
  // Before hosts are listed and instructions evaluated (either may need what setup prepares),
  // and so before the first model request. The run's end tears them down (`teardownPlugins`).
  if (plugins.length) await setupPlugins(run, plugins);
  const listed = toolset.refresh();
  if (listed) await listed;
  return finishSetup(run, agent, plugins, model, toolset, compaction);
}

/** The agent's tools, its plugins', its handoffs and the recall tool, with names checked. */
function agentToolset(
  run: ActiveRun,
  agent: Agent<any, any>,
  plugins: readonly Plugin<any>[],
  compaction: Compaction | undefined,
): Toolset {
  const groups: ToolGroup[] = [{ from: "the agent's tools", tools: agent.config.tools }];
  for (const entry of plugins) groups.push({ from: `plugin "${entry.name}"`, tools: entry.tools });
  groups.push({ from: "the agent's handoffs", tools: handoffTools(agent) });
  // Recall reads what the store kept of truncated results and what compaction elided.
  if (run.events.store || compaction)
    groups.push({ from: "the run (recall_tool_result)", tools: sharedRecallTool(run.events.store) });
  const toolset = Toolset.forRun(groups, run.control.stopper, (w) =>
    run.events.emit({ type: "warning", ...w }),
  );
  if (toolset.hasHosts) {
    run.control.onClose(() => toolset.close());
    toolset.checkNames();
  }
  return toolset;
}

/** The rest of the setup, once tools are listed: warnings, the system prompt, the output contract. */
function finishSetup(
  run: ActiveRun,
  agent: Agent<any, any>,
  plugins: readonly Plugin<any>[],
  model: Model,
  toolset: Toolset,
  compaction: Compaction | undefined,
): AgentSetup | Promise<AgentSetup> {
  for (const { code, message } of toolset.warnings) run.events.emit({ type: "warning", code, message });
  const system = resolveInstructions(
    agent.config.instructions,
    () => ({ ...run.baseContext(), agent: agent.name, signal: run.control.signal }),
    plugins.length ? plugins.map((entry) => entry.instructions) : undefined,
  );
  if (system instanceof Promise)
    return system.then((text) => setupOf(agent, model, toolset, text, compaction));
  return setupOf(agent, model, toolset, system, compaction);
}

function setupOf(
  agent: Agent<any, any>,
  model: Model,
  toolset: Toolset,
  system: string | undefined,
  compaction: Compaction | undefined,
): AgentSetup {
  const config = agent.config;
  const contract = config.outputType ? outputContract(config.outputType, agent.name) : undefined;
  let settings = config.modelSettings ?? {};
  if (contract && !settings.responseFormat) {
    settings = {
      ...settings,
      responseFormat: { type: "json_schema", name: "output", schema: contract.jsonSchema },
    };
  }
  const setup: AgentSetup = {
    model,
    toolset,
    system,
    settings,
    permissions: config.permissions,
    contract,
  };
  if (compaction) setup.compaction = compaction;
  const guardrails = config.guardrails;
  if (guardrails?.input?.length) setup.inputGuardrails = guardrails.input;
  if (guardrails?.output?.length) setup.outputGuardrails = guardrails.output;
  return setup;
}

async function resolveModel(model: AgentModel | undefined, agentName: string): Promise<Model> {
  if (model === undefined)
    throw new UserError(`agent "${agentName}" has no model: pass { model } to new Agent()`);
  if (Array.isArray(model)) {
    // A fallback chain given as a list: each entry a Model or a "provider:model-id".
    if (model.length === 0)
      throw new UserError(`agent "${agentName}" has an empty model list: give at least one model`);
    const models = await Promise.all(model.map((entry) => resolveModel(entry, agentName)));
    return models.length === 1 ? models[0]! : new FallbackModel(models);
  }
  if (typeof model !== "string") return model as Model;
  // Loaded on demand so `import "quiver-agents"` never pulls in provider code.
  const registry: { resolveModel(id: string): Model } = await import(PROVIDERS_MODULE);
  return registry.resolveModel(model);
}
const PROVIDERS_MODULE = "../../providers/index.js";

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
  // Built field by field, not as a literal: see transcript-objects.ts.
  const message = assistantMessageOf(content, requested.length ? requested.map((r) => r.call) : undefined);
  if (providerData) message.providerData = providerData;
  return message;
}

/** The models a run warned about having no price for (once each). */
const unpriced = new WeakMap<ActiveRun, Set<string>>();

/**
 * A turn of a model with no price under a budget's `maxCostUsd`: that limit cannot count it, which
 * the run says once per model rather than letting the limit silently never trip.
 */
function warnUnpriced(run: ActiveRun, model: string): void {
  const limited = run.limits.budgets.find((b) => b.limits.maxCostUsd !== undefined);
  if (!limited) return;
  const warned = unpriced.get(run) ?? new Set<string>();
  if (warned.has(model)) return;
  unpriced.set(run, warned.add(model));
  run.events.emit({
    type: "warning",
    code: "unpriced_model",
    message: `no price is known for ${model}, so maxCostUsd (${limited.limits.maxCostUsd} USD) does not count its turns: register one with setModelPrice("${model}", { input, output })`,
    runId: "",
    seq: 0,
    at: 0,
    agent: "",
  });
}

function append(run: ActiveRun, message: Message, queuedSeq?: number): void {
  run.transcript.push(message);
  run.events.emit(
    queuedSeq === undefined
      ? { type: "message", message, runId: "", seq: 0, at: 0, agent: "" }
      : { type: "message", message, queuedSeq, runId: "", seq: 0, at: 0, agent: "" },
  );
}

/**
 * What a run that stops without an answer (cancelled, out of turns or budget, parked) returns as
 * `output`: its last text — unless the agent has output guardrails, which never saw that text,
 * so it is withheld (`""`). The transcript keeps it, as it keeps every turn.
 */
function unanswered(run: ActiveRun, setup: AgentSetup): string {
  return setup.outputGuardrails ? "" : run.lastText;
}

function stopOnAbort(run: ActiveRun, setup: AgentSetup): RunResult<any> {
  const output = unanswered(run, setup);
  const reason = run.control.stopper.reason;
  // The store failed: the run cannot go on without losing its log. A guardrail tripped: it fails.
  if (reason instanceof StoreError || reason instanceof GuardrailTripped) throw reason;
  if (reason instanceof BudgetExceeded && run.limits.owns(reason))
    return finishRun(run, "budget", output, reason);
  return finishRun(run, "cancelled", output);
}

/**
 * Ends the run with an answer (`completed`, `ends_turn`), once the agent's output guardrails
 * have passed it: a trip fails the run (`GuardrailTripped`) and the output is withheld.
 */
export function finishWithOutput(
  run: ActiveRun,
  setup: AgentSetup,
  stopReason: "completed" | "ends_turn",
  output: unknown,
  text: string,
): RunResult<any> | Promise<RunResult<any>> {
  const guardrails = setup.outputGuardrails;
  if (!guardrails) return finishRun(run, stopReason, output);
  const subject = { stage: "output" as const, text, value: output };
  return runGuardrails(run, guardrails, subject).then((tripped) => {
    if (tripped) throw tripped;
    return finishRun(run, stopReason, output);
  });
}

/**
 * A model turn that ran beside input guardrails: if it fails, the guardrails still have the
 * last word (a trip is the reason the run ends, whatever the model did meanwhile).
 */
function besideGuardrails<T>(run: ActiveRun, guardrails: Promise<void>, turn: Promise<T>): Promise<T> {
  return turn.catch(async (error: unknown) => {
    await guardrails;
    const reason = run.control.stopper.reason;
    throw reason instanceof GuardrailTripped ? reason : error;
  });
}

/**
 * Starts an agent's input guardrails on what it was given: those with `runInParallel: false`
 * are awaited here (a trip throws); the others run on, and their promise is returned for the
 * loop to await after the model turn. A trip among them stops the run at once, cancelling the
 * turn if it is still streaming.
 */
async function guardInput(
  run: ActiveRun,
  guardrails: ReadonlyArray<Guardrail<any>>,
  scope: string | undefined,
): Promise<{ beside: Promise<void> } | undefined> {
  const subject = inputSubject(run.transcript);
  const first = guardrails.filter((g) => !g.runInParallel);
  if (first.length) {
    const tripped = await runGuardrails(run, first, subject, undefined, scope);
    if (tripped) throw tripped;
  }
  const beside = guardrails.filter((g) => g.runInParallel);
  if (!beside.length) return undefined;
  // Wrapped: an async function returning the promise itself would wait for it.
  return {
    beside: runGuardrails(run, beside, subject, undefined, scope).then((tripped) => {
      if (tripped) run.control.abort(tripped);
    }),
  };
}

export function finishRun(
  run: ActiveRun,
  stopReason: StopReason,
  output: unknown,
  budgetError?: BudgetExceeded,
): RunResult<any> {
  if (budgetError) run.limits.stop = budgetError;
  const end: EventOf<"run_completed"> = {
    type: "run_completed",
    output,
    stopReason,
    usage: { ...run.usage },
    runId: "",
    seq: 0,
    at: 0,
    agent: "",
  };
  emitEnd(run, end);
  return {
    runId: run.runId,
    output,
    messages: run.transcript,
    toolCalls: run.records,
    usage: { ...run.usage },
    stopReason,
    lastAgent: run.agent,
    state: run.state.value,
  };
}

/** Whether the model reported any usage this turn (`Object.keys(…).length` without the array). */
function hasUsage(usage: Partial<Usage>): boolean {
  for (const _ in usage) return true;
  return false;
}
