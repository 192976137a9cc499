import { ToolError, UserError } from "../errors.js";
import { plainText, readJson, type SearchServiceOptions, searchRequest, trimBase } from "./search-http.js";
import type { SearchOptions, SearchResult, TimeRange, WebSearch } from "./web-search.js";

export interface BraveSearchOptions extends SearchServiceOptions {
  /** Default: the `BRAVE_API_KEY` environment variable. */
  apiKey?: string;
  /** Two-letter country code for results (`"us"`, `"de"`). */
  country?: string;
  /** "off", "moderate" (Brave's default) or "strict". */
  safeSearch?: "off" | "moderate" | "strict";
}

const FRESHNESS: Record<TimeRange, string> = { d: "pd", w: "pw", m: "pm", y: "py" };

/**
 * Brave Search's web API (`GET /res/v1/web/search`, `X-Subscription-Token`). Reads
 * `BRAVE_API_KEY` when no `apiKey` is given; a missing key is a `UserError` at construction.
 *
 * @example
 * const searchTool = webSearch(braveSearch({ country: "de" }));
 */
export function braveSearch(options: BraveSearchOptions = {}): WebSearch {
  const apiKey = options.apiKey ?? process.env.BRAVE_API_KEY;
  if (!apiKey) {
    throw new UserError("braveSearch needs an API key: set BRAVE_API_KEY or pass braveSearch({ apiKey })");
  }
  const base = trimBase(options.baseURL ?? "https://api.search.brave.com/res/v1");
  return {
    async search(query: string, { maxResults, timeRange, signal }: SearchOptions): Promise<SearchResult[]> {
      const params = new URLSearchParams({ q: query, count: String(maxResults) });
      if (timeRange) params.set("freshness", FRESHNESS[timeRange]);
      if (options.country) params.set("country", options.country);
      if (options.safeSearch) params.set("safesearch", options.safeSearch);
      const response = await searchRequest({
        service: "Brave Search",
        url: `${base}/web/search?${params}`,
        init: { headers: { accept: "application/json", "x-subscription-token": apiKey } },
        signal,
        timeoutMs: options.timeoutMs ?? 15_000,
        keyVariable: "BRAVE_API_KEY",
      });
      const data = await readJson("Brave Search", response);
      const results = data?.web?.results ?? [];
      if (!Array.isArray(results)) {
        throw new ToolError("Brave Search answered without a results list", { hint: "Try again later." });
      }
      return results.map((r: any): SearchResult => {
        const result: SearchResult = {
          title: plainText(r.title),
          url: String(r.url ?? ""),
          snippet: plainText(
            [r.description, ...(Array.isArray(r.extra_snippets) ? r.extra_snippets.slice(0, 1) : [])]
              .filter(Boolean)
              .join(" … "),
          ),
        };
        const published = r.page_age ?? r.age;
        if (published) result.published = String(published);
        return result;
      });
    },
  };
}
