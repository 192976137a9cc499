import { createRequire } from "node:module";
import type { TracerLike, TraceSpan, TraceSpanContext } from "../../contract/tracer.js";
import { UserError } from "../../errors.js";

/** The functions of `@opentelemetry/api` a traced run calls. */
export interface OtelApi {
  context: {
    active(): unknown;
    with<T>(context: unknown, fn: () => T): T;
  };
  trace: {
    setSpan(context: unknown, span: TraceSpan): unknown;
    getTracer(name: string, version?: string): TracerLike;
  };
}

let loaded: OtelApi | undefined;

/**
 * `@opentelemetry/api`, loaded on the first traced run. It is an optional peer and must be the
 * application's own copy: the API keeps its registrations (provider, context manager) in one
 * global slot per major version, so the copy this resolves to sees what the app registered.
 * `import "quiver-agents"` never loads it.
 */
export function otelApi(): OtelApi {
  if (loaded) return loaded;
  try {
    loaded = createRequire(import.meta.url)("@opentelemetry/api") as OtelApi;
  } catch (error) {
    if ((error as { code?: string }).code !== "MODULE_NOT_FOUND") throw error;
    throw new UserError(
      "tracing needs the OpenTelemetry API: npm install @opentelemetry/api (an optional peer of quiver-agents)",
    );
  }
  return loaded;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The W3C `traceparent` header value of a span, or `undefined` for an invalid (no-op) span. */
export function traceparentOf(context: TraceSpanContext): string | undefined {
  if (!TRACEPARENT.test(`00-${context.traceId}-${context.spanId}-00`)) return undefined;
  if (/^0+$/.test(context.traceId) || /^0+$/.test(context.spanId)) return undefined;
  return `00-${context.traceId}-${context.spanId}-${(context.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

/** The span context a `traceparent` names (remote: it was recorded by another process or run). */
export function parseTraceparent(value: unknown): TraceSpanContext | undefined {
  if (typeof value !== "string") return undefined;
  const match = TRACEPARENT.exec(value.trim().toLowerCase());
  if (!match) return undefined;
  return {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: Number.parseInt(match[3]!, 16),
    isRemote: true,
  };
}
