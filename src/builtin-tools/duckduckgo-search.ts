import { ToolError } from "../errors.js";
import { plainText, type SearchServiceOptions, searchRequest, trimBase } from "./search-http.js";
import type { SearchOptions, SearchResult, TimeRange, WebSearch } from "./web-search.js";

export interface DuckDuckGoSearchOptions extends SearchServiceOptions {
  /** Region code, e.g. `"us-en"`, `"de-de"`. Default: DuckDuckGo's choice. */
  region?: string;
  userAgent?: string;
}

const DEFAULT_USER_AGENT = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
const RATE_LIMIT_HINT =
  "DuckDuckGo limits automated searches; wait a few minutes before searching again. " +
  "For dependable search, the operator should configure a keyed backend (tavilySearch, braveSearch) or SearXNG.";

/**
 * Keyless search through DuckDuckGo's HTML endpoint. Best effort: DuckDuckGo rate-limits
 * automated use, answering with a bot-check page instead of results; that page is detected
 * and reported as a tool error saying so, never mistaken for "no results".
 *
 * @example
 * const searchTool = webSearch(duckduckgoSearch());
 */
export function duckduckgoSearch(options: DuckDuckGoSearchOptions = {}): WebSearch {
  const base = trimBase(options.baseURL ?? "https://html.duckduckgo.com");
  return {
    async search(query: string, { maxResults, timeRange, signal }: SearchOptions): Promise<SearchResult[]> {
      const form = new URLSearchParams({ q: query, b: "" });
      if (timeRange) form.set("df", timeRange satisfies TimeRange);
      if (options.region) form.set("kl", options.region);
      const response = await searchRequest({
        service: "DuckDuckGo",
        url: `${base}/html/`,
        init: {
          method: "POST",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            "user-agent": options.userAgent ?? DEFAULT_USER_AGENT,
            accept: "text/html",
          },
          body: form.toString(),
        },
        signal,
        timeoutMs: options.timeoutMs ?? 15_000,
        explain: (status) =>
          status === 403 || status === 429
            ? new ToolError(`DuckDuckGo is rate-limiting searches from this machine (HTTP ${status})`, {
                hint: RATE_LIMIT_HINT,
              })
            : undefined,
      });
      const html = await response.text();
      // A 202 with a bot-check page is how DuckDuckGo usually says "slow down".
      if (
        response.status === 202 ||
        /anomaly-modal|anomaly\.js|bots use DuckDuckGo too|challenge-form/i.test(html)
      ) {
        throw new ToolError("DuckDuckGo answered with a bot check instead of results (rate limited)", {
          hint: RATE_LIMIT_HINT,
        });
      }
      return (await parseResults(html, base)).slice(0, maxResults);
    },
  };
}

/** Results from DuckDuckGo's HTML page, ads skipped, redirect links unwrapped. */
async function parseResults(html: string, base: string): Promise<SearchResult[]> {
  const { parseHTML } = await import("linkedom");
  const { document } = parseHTML(html);
  const results: SearchResult[] = [];
  for (const el of document.querySelectorAll(".result")) {
    if (/\bresult--ad\b/.test(el.getAttribute("class") ?? "")) continue;
    const link = el.querySelector("a.result__a");
    if (!link) continue;
    const url = unwrapRedirect(link.getAttribute("href") ?? "", base);
    if (!url) continue;
    const result: SearchResult = {
      title: plainText(link.innerHTML),
      url,
      snippet: plainText(el.querySelector(".result__snippet")?.innerHTML ?? ""),
    };
    const timestamp = el.querySelector(".result__timestamp")?.textContent?.trim();
    if (timestamp) result.published = timestamp;
    results.push(result);
  }
  if (
    results.length === 0 &&
    !/no-results|No results\./i.test(html) &&
    !/class="[^"]*\bresults\b/.test(html)
  ) {
    throw new ToolError(
      "DuckDuckGo answered with a page that holds no results list (its layout may have changed)",
      {
        hint: RATE_LIMIT_HINT,
      },
    );
  }
  return results;
}

/** `//duckduckgo.com/l/?uddg=<target>` → the target; ad and internal links → undefined. */
function unwrapRedirect(href: string, base: string): string | undefined {
  let url: URL;
  try {
    url = new URL(href, base);
  } catch {
    return undefined;
  }
  const target = url.pathname === "/l/" ? url.searchParams.get("uddg") : url.href;
  if (!target) return undefined;
  try {
    const resolved = new URL(target);
    if (resolved.protocol !== "http:" && resolved.protocol !== "https:") return undefined;
    if (/(^|\.)duckduckgo\.com$/.test(resolved.hostname) && resolved.pathname.startsWith("/y.js"))
      return undefined; // ads
    return resolved.href;
  } catch {
    return undefined;
  }
}
