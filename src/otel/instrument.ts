import { createRequire } from "node:module";
import type { TracerLike, TracerProviderLike } from "../contract/tracer.js";
import { otelApi } from "../run/tracing/otel-api.js";
import { setTracingDefaults, type TracingDefaults, tracingDefaults } from "../run/tracing/run-tracing.js";

/** The instrumentation scope name of Quiver's spans. */
export const TRACER_NAME = "quiver-agents";

const version = (createRequire(import.meta.url)("../../package.json") as { version: string }).version;

/** What `instrument()` accepts. */
export type InstrumentOptions = {
  /**
   * Where spans go. Default: the globally registered provider (`provider.register()`, or
   * `trace.setGlobalTracerProvider`), including one registered after this call.
   */
  tracerProvider?: TracerProviderLike;
  /** A tracer to use as it is, instead of one from a provider. */
  tracer?: TracerLike;
  /**
   * Record message content on spans: system instructions, prompts and answers
   * (`gen_ai.input.messages`, `gen_ai.output.messages`), tool arguments and results. Default
   * false: they may hold personal data. A run's own `captureContent` option wins.
   */
  captureContent?: boolean;
};

/**
 * Traces every run from now on with OpenTelemetry GenAI spans: `invoke_agent {agent}` per run
 * and child run, `chat {model}` per model turn, `execute_tool {tool}` per call. A run's own
 * `tracer` option (or `tracer: false`) wins. Returns a function that undoes this call.
 * Needs `@opentelemetry/api` (a `UserError` names the install line when it is missing).
 *
 * @example
 * import { instrument } from "quiver-agents/otel";
 * const uninstrument = instrument({ tracerProvider: provider });
 * await Runner.run(agent, "Hi"); // traced
 * uninstrument();
 */
export function instrument(options: InstrumentOptions = {}): () => void {
  const api = otelApi();
  const tracer = options.tracer ?? (options.tracerProvider ?? api.trace).getTracer(TRACER_NAME, version);
  const previous = tracingDefaults();
  const installed: TracingDefaults = { tracer, captureContent: options.captureContent ?? false };
  setTracingDefaults(installed);
  return () => {
    // Undo only our own setting: a later instrument() call stays in force.
    if (tracingDefaults() === installed) setTracingDefaults(previous);
  };
}
