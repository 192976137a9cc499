import { AsyncLocalStorage } from "node:async_hooks";
import { type Context, type ContextManager, context, ROOT_CONTEXT } from "@opentelemetry/api";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";

/** A tracer whose finished spans the test reads back. */
export function recordingTracer() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer("test");
  const spans = () => exporter.getFinishedSpans();
  const named = (name: string) => {
    const found = spans().filter((s) => s.name === name);
    if (found.length === 0)
      throw new Error(
        `no span "${name}"; spans: ${spans()
          .map((s) => s.name)
          .join(", ")}`,
      );
    return found;
  };
  const one = (name: string) => {
    const found = named(name);
    if (found.length !== 1) throw new Error(`${found.length} spans "${name}"`);
    return found[0]!;
  };
  return { provider, tracer, exporter, spans, named, one };
}

export const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
export const idOf = (span: ReadableSpan) => span.spanContext().spanId;
export const traceOf = (span: ReadableSpan) => span.spanContext().traceId;

/**
 * What an application's context manager does (`@opentelemetry/context-async-hooks`'
 * AsyncLocalStorageContextManager, which `NodeSDK` and `NodeTracerProvider.register()` install):
 * the active context follows async work.
 */
export class AsyncLocalContextManager implements ContextManager {
  readonly #storage = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.#storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.#storage.run(ctx, () => fn.call(thisArg, ...args));
  }
  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== "function") return target;
    const manager = this;
    return function (this: unknown, ...args: unknown[]) {
      return manager.with(ctx, () => (target as (...a: unknown[]) => unknown).apply(this, args));
    } as T;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.#storage.disable();
    return this;
  }
}

/** Installs an async-local context manager for the duration of a test file. */
export function installContextManager(): () => void {
  const manager = new AsyncLocalContextManager();
  context.setGlobalContextManager(manager);
  return () => {
    context.disable();
  };
}
