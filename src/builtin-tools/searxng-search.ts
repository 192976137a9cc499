import { ToolError, UserError } from "../errors.js";
import { plainText, readJson, type SearchServiceOptions, searchRequest, trimBase } from "./search-http.js";
import type { SearchOptions, SearchResult, TimeRange, WebSearch } from "./web-search.js";

export interface SearxngSearchOptions extends SearchServiceOptions {
  /** The instance, e.g. `"https://searx.example.org"` (required). */
  baseURL: string;
  /** Restrict to some engines (`["duckduckgo", "wikipedia"]`). */
  engines?: string[];
  /** Result language (`"en"`, `"de"`). */
  language?: string;
}

const TIME_RANGES: Record<TimeRange, string> = { d: "day", w: "week", m: "month", y: "year" };

/**
 * A SearXNG instance's JSON API (`GET /search?format=json`). JSON output must be enabled on
 * the instance (`search.formats: [html, json]` in its settings.yml); otherwise it answers 403,
 * which this backend reports with exactly that hint.
 *
 * @example
 * const searchTool = webSearch(searxngSearch({ baseURL: "http://localhost:8888" }));
 */
export function searxngSearch(options: SearxngSearchOptions): WebSearch {
  if (!options?.baseURL) {
    throw new UserError(
      'searxngSearch needs the instance URL: searxngSearch({ baseURL: "https://searx.example.org" })',
    );
  }
  const base = trimBase(options.baseURL);
  return {
    async search(query: string, { maxResults, timeRange, signal }: SearchOptions): Promise<SearchResult[]> {
      const params = new URLSearchParams({ q: query, format: "json", pageno: "1", safesearch: "1" });
      if (timeRange) params.set("time_range", TIME_RANGES[timeRange]);
      if (options.engines?.length) params.set("engines", options.engines.join(","));
      if (options.language) params.set("language", options.language);
      const response = await searchRequest({
        service: "SearXNG",
        url: `${base}/search?${params}`,
        init: { headers: { accept: "application/json" } },
        signal,
        timeoutMs: options.timeoutMs ?? 15_000,
        explain: (status) =>
          status === 403
            ? new ToolError("the SearXNG instance refused JSON output (HTTP 403)", {
                hint: "Its operator must enable JSON: add `json` to `search.formats` in settings.yml. Retrying will not help.",
              })
            : undefined,
      });
      const data = await readJson("SearXNG", response);
      if (!Array.isArray(data?.results)) {
        throw new ToolError("SearXNG answered without a results list", { hint: "Try again later." });
      }
      return data.results.slice(0, maxResults).map((r: any): SearchResult => {
        const result: SearchResult = {
          title: plainText(r.title),
          url: String(r.url ?? ""),
          snippet: plainText(r.content),
        };
        if (r.publishedDate) result.published = String(r.publishedDate);
        return result;
      });
    },
  };
}
