import { ToolError, UserError } from "../errors.js";
import { readJson, type SearchServiceOptions, searchRequest, trimBase } from "./search-http.js";
import type { SearchOptions, SearchResult, TimeRange, WebSearch } from "./web-search.js";

export interface TavilySearchOptions extends SearchServiceOptions {
  /** Default: the `TAVILY_API_KEY` environment variable. */
  apiKey?: string;
  /** "basic" (default, 1 credit) or "advanced" (2 credits, better snippets). */
  searchDepth?: "basic" | "advanced";
  /** "general" (default) or "news". */
  topic?: "general" | "news";
}

const TIME_RANGES: Record<TimeRange, string> = { d: "day", w: "week", m: "month", y: "year" };

/**
 * Tavily's search API (`POST /search`, Bearer key). Reads `TAVILY_API_KEY` when no `apiKey`
 * is given; a missing key is a `UserError` at construction, a fail-fast for startup.
 *
 * @example
 * const searchTool = webSearch(tavilySearch({ searchDepth: "advanced" }));
 */
export function tavilySearch(options: TavilySearchOptions = {}): WebSearch {
  const apiKey = options.apiKey ?? process.env.TAVILY_API_KEY;
  if (!apiKey) {
    throw new UserError("tavilySearch needs an API key: set TAVILY_API_KEY or pass tavilySearch({ apiKey })");
  }
  const base = trimBase(options.baseURL ?? "https://api.tavily.com");
  return {
    async search(query: string, { maxResults, timeRange, signal }: SearchOptions): Promise<SearchResult[]> {
      const body: Record<string, unknown> = {
        query,
        max_results: maxResults,
        search_depth: options.searchDepth ?? "basic",
        topic: options.topic ?? "general",
      };
      if (timeRange) body.time_range = TIME_RANGES[timeRange];
      const response = await searchRequest({
        service: "Tavily",
        url: `${base}/search`,
        init: {
          method: "POST",
          headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        },
        signal,
        timeoutMs: options.timeoutMs ?? 15_000,
        keyVariable: "TAVILY_API_KEY",
      });
      const data = await readJson("Tavily", response);
      if (!Array.isArray(data?.results)) {
        throw new ToolError("Tavily answered without a results list", { hint: "Try again later." });
      }
      return data.results.map((r: any): SearchResult => {
        const result: SearchResult = {
          title: String(r.title ?? ""),
          url: String(r.url ?? ""),
          snippet: String(r.content ?? ""),
        };
        if (r.published_date) result.published = String(r.published_date);
        return result;
      });
    },
  };
}
