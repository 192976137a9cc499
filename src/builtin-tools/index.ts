// The public surface of "quiver-agents/tools": re-exports only. Heavy parts (linkedom,
// Readability, mdream, ipaddr.js) load on first use, so importing this stays cheap.

export { askHuman, HumanChannel, type HumanQuestion, type QuestionOption } from "./ask-human.js";
export { type BraveSearchOptions, braveSearch } from "./brave-search.js";
export { type DuckDuckGoSearchOptions, duckduckgoSearch } from "./duckduckgo-search.js";
export {
  DISARMED_MARKER,
  disarm,
  FENCE_BEGIN,
  FENCE_END,
  FENCE_NOTE,
  type FenceOptions,
  fence,
} from "./fence.js";
export { HttpReader, type HttpReaderOptions, type LookupFunction } from "./http-reader.js";
export type { Page, PageImage, PageReader, ReadOptions } from "./page-reader.js";
export type { SearchServiceOptions } from "./search-http.js";
export { type SearxngSearchOptions, searxngSearch } from "./searxng-search.js";
export { type TavilySearchOptions, tavilySearch } from "./tavily-search.js";
export { currentDate, type DateFragment, now } from "./time.js";
export { renderPage, type WebFetchArgs, type WebFetchOptions, webFetch } from "./web-fetch.js";
export {
  renderResults,
  type SearchOptions,
  type SearchResult,
  type TimeRange,
  type WebSearch,
  type WebSearchArgs,
  type WebSearchOptions,
  webSearch,
} from "./web-search.js";
