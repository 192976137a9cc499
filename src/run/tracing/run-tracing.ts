/**
 * OpenTelemetry GenAI spans for one run, derived from its events: `invoke_agent {agent}` for
 * the run, `execute_tool {tool}` for each call (approvals and retries as span events), plus two
 * hooks the loop calls directly: `startChat()` around a model turn (`chat {model}`) and
 * `inCall()` around a tool's `execute`, so that spans the tool (or an HTTP client inside the
 * provider) creates nest under ours when the app has a context manager. Every span is parented
 * explicitly, so without a context manager they still form one trace.
 *
 * An untraced run has no `RunTracing` at all: the loop pays one `undefined` check per event.
 */

import type { EventOf, RunEvent } from "../../contract/events.js";
import type {
  TraceAttributes,
  TracerLike,
  TraceSpan,
  TraceSpanContext,
  TraceSpanOptions,
} from "../../contract/tracer.js";
import type { Model, ModelRequest, ToolCall } from "../../model/types.js";
import type { ActiveRun } from "../state/active-run.js";
import type { ModelTurn } from "../state/model-answer.js";
import type { ChatTracer } from "../state/run-tracer.js";
import {
  argumentsJson,
  finalOutputJson,
  inputMessagesJson,
  outputMessagesJson,
  providerAndModel,
  systemInstructionsJson,
  toolDefinitionsJson,
  usageAttributes,
} from "./gen-ai.js";
import { type OtelApi, otelApi, parseTraceparent, traceparentOf } from "./otel-api.js";

/** What `instrument()` sets for every run that has no `tracer` of its own. */
export type TracingDefaults = { tracer: TracerLike; captureContent: boolean };

let defaults: TracingDefaults | undefined;

/** Sets (or, with `undefined`, clears) the tracing every run gets by default. */
export function setTracingDefaults(value: TracingDefaults | undefined): void {
  defaults = value;
}

/** The tracing a run gets by default, if `instrument()` set one. */
export function tracingDefaults(): TracingDefaults | undefined {
  return defaults;
}

// Numeric values of @opentelemetry/api's enums (stable since 1.0): the core never imports it eagerly.
const SPAN_KIND_INTERNAL = 0;
const SPAN_KIND_CLIENT = 2;
const STATUS_ERROR = 2;

/**
 * The tracing of a run: its own `tracer` option, else its parent run's, else `instrument()`'s.
 * `tracer: false` turns it off for one run. Loads `@opentelemetry/api` (a `UserError` naming
 * the install line when it is missing) only when a tracer applies.
 */
export function openTracing(run: ActiveRun): RunTracing | undefined {
  const own = run.options.tracer;
  if (own === false) return undefined;
  const above = run.parent?.run.tracing;
  const tracer = own ?? above?.tracer ?? defaults?.tracer;
  if (!tracer) return undefined;
  const captureContent =
    run.options.captureContent ?? above?.captureContent ?? defaults?.captureContent ?? false;
  const api = otelApi();
  // A child run nests under the call that started it; a root run under whatever span is active
  // where it was started (an HTTP request's, say).
  const parentContext = above && run.parent ? above.callContext(run.parent.callId) : api.context.active();
  return new RunTracing(run, api, tracer, captureContent, parentContext);
}

type CallSpan = { span: TraceSpan; context?: unknown };

export class RunTracing {
  readonly tracer: TracerLike;
  readonly captureContent: boolean;
  readonly #run: ActiveRun;
  readonly #api: OtelApi;
  readonly #parentContext: unknown;
  #span: TraceSpan | undefined;
  #context: unknown;
  #link: TraceSpanContext | undefined;
  readonly #calls = new Map<string, CallSpan>();
  #chat: ChatTrace | undefined;
  /** Set when the tracer threw: a run never fails because of its tracing, it stops tracing. */
  #broken = false;

  constructor(
    run: ActiveRun,
    api: OtelApi,
    tracer: TracerLike,
    captureContent: boolean,
    parentContext: unknown,
  ) {
    this.#run = run;
    this.#api = api;
    this.tracer = tracer;
    this.captureContent = captureContent;
    this.#parentContext = parentContext;
    this.#context = parentContext;
  }

  /** A resumed run's span links to the trace its `run_started` recorded. */
  linkTo(
    traceparent: string | undefined,
    decided?: ReadonlyMap<string, { approved: boolean; by: string; reason?: string }>,
  ): void {
    this.#link = parseTraceparent(traceparent);
    if (decided?.size) this.#decidedWhileParked = decided;
  }

  /** Approvals decided while the run was parked: recorded on their call's span when it starts. */
  #decidedWhileParked: ReadonlyMap<string, { approved: boolean; by: string; reason?: string }> | undefined;

  /** Sees every event the run emits, after its base is stamped and before anyone else sees it. */
  observe(event: RunEvent): void {
    if (this.#broken) return;
    try {
      this.#observe(event);
    } catch (error) {
      this.stop(error);
    }
  }

  /** The tracer (or an SDK behind it) threw: say so once, and trace nothing more in this run. */
  stop(error: unknown): void {
    if (this.#broken) return;
    this.#broken = true;
    process.emitWarning(
      `quiver-agents: tracing stopped for run ${this.#run.runId}: ${error instanceof Error ? error.message : String(error)}`,
      { code: "QUIVER_TRACING" },
    );
  }

  /** True once tracing stopped (the OTel API threw): no more spans for this run. */
  get broken(): boolean {
    return this.#broken;
  }

  #observe(event: RunEvent): void {
    switch (event.type) {
      case "run_started": {
        const traceparent = this.#startRun(event, undefined);
        if (traceparent) event.traceparent = traceparent;
        if (this.captureContent)
          this.#span?.setAttribute("gen_ai.input.messages", inputMessagesJson(event.input));
        break;
      }
      case "run_resumed": {
        const traceparent = this.#startRun(event, this.#link);
        if (traceparent) event.traceparent = traceparent;
        this.#span?.setAttribute("quiver.resumed_from_seq", event.fromSeq);
        break;
      }
      case "approval_required":
        this.#callSpan(event.call).span.addEvent("quiver.approval.required", {
          "quiver.approval.reason": event.reason,
        });
        break;
      case "approval_resolved": {
        const { span } = this.#callSpan(event.call);
        const attributes = {
          "quiver.approval.decision": event.decision,
          "quiver.approval.decided_by": event.by,
        };
        // A reviewer's reason is their own words (it may name the customer): content, like results.
        span.addEvent(
          "quiver.approval.resolved",
          this.captureContent ? { ...attributes, "quiver.approval.reason": event.reason } : attributes,
        );
        span.setAttributes(attributes);
        break;
      }
      case "tool_call_started":
        this.#callSpan(event.call).span.setAttribute("quiver.tool.attempts", event.attempt);
        break;
      case "tool_call_retry":
        this.#callSpan(event.call).span.addEvent("quiver.tool.retry", {
          "quiver.tool.attempt": event.attempt,
          "quiver.tool.retry_delay_ms": event.delayMs,
          "error.type": event.error.kind,
          ...(this.captureContent && { "quiver.error.message": event.error.message }),
        });
        break;
      case "tool_call_completed": {
        const { span } = this.#callSpan(event.call);
        if (this.captureContent) span.setAttribute("gen_ai.tool.call.result", event.output);
        // A tool's error text is content too (it often quotes what the call was about).
        if (!event.ok && event.error)
          fail(span, event.error.kind, this.captureContent ? event.error.message : event.error.kind);
        span.end();
        this.#calls.delete(event.call.id);
        break;
      }
      case "guardrail_passed":
      case "guardrail_tripped":
        this.#guardrailSpan(event);
        break;
      case "model_fallback":
        (this.#chat?.span ?? this.#span)?.addEvent("quiver.model.fallback", {
          "quiver.fallback.from": event.from,
          "quiver.fallback.to": event.to,
          "quiver.fallback.reason": event.reason,
        });
        break;
      case "handoff":
        this.#span?.addEvent("quiver.handoff", {
          "quiver.handoff.from": event.from,
          "quiver.handoff.to": event.to,
        });
        break;
      case "run_tainted":
        this.#span?.addEvent("quiver.run.tainted", { "quiver.taint.source": event.source });
        break;
      case "warning":
        (this.#chat?.span ?? this.#span)?.addEvent("quiver.warning", {
          "quiver.warning.code": event.code,
          "quiver.warning.message": event.message,
        });
        break;
      case "run_completed":
        this.#span?.setAttributes({
          ...usageAttributes(event.usage),
          "quiver.stop_reason": event.stopReason,
        });
        if (this.captureContent)
          this.#span?.setAttribute("gen_ai.output.messages", finalOutputJson(event.output, event.stopReason));
        this.#endRun();
        break;
      case "run_parked":
        for (const { span } of this.#calls.values()) span.setAttribute("quiver.tool.parked", true);
        // The run's totals so far, as run_completed gives them: a parked run has no run_completed.
        this.#span?.setAttributes(usageAttributes(this.#run.usage));
        this.#span?.setAttribute("quiver.stop_reason", "awaiting_approval");
        this.#endRun();
        break;
      case "run_failed":
        this.#chat?.fail(Object.assign(new Error(event.message), { name: event.name }));
        for (const { span } of this.#calls.values()) fail(span, event.name, event.message);
        if (this.#span) {
          this.#span.addEvent("exception", {
            "exception.type": event.name,
            "exception.message": event.message,
          });
          fail(this.#span, event.name, event.message);
          this.#span.setAttribute("quiver.failure_kind", event.kind);
        }
        this.#endRun();
        break;
    }
  }

  /**
   * Starts the `chat {model}` span of one model turn. The model's stream is read inside it
   * (`within`), so spans an instrumented HTTP client starts under the provider nest here.
   */
  startChat(model: Model, request: ModelRequest): ChatTrace | undefined {
    if (this.#broken) return undefined;
    try {
      return this.#startChat(model, request);
    } catch (error) {
      this.stop(error);
      return undefined;
    }
  }

  #startChat(model: Model, request: ModelRequest): ChatTrace {
    return this.chatSpan(model.name, request);
  }

  /** The `chat {model}` span of a turn asking `modelName` (also the next model of a fallback chain). */
  chatSpan(modelName: string, request: ModelRequest): ChatTrace {
    const { provider, model: modelId } = providerAndModel(modelName);
    const settings = request.settings;
    const attributes: TraceAttributes = {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": provider,
      "gen_ai.request.model": modelId,
      "gen_ai.agent.name": this.#run.agent.name,
      "gen_ai.conversation.id": this.#run.options.sessionId,
      "gen_ai.request.temperature": settings.temperature,
      "gen_ai.request.top_p": settings.topP,
      "gen_ai.request.max_tokens": settings.maxTokens,
      "gen_ai.request.stop_sequences": settings.stop,
      "quiver.turn": this.#run.turn,
    };
    const span = this.#start(`chat ${modelId}`, { kind: SPAN_KIND_CLIENT, attributes });
    if (this.captureContent) {
      if (request.system !== undefined)
        span.setAttribute("gen_ai.system_instructions", systemInstructionsJson(request.system));
      span.setAttribute("gen_ai.input.messages", inputMessagesJson(request.messages));
      if (request.tools.length)
        span.setAttribute("gen_ai.tool.definitions", toolDefinitionsJson(request.tools));
    }
    this.#chat = new ChatTrace(this, span, this.#api.trace.setSpan(this.#context, span), request, modelId);
    return this.#chat;
  }

  /** Runs a tool's `execute` with its `execute_tool` span as the active span. */
  inCall<T>(callId: string, fn: () => T): T {
    const entry = this.#calls.get(callId);
    if (!entry || this.#broken) return fn();
    return this.activate(() => (entry.context ??= this.#api.trace.setSpan(this.#context, entry.span)), fn);
  }

  /** Calls `fn` inside the context `contextOf()` gives; if the API throws, `fn` still runs (once). */
  activate<T>(contextOf: () => unknown, fn: () => T): T {
    let called = false;
    try {
      return this.#api.context.with(contextOf(), () => {
        called = true;
        return fn();
      });
    } catch (error) {
      if (called) throw error;
      this.stop(error);
      return fn();
    }
  }

  /** The context a child run started by this call nests under. */
  callContext(callId: string): unknown {
    const entry = this.#calls.get(callId);
    if (!entry || this.#broken) return this.#context;
    try {
      entry.context ??= this.#api.trace.setSpan(this.#context, entry.span);
      return entry.context;
    } catch (error) {
      this.stop(error);
      return this.#context;
    }
  }

  /** The chat span ended (called by `ChatTrace`). */
  chatEnded(chat: ChatTrace): void {
    if (this.#chat === chat) this.#chat = undefined;
  }

  #start(name: string, options: TraceSpanOptions): TraceSpan {
    return this.tracer.startSpan(name, options, this.#context);
  }

  /** Starts the run's `invoke_agent` span; returns its `traceparent` for the log. */
  #startRun(event: RunEvent, link: TraceSpanContext | undefined): string | undefined {
    if (this.#span) return undefined;
    const run = this.#run;
    const attributes: TraceAttributes = {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": event.agent,
      "gen_ai.conversation.id": run.options.sessionId,
      "quiver.run.id": run.runId,
      "quiver.parent_run.id": run.parent?.run.runId,
      "quiver.parent_call.id": run.parent?.callId,
    };
    const configured = run.agent.config.model;
    const model = Array.isArray(configured) ? configured[0] : configured;
    const modelName = typeof model === "string" ? model : model?.name;
    if (modelName !== undefined) {
      const { provider, model: modelId } = providerAndModel(modelName);
      attributes["gen_ai.provider.name"] = provider;
      attributes["gen_ai.request.model"] = modelId;
    }
    const options: TraceSpanOptions = { kind: SPAN_KIND_INTERNAL, attributes };
    if (link) options.links = [{ context: link, attributes: { "quiver.link": "resumed_from" } }];
    const span = this.tracer.startSpan(`invoke_agent ${event.agent}`, options, this.#parentContext);
    this.#span = span;
    this.#context = this.#api.trace.setSpan(this.#parentContext, span);
    return traceparentOf(span.spanContext());
  }

  /** The `execute_tool` span of a call, started by its first event that is about running it. */
  #callSpan(call: ToolCall): CallSpan {
    let entry = this.#calls.get(call.id);
    if (!entry) {
      const span = this.#start(`execute_tool ${call.name}`, {
        kind: SPAN_KIND_INTERNAL,
        attributes: {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": call.name,
          "gen_ai.tool.call.id": call.id,
          "gen_ai.tool.type": "function",
        },
      });
      if (this.captureContent)
        span.setAttribute("gen_ai.tool.call.arguments", argumentsJson(call.args, call.rawArgs));
      const decided = this.#decidedWhileParked?.get(call.id);
      if (decided) {
        const attributes = {
          "quiver.approval.decision": decided.approved ? "approved" : "denied",
          "quiver.approval.decided_by": decided.by,
        };
        span.addEvent(
          "quiver.approval.resolved",
          this.captureContent ? { ...attributes, "quiver.approval.reason": decided.reason } : attributes,
        );
        span.setAttributes(attributes);
      }
      entry = { span };
      this.#calls.set(call.id, entry);
    }
    return entry;
  }

  /**
   * One span per guardrail check, recorded from its outcome event (which carries how long the
   * check took): under the call's span for a tool's guardrails, else under the run's.
   */
  #guardrailSpan(event: EventOf<"guardrail_passed"> | EventOf<"guardrail_tripped">): void {
    const tripped = event.type === "guardrail_tripped";
    const attributes: TraceAttributes = {
      "quiver.guardrail.name": event.guardrail,
      "quiver.guardrail.stage": event.stage,
      "quiver.guardrail.tripped": tripped,
      "gen_ai.tool.call.id": event.callId,
    };
    if (tripped) attributes["quiver.guardrail.reason"] = event.reason;
    const parent = event.callId !== undefined ? this.callContext(event.callId) : this.#context;
    const span = this.tracer.startSpan(
      `guardrail ${event.guardrail}`,
      { kind: SPAN_KIND_INTERNAL, attributes, startTime: event.at - event.durationMs },
      parent,
    );
    span.end(event.at);
  }

  /** Ends the run's span and anything still open under it (a run that stopped mid-turn). */
  #endRun(): void {
    this.#chat?.abandon();
    for (const { span } of this.#calls.values()) span.end();
    this.#calls.clear();
    this.#span?.end();
    this.#span = undefined;
  }
}

/** The `chat {model}` span of one model turn. Ends exactly once. */
export class ChatTrace {
  readonly span: TraceSpan;
  readonly #tracing: RunTracing;
  readonly #context: unknown;
  readonly #request: ModelRequest;
  readonly #model: string;
  #ended = false;

  constructor(tracing: RunTracing, span: TraceSpan, context: unknown, request: ModelRequest, model: string) {
    this.#tracing = tracing;
    this.span = span;
    this.#context = context;
    this.#request = request;
    this.#model = model;
  }

  /** The chain moved on: this model failed the turn; a new span follows the one that answers. */
  fellBack(to: string, reason: string): ChatTracer {
    this.#close(() => fail(this.span, "model_fallback", reason));
    if (this.#tracing.broken) return this;
    try {
      return this.#tracing.chatSpan(to, this.#request);
    } catch (error) {
      this.#tracing.stop(error);
      return this;
    }
  }

  /** Calls `fn` with this span active. */
  within<T>(fn: () => T): T {
    return this.#tracing.activate(() => this.#context, fn);
  }

  /** The model answered: finish reason, token usage and (with content capture) the answer. */
  end(turn: ModelTurn): void {
    this.#close(() => {
      this.span.setAttributes({
        "gen_ai.response.finish_reasons": [turn.finish],
        "gen_ai.response.model": this.#model,
        ...usageAttributes(turn.usage),
      });
      if (this.#tracing.captureContent) {
        const calls = turn.calls.map((c) => ({
          id: c.claimedId ?? c.providerId ?? "",
          name: c.name,
          args: c.args,
        }));
        this.span.setAttribute(
          "gen_ai.output.messages",
          outputMessagesJson(turn.text, turn.reasoning, calls, turn.finish),
        );
      }
    });
  }

  /** The model call failed (a `ProviderError` after the provider's retries, a broken stream). */
  fail(error: unknown): void {
    this.#close(() => {
      const failure = error instanceof Error ? error : new Error(String(error));
      const status = (failure as { status?: unknown }).status;
      if (typeof status === "number") this.span.setAttribute("http.response.status_code", status);
      this.span.recordException(failure);
      fail(this.span, failure.name, failure.message);
    });
  }

  /** The turn was cut short (the run was cancelled, or a steering message interrupted it). */
  abandon(): void {
    this.#close(() => this.span.setAttribute("quiver.turn.abandoned", true));
  }

  #close(record: () => void): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#tracing.chatEnded(this);
    try {
      record();
      this.span.end();
    } catch (error) {
      this.#tracing.stop(error);
    }
  }
}

function fail(span: TraceSpan, type: string, message: string): void {
  span.setAttribute("error.type", type);
  span.setStatus({ code: STATUS_ERROR, message });
}
