/**
 * The options every HTTP provider shares, their defaults, and API-key lookup.
 */
import { UserError } from "../errors.js";
import { DEFAULT_MAX_RETRIES, DEFAULT_MAX_RETRY_AFTER_MS, type RetryBackoff } from "./retry.js";
import { defaultWarningHandler, type WarningHandler } from "./warnings.js";

export type HttpProviderOptions = {
  /** Extra HTTP headers sent with every request. */
  headers?: Record<string, string>;
  /** Retries after a retryable failure (408/409/429/5xx, connection errors, timeouts). Default 2. */
  maxRetries?: number;
  /** The whole request, first byte to last. Default 600,000 (10 minutes). */
  timeoutMs?: number;
  /**
   * The longest silence allowed before the response headers, and between chunks once the
   * model has started its output. Default 60,000. Before its first output a reasoning model
   * may think silently for minutes (OpenAI streams nothing meanwhile); that wait is bounded
   * by `timeoutMs`.
   */
  idleTimeoutMs?: number;
  /** Backoff between retries when the server does not say how long to wait. */
  retryBackoff?: RetryBackoff;
  /** The longest `Retry-After` honoured; a longer one fails at once. Default 60,000. */
  maxRetryAfterMs?: number;
  /** A `fetch` to use instead of the global one (proxies, tracing). */
  fetch?: typeof fetch;
  /** Receives warnings (a setting the API lacks, a simplified tool schema). Default: `process.emitWarning`. */
  onWarning?: WarningHandler;
};

/** The resolved form the stream driver works with. */
export type HttpSettings = {
  provider: string;
  fetch: typeof fetch;
  maxRetries: number;
  timeoutMs: number;
  idleTimeoutMs: number;
  retryBackoff: RetryBackoff;
  maxRetryAfterMs: number;
  onWarning: WarningHandler;
};

export const DEFAULT_TIMEOUT_MS = 600_000;
export const DEFAULT_IDLE_TIMEOUT_MS = 60_000;

export function resolveHttpSettings(provider: string, options: HttpProviderOptions): HttpSettings {
  const positive = (name: string, value: number | undefined, fallback: number) => {
    if (value === undefined) return fallback;
    if (!(typeof value === "number" && value > 0)) {
      throw new UserError(
        `${provider}: ${name} must be a positive number of milliseconds, got ${String(value)}`,
      );
    }
    return value;
  };
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  if (!Number.isInteger(maxRetries) || maxRetries < 0) {
    throw new UserError(
      `${provider}: maxRetries must be a whole number ≥ 0, got ${String(options.maxRetries)}`,
    );
  }
  return {
    provider,
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    maxRetries,
    timeoutMs: positive("timeoutMs", options.timeoutMs, DEFAULT_TIMEOUT_MS),
    idleTimeoutMs: positive("idleTimeoutMs", options.idleTimeoutMs, DEFAULT_IDLE_TIMEOUT_MS),
    retryBackoff: options.retryBackoff ?? {},
    maxRetryAfterMs: options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS,
    onWarning: options.onWarning ?? defaultWarningHandler,
  };
}

/**
 * The API key: the option, else the environment variable; a `UserError` naming the variable
 * when neither is set, so a missing key fails when the model is created, not mid-run.
 */
export function requireApiKey(provider: string, given: string | undefined, variable: string): string {
  const key = given ?? process.env[variable];
  if (key === undefined || key.trim() === "") {
    throw new UserError(
      `${provider}: no API key. Set the ${variable} environment variable or pass { apiKey } to ${provider}().`,
    );
  }
  return key;
}

/**
 * The URL of `path` under `baseURL`: a trailing slash is dropped, and a query string stays at
 * the end (an Azure OpenAI deployment's `?api-version=…`).
 *
 * @example
 * endpoint("https://x.openai.azure.com/openai/deployments/gpt-4o?api-version=2024-10-21", "/chat/completions");
 * // "https://x.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"
 */
export function endpoint(baseURL: string, path: string): string {
  const split = baseURL.search(/[?#]/);
  const head = split === -1 ? baseURL : baseURL.slice(0, split);
  const tail = split === -1 ? "" : baseURL.slice(split);
  return `${head.replace(/\/+$/, "")}${path}${tail}`;
}

/** A model id is required: a `UserError` when it is missing or empty. */
export function requireModel(provider: string, model: unknown): void {
  if (typeof model !== "string" || model.trim() === "") {
    throw new UserError(`${provider}: \`model\` is required (the model id, e.g. "gpt-4.1-mini")`);
  }
}

/**
 * `base` with the caller's `headers` over it. Header names are case-insensitive: a caller's
 * `Authorization` replaces the provider's `authorization` (merged as they are, `fetch` would
 * send both values joined by a comma, which every server rejects).
 *
 * @example
 * withHeaders({ authorization: "Bearer a" }, { Authorization: "Bearer b" }); // { authorization: "Bearer b" }
 */
export function withHeaders(
  base: Record<string, string>,
  headers: Record<string, string> | undefined,
): Record<string, string> {
  const out = { ...base };
  for (const [name, value] of Object.entries(headers ?? {})) out[name.toLowerCase()] = value;
  return out;
}
