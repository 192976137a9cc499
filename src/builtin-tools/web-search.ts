import { UserError } from "../errors.js";
import { jsonSchema } from "../tool/json-schema.js";
import { type Tool, tool } from "../tool/tool.js";
import { FENCE_NOTE, fence } from "./fence.js";

/** A recency filter: the past day, week, month or year. */
export type TimeRange = "d" | "w" | "m" | "y";

/** One search hit. `published` is whatever date the backend reports (ISO-8601 when it can). */
export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
  published?: string;
}

export interface SearchOptions {
  /** How many results to return (1–20). */
  maxResults: number;
  timeRange?: TimeRange | undefined;
  /** Aborts the search (the run was cancelled or the call timed out). */
  signal?: AbortSignal | undefined;
}

/**
 * A search backend: one method. Implementations must be safe for concurrent calls, and
 * should throw `ToolError` (with a hint) for failures the model should read.
 *
 * @example
 * class MySearch implements WebSearch {
 *   async search(query: string, { maxResults, signal }: SearchOptions): Promise<SearchResult[]> {
 *     const response = await fetch(`https://search.internal/api?q=${encodeURIComponent(query)}`, { signal });
 *     const { hits } = (await response.json()) as { hits: Array<{ title: string; link: string; text: string }> };
 *     return hits.slice(0, maxResults).map((h) => ({ title: h.title, url: h.link, snippet: h.text }));
 *   }
 * }
 * const searchTool = webSearch(new MySearch());
 */
export interface WebSearch {
  search(query: string, options: SearchOptions): Promise<SearchResult[]>;
}

export interface WebSearchOptions {
  /** The tool's name. Default `web_search`. */
  name?: string;
}

/** The model-facing arguments, snake_case as in the spec pages. */
export type WebSearchArgs = { query: string; max_results?: number; time_range?: TimeRange };

const MAX_RESULTS = 20;
const DEFAULT_RESULTS = 5;
const SNIPPET_CHARS = 600;

/**
 * A tool that searches the web through `backend`. The model passes `query`, `max_results`
 * (1–20, default 5; out-of-range values are clamped, not rejected) and an optional
 * `time_range` ("d" | "w" | "m" | "y"). Results come back as numbered title / URL / snippet
 * blocks inside the fence.
 *
 * @example
 * const agent = new Agent({ name: "researcher", model, tools: [webSearch(tavilySearch()), webFetch()] });
 */
export function webSearch(backend: WebSearch, options: WebSearchOptions = {}): Tool<WebSearchArgs> {
  if (!backend || typeof backend.search !== "function") {
    throw new UserError(
      "webSearch needs a backend with a search(query, options) method, e.g. webSearch(tavilySearch())",
    );
  }
  return tool({
    name: options.name ?? "web_search",
    label: "Search the web",
    description:
      "Search the public web. Returns numbered results with title, URL and snippet; read a result in full with a fetch tool. " +
      "Put the current year in queries about recent events.\n" +
      FENCE_NOTE,
    parameters: jsonSchema<WebSearchArgs>({
      type: "object",
      properties: {
        query: { type: "string", description: "What to search for." },
        max_results: {
          type: "integer",
          default: DEFAULT_RESULTS,
          description: `Number of results, 1–${MAX_RESULTS}.`,
        },
        time_range: {
          type: "string",
          enum: ["d", "w", "m", "y"],
          description: "Only results from the past day (d), week (w), month (m) or year (y).",
        },
      },
      required: ["query"],
      additionalProperties: false,
    }),
    readOnly: true,
    idempotent: true,
    untrustedOutput: true,
    execute: async ({ query, max_results, time_range }, ctx) => {
      const maxResults = Math.min(MAX_RESULTS, Math.max(1, Math.floor(max_results ?? DEFAULT_RESULTS)));
      const results = await backend.search(query, { maxResults, timeRange: time_range, signal: ctx.signal });
      return renderResults(query, results.slice(0, maxResults));
    },
  });
}

/**
 * Numbered, readable blocks inside the fence; `No results.` (outside any fence) when empty.
 *
 * @example
 * renderResults("quiver", [{ title: "Quiver", url: "https://x.dev", snippet: "Typed tools." }])
 */
export function renderResults(query: string, results: readonly SearchResult[]): string {
  // JSON quoting keeps the query on one line whatever it contains.
  const head = `Search: ${JSON.stringify(query)}`;
  if (results.length === 0) return `${head}\n\nNo results.`;
  const blocks = results.map((r, i) => {
    const lines = [`${i + 1}. ${oneLine(r.title) || "(untitled)"}`, `   ${oneLine(r.url)}`];
    const snippet = oneLine(r.snippet);
    if (snippet)
      lines.push(`   ${snippet.length > SNIPPET_CHARS ? `${snippet.slice(0, SNIPPET_CHARS)}…` : snippet}`);
    if (r.published) lines.push(`   Published: ${oneLine(r.published)}`);
    return lines.join("\n");
  });
  return `${head} (${results.length} result${results.length === 1 ? "" : "s"})\n\n${fence(blocks.join("\n\n"))}`;
}

function oneLine(text: string | undefined): string {
  return (text ?? "").replace(/\s+/g, " ").trim();
}
