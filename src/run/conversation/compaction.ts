import { timeoutSignal } from "../../abort.js";
import type { EventOf } from "../../contract/events.js";
import type { Message, Model, ModelRequest, ToolSpec, Usage } from "../../model/types.js";
import type { Compaction } from "../config/compaction-options.js";
import type { ActiveRun } from "../state/active-run.js";
import { costOf } from "../state/pricing.js";
import { type CompactionChange, type ContextView, type ElidedResult, ensureView } from "./context-view.js";
import { Calibration, charsToTokens, fixedChars, imageRuleFor } from "./estimate.js";
import { summarizeTurns } from "./summarize.js";

/**
 * A compaction goes down to this share of the limit, not just under it: the next turns then fit
 * without another change, so the prompt prefix (and the provider's cache of it) stays the same.
 */
const TARGET_SHARE = 0.7;
/** A summary request that takes longer than this gives up (the run goes on with elisions only). */
const SUMMARY_TIMEOUT_MS = 120_000;
/** A summarizer that failed is not asked again for this long (its next request would likely fail the same way: a quota, an outage). */
const SUMMARY_RETRY_MS = 60_000;
const RECALL = "recall_tool_result";

/** Summarizers that failed, with when they may be asked again: shared by every run (a session's next run too). */
const summarizerDownUntil = new WeakMap<Model, number>();

/** Per-run bookkeeping beside the view: the estimate's correction and what was last sent. */
type RunContextState = {
  view: ContextView;
  calibration: Calibration;
  /** The uncorrected estimate of the last request sent, in tokens. */
  sent: number;
  /** From a resumed log: what the provider counted for the last request, to correct the first estimate. */
  reported?: { inputTokens: number; messages: number };
  fixed?: { system: string | undefined; tools: readonly ToolSpec[]; chars: number };
  offered?: { from: ToolSpec[]; specs: ToolSpec[] };
};

const states = new WeakMap<ActiveRun, RunContextState>();

function stateOf(run: ActiveRun): RunContextState {
  let state = states.get(run);
  if (!state) {
    state = { view: ensureView(run.transcript), calibration: new Calibration(), sent: 0 };
    states.set(run, state);
  }
  return state;
}

/**
 * Views of stored conversations, keyed by their last message: a run that continues one (a
 * session, or `loadSession()` history passed as input) starts from the view its last run
 * ended with instead of compacting afresh — no second summary, and the prompt prefix stays.
 */
const conversationViews = new WeakMap<Message, { length: number; logged: LoggedCompaction }>();

/** Remembers the view a stored conversation ended with (`loadSession` calls this). */
export function rememberView(messages: readonly Message[], logged: LoggedCompaction | undefined): void {
  const last = messages[messages.length - 1];
  if (last && logged) conversationViews.set(last, { length: messages.length, logged });
}

/** A fresh run whose transcript begins with a remembered conversation takes over its view, as its own compaction event. */
function adoptConversationView(
  run: ActiveRun,
  state: RunContextState,
  config: Compaction,
  request: ModelRequest,
): void {
  const transcript = run.transcript;
  for (let index = transcript.length - 1; index >= 0; index--) {
    const known = conversationViews.get(transcript[index]!);
    if (!known || known.length !== index + 1) continue;
    const { view } = state;
    const fixed = fixedChars(request.system, request.tools);
    const before = state.calibration.tokens(fixed + view.chars);
    for (const change of known.logged.changes) view.apply(change);
    if (known.logged.lastRequest) state.reported = known.logged.lastRequest;
    if (!view.compacted) return;
    // This run's own log must rebuild its view: one event that says where the conversation stood.
    const summary = view.summary === undefined ? undefined : { text: view.summary, messages: view.cut };
    const after = state.calibration.tokens(fixed + view.chars);
    emitCompaction(run, view.elided(), summary, before, after, config.maxInputTokens);
    return;
  }
}

/** What a log says about a run's view: its compaction changes and the provider's last count. */
export type LoggedCompaction = {
  changes: CompactionChange[];
  lastRequest?: { inputTokens: number; messages: number };
};

/** A resumed run continues with the view its log describes (call after its transcript is restored). */
export function restoreView(run: ActiveRun, logged: LoggedCompaction | undefined): void {
  if (!logged) return;
  const state = stateOf(run);
  state.view.sync();
  for (const change of logged.changes) state.view.apply(change);
  if (logged.lastRequest) state.reported = logged.lastRequest;
}

/** A handoff's `inputFilter` rewrote the transcript: the view starts over from it. */
export function resetView(run: ActiveRun): void {
  states.get(run)?.view.reset();
}

/**
 * Before a model request: keeps the view in step with the transcript (O(new messages)),
 * compacts it when the request would exceed `maxInputTokens`, and points the request at it.
 * Returns a promise only when a summary must be written.
 */
export function compactRequest(
  run: ActiveRun,
  config: Compaction,
  request: ModelRequest & { tools: ToolSpec[] },
): Promise<void> | undefined {
  const fresh = !states.has(run);
  const state = stateOf(run);
  const { view } = state;
  // Images count as the provider the request goes to bills them (OpenAI's tiles, Anthropic's area).
  view.imageRule = imageRuleFor(modelNameOf(run));
  view.sync();
  if (fresh) adoptConversationView(run, state, config, request);
  const allTools = request.tools;
  request.tools = offered(state, allTools, run);
  let fixed = fixedOf(state, request.system, request.tools);
  if (state.reported) {
    state.calibration.observe(
      charsToTokens(fixed + view.charsBefore(state.reported.messages)),
      state.reported.inputTokens,
    );
    state.reported = undefined;
  }
  if (state.calibration.tokens(fixed + view.chars) <= config.maxInputTokens) {
    request.messages = view.messages;
    state.sent = charsToTokens(fixed + view.chars);
    return undefined;
  }
  const finish = () => {
    // The recall tool appears with the first elision (a change of view anyway).
    const tools = offered(state, allTools, run);
    if (tools !== request.tools) {
      request.tools = tools;
      fixed = fixedOf(state, request.system, tools);
    }
    request.messages = view.messages;
    state.sent = charsToTokens(fixed + view.chars);
  };
  const compacting = compact(run, state, config, () => fixed);
  if (!compacting) {
    finish();
    return undefined;
  }
  return compacting.then(finish);
}

/** The provider's count for the request just sent corrects the next estimates. */
export function observeUsage(run: ActiveRun, usage: Partial<Usage>): void {
  const state = states.get(run);
  if (state) state.calibration.observe(state.sent, usage.inputTokens);
}

function compact(
  run: ActiveRun,
  state: RunContextState,
  config: Compaction,
  fixed: () => number,
): Promise<void> | undefined {
  const { view, calibration } = state;
  const target = Math.floor(config.maxInputTokens * TARGET_SHARE);
  const tokens = () => calibration.tokens(fixed() + view.chars);
  const fits = () => tokens() <= target;
  const before = tokens();
  // Stubs first, oldest first: they cost no model call. Down to the low-water mark, not just
  // under the limit, or the next turn or two would each be another compaction; into the kept
  // turns if need be (never the latest turn's results: the model is answering them).
  const elided = view.elideOldest(view.windowStart(1), fits);
  const finish = (summarized: Summarized) => {
    const summary = summarized.outcome === "summarised" ? summarized.summary : undefined;
    // Results elided and then summarised in the same change are only in the summary.
    const shown = summary ? elided.filter((entry) => entry.index >= summary.messages) : elided;
    if (shown.length || summary) emitCompaction(run, shown, summary, before, tokens(), config.maxInputTokens);
    const after = tokens();
    if (after > config.maxInputTokens) warnInsufficient(run, config, after, summarized);
    return undefined;
  };
  const keepFrom = view.windowStart(config.keepRecentTurns);
  if (fits()) return finish({ outcome: "not needed" });
  if (!config.summarize) return finish({ outcome: "no summarizer" });
  if (keepFrom <= view.cut) return finish({ outcome: "nothing older" });
  const downFor = (summarizerDownUntil.get(config.summarize) ?? 0) - Date.now();
  if (downFor > 0) return finish({ outcome: "failed earlier", retryInMs: downFor });
  // One summarizer call per compaction: it covers every turn before the kept ones, so the
  // view drops well below the mark and the next summary is many turns away.
  return summarizeOlder(run, state, config.summarize, config, keepFrom).then(finish);
}

/** What the summarizer did in one compaction, for the warning that says why the view is still too big. */
type Summarized =
  | { outcome: "not needed" | "no summarizer" | "nothing older" }
  | { outcome: "summarised"; summary: { text: string; messages: number } }
  | { outcome: "failed" | "failed earlier"; retryInMs: number }
  | { outcome: "cancelled" };

function warnInsufficient(run: ActiveRun, config: Compaction, after: number, summarized: Summarized): void {
  const turns = config.keepRecentTurns;
  const why = (() => {
    switch (summarized.outcome) {
      case "failed":
        return `the summarizer failed (see the compaction_summary_failed warning), so older turns are shown as they are, with their tool results elided`;
      case "failed earlier":
        return `the summarizer failed recently and is not asked again for ${Math.ceil(summarized.retryInMs / 1000)} s, so older turns are shown as they are, with their tool results elided`;
      case "no summarizer":
        return `even with every old tool result elided: the last ${turns} turns are never summarised and there is no summarizer for the older ones. Give compaction a summarize model, lower keepRecentTurns, or raise the limit`;
      default:
        return `even with older turns summarised and old tool results elided: the last ${turns} turns are never summarised, and the latest one is kept whole. Lower keepRecentTurns, or raise the limit`;
    }
  })();
  run.events.emit({
    type: "warning",
    code: "compaction_insufficient",
    message:
      `the next request needs about ${after.toLocaleString("en-US")} input tokens, over compaction.maxInputTokens ` +
      `(${config.maxInputTokens.toLocaleString("en-US")}): ${why}.`,
  });
}

async function summarizeOlder(
  run: ActiveRun,
  state: RunContextState,
  model: Model,
  config: Compaction,
  upTo: number,
): Promise<Summarized> {
  const { view } = state;
  const range = run.transcript.slice(view.cut, upTo);
  const deadline = timeoutSignal(SUMMARY_TIMEOUT_MS);
  const signal = AbortSignal.any([run.control.signal, deadline.signal]);
  try {
    const { text, usage } = await summarizeTurns(
      model,
      view.summary,
      range,
      config.maxInputTokens * 3,
      signal,
    );
    if (Object.keys(usage).length) {
      const costUsd = costOf(model.name, usage);
      run.addUsage(costUsd === undefined ? usage : { ...usage, costUsd }, model.name);
    }
    summarizerDownUntil.delete(model);
    // A summary is a digest: one that would crowd the window is cut to a quarter of it.
    const clipped =
      text.length > config.maxInputTokens ? `${text.slice(0, config.maxInputTokens)} […]` : text;
    view.summarize(upTo, clipped);
    return { outcome: "summarised", summary: { text: clipped, messages: upTo } };
  } catch (error) {
    if (run.control.signal.aborted) return { outcome: "cancelled" };
    summarizerDownUntil.set(model, Date.now() + SUMMARY_RETRY_MS);
    run.events.emit({
      type: "warning",
      code: "compaction_summary_failed",
      message: `the summarizer "${model.name}" failed, so older turns stay as they are (it is not asked again for ${SUMMARY_RETRY_MS / 1000} s): ${(error as Error)?.message ?? String(error)}`,
    });
    return { outcome: "failed", retryInMs: SUMMARY_RETRY_MS };
  } finally {
    deadline.clear();
  }
}

function emitCompaction(
  run: ActiveRun,
  elided: ElidedResult[],
  summary: { text: string; messages: number } | undefined,
  tokensBefore: number,
  tokensAfter: number,
  maxInputTokens: number,
): void {
  const event: EventOf<"compaction"> = {
    type: "compaction",
    elided,
    tokensBefore,
    tokensAfter,
    maxInputTokens,
    runId: "",
    seq: 0,
    at: 0,
    agent: "",
  };
  if (summary) event.summary = summary;
  run.events.emit(event);
}

/** The tools offered: `recall_tool_result` only once something can be recalled (or the run has a store). */
function offered(state: RunContextState, specs: ToolSpec[], run: ActiveRun): ToolSpec[] {
  if (run.events.store || state.view.compacted) return specs;
  if (state.offered?.from !== specs) {
    state.offered = { from: specs, specs: specs.filter((spec) => spec.name !== RECALL) };
  }
  return state.offered.specs.length === specs.length ? specs : state.offered.specs;
}

function fixedOf(state: RunContextState, system: string | undefined, tools: readonly ToolSpec[]): number {
  const fixed = state.fixed;
  if (fixed && fixed.system === system && fixed.tools === tools) return fixed.chars;
  const chars = fixedChars(system, tools);
  state.fixed = { system, tools, chars };
  return chars;
}

/** The name of the model the run's agent speaks with now (the first of a fallback chain). */
function modelNameOf(run: ActiveRun): string | undefined {
  const model = run.agent.config.model;
  const first = Array.isArray(model) ? model[0] : model;
  return typeof first === "string" ? first : first?.name;
}
