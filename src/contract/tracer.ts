/**
 * The parts of OpenTelemetry's tracing API that a run uses, described structurally. An
 * `@opentelemetry/api` `Tracer` satisfies `TracerLike`, yet nothing here names that package:
 * it is an optional peer, and a project that never traces must still compile against Quiver's
 * types without it.
 */

/** An attribute value as OpenTelemetry accepts it. */
export type TraceAttributeValue = string | number | boolean | string[] | number[] | boolean[];

/** Span attributes; `undefined` values are dropped by the SDK. */
export type TraceAttributes = Record<string, TraceAttributeValue | undefined>;

/** What identifies a span across processes (W3C trace context). */
export interface TraceSpanContext {
  traceId: string;
  spanId: string;
  traceFlags: number;
  isRemote?: boolean;
}

/** A link from a span to another span, possibly in another trace. */
export interface TraceLink {
  context: TraceSpanContext;
  attributes?: TraceAttributes;
}

/** The options of `Tracer.startSpan` that runs use. `kind`: 0 INTERNAL, 2 CLIENT. */
export interface TraceSpanOptions {
  kind?: number;
  attributes?: TraceAttributes;
  links?: TraceLink[];
  /** Epoch ms, for a span recorded after the fact (a guardrail check, from its event). */
  startTime?: number;
}

/** The span methods runs call. */
export interface TraceSpan {
  spanContext(): TraceSpanContext;
  setAttribute(key: string, value: TraceAttributeValue): unknown;
  setAttributes(attributes: TraceAttributes): unknown;
  addEvent(name: string, attributes?: TraceAttributes): unknown;
  /** `code`: 1 OK, 2 ERROR. */
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: Error): void;
  /** `endTime`: epoch ms; now when absent. */
  end(endTime?: number): void;
  isRecording(): boolean;
}

/**
 * An OpenTelemetry `Tracer` (from `@opentelemetry/api`'s `trace.getTracer(...)` or a
 * `TracerProvider`). Spans are parented explicitly through the third argument of `startSpan`.
 *
 * @example
 * import { trace } from "@opentelemetry/api";
 * await Runner.run(agent, "Hi", { tracer: trace.getTracer("my-app") });
 */
export interface TracerLike {
  startSpan(name: string, options?: TraceSpanOptions, context?: unknown): TraceSpan;
}

/** An OpenTelemetry `TracerProvider`: where `instrument()` gets its tracer. */
export interface TracerProviderLike {
  getTracer(name: string, version?: string): TracerLike;
}
