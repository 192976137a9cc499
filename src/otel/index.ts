/**
 * `quiver-agents/otel`: OpenTelemetry GenAI spans for runs. Importing it loads nothing from
 * OpenTelemetry; `instrument()` (or a run's `tracer` option) loads `@opentelemetry/api`, an
 * optional peer that must be the application's own copy.
 */
export type {
  TraceAttributes,
  TraceAttributeValue,
  TraceLink,
  TracerLike,
  TracerProviderLike,
  TraceSpan,
  TraceSpanContext,
  TraceSpanOptions,
} from "../contract/tracer.js";
export { type InstrumentOptions, instrument, TRACER_NAME } from "./instrument.js";
