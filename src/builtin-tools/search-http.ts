import { ToolError } from "../errors.js";
import { shorten } from "./url.js";

/** What each bundled search backend shares: a base URL, a timeout and a way to say what went wrong. */
export interface SearchServiceOptions {
  /** Where the API lives; change it for a proxy, a self-hosted instance or a test server. */
  baseURL?: string;
  /** Per search. Default 15,000 ms. */
  timeoutMs?: number;
}

export interface SearchRequest {
  /** The service's name as the model reads it ("Tavily"). */
  service: string;
  url: string;
  init: RequestInit;
  signal?: AbortSignal | undefined;
  timeoutMs: number;
  /** The environment variable holding the key, named in the hint of a rejected key. */
  keyVariable?: string;
  /** A service-specific reading of an HTTP error, tried first. */
  explain?: (status: number, body: string) => ToolError | undefined;
}

/**
 * One request to a search API. HTTP failures become tool errors with a hint the model (and
 * whoever reads the transcript) can act on: a rejected key, an exhausted quota, a down service.
 */
export async function searchRequest(request: SearchRequest): Promise<Response> {
  const timeout = AbortSignal.timeout(request.timeoutMs);
  const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
  let response: Response;
  try {
    response = await fetch(request.url, { ...request.init, signal });
  } catch (error) {
    if (request.signal?.aborted) throw request.signal.reason ?? error;
    if (timeout.aborted) {
      throw new ToolError(
        `${request.service} did not answer within ${request.timeoutMs.toLocaleString("en-US")} ms`,
        {
          hint: "The search service is slow or unreachable; try again later.",
        },
      );
    }
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new ToolError(
      `${request.service} is unreachable: ${cause?.code ?? cause?.message ?? (error as Error).message}`,
      {
        hint: "Check the network and the backend's baseURL; try again later.",
        cause: error,
      },
    );
  }
  if (response.ok) return response;
  const body = await response.text().catch(() => "");
  throw request.explain?.(response.status, body) ?? httpError(request, response.status, body);
}

function httpError(request: SearchRequest, status: number, body: string): ToolError {
  const { service } = request;
  const detail = body.trim() ? `: ${shorten(body.replace(/\s+/g, " ").trim(), 200)}` : "";
  if (status === 401 || status === 403) {
    return new ToolError(`${service} rejected the request (HTTP ${status})${detail}`, {
      hint: request.keyVariable
        ? `The API key is missing, wrong or revoked: check ${request.keyVariable}. Retrying will not help.`
        : "The service refused access; retrying will not help.",
    });
  }
  if (status === 429 || status === 432 || status === 433) {
    return new ToolError(
      `${service} refused the search: rate limit or quota exhausted (HTTP ${status})${detail}`,
      {
        hint: "Wait before searching again, or check the plan's quota. Fewer, better queries help.",
      },
    );
  }
  if (status >= 500) {
    return new ToolError(`${service} failed with HTTP ${status}${detail}`, {
      hint: "The search service has a problem; try again later.",
    });
  }
  return new ToolError(`${service} rejected the search with HTTP ${status}${detail}`, {
    hint: "Try a simpler query.",
  });
}

/** Parses a JSON body, or says that the service sent something else. */
export async function readJson(service: string, response: Response): Promise<any> {
  const text = await response.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new ToolError(
      `${service} answered with something that is not JSON: ${shorten(text.replace(/\s+/g, " "), 120)}`,
      {
        hint: "The service or its baseURL is misconfigured; try again later.",
      },
    );
  }
}

/** Removes HTML tags and decodes the common entities (Brave and SearXNG snippets carry `<strong>`). */
export function plainText(html: string | undefined): string {
  return (html ?? "")
    .replace(/<[^>]*>/g, "")
    .replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos|nbsp|#39);/gi, (_, entity: string) => {
      const e = entity.toLowerCase();
      if (e.startsWith("#x")) return safeCodePoint(Number.parseInt(e.slice(2), 16));
      if (e.startsWith("#")) return safeCodePoint(Number.parseInt(e.slice(1), 10));
      return (
        ({ amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " " } as Record<string, string>)[e] ?? ""
      );
    })
    .replace(/\s+/g, " ")
    .trim();
}

function safeCodePoint(code: number): string {
  return Number.isInteger(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : "\ufffd";
}

/** The base URL without a trailing slash. */
export function trimBase(url: string): string {
  return url.replace(/\/+$/, "");
}
