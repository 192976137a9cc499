/**
 * web_search end to end, offline: a tiny stand-in for a SearXNG instance runs on 127.0.0.1
 * (a real instance answers the same JSON), and a scripted model searches it, asks for the
 * time, and sees today's date in its instructions.
 *
 * With a real backend, swap the first line of `tools` for `webSearch(tavilySearch())`
 * (TAVILY_API_KEY), `webSearch(braveSearch())` (BRAVE_API_KEY) or `webSearch(duckduckgoSearch())`.
 *
 *   npx tsx examples/web-search.ts
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent, Runner, ScriptedModel } from "quiver-agents";
import {
  currentDate,
  now,
  type SearchResult,
  searxngSearch,
  type WebSearch,
  webSearch,
} from "quiver-agents/tools";

const searx = createServer((req, res) => {
  const query = new URL(req.url ?? "/", "http://x").searchParams.get("q");
  res.writeHead(200, { "content-type": "application/json" });
  res.end(
    JSON.stringify({
      query,
      results: [
        {
          title: "Quiver — typed tools for agents",
          url: "https://quiver.example.dev/",
          content: `About <b>${query}</b>.`,
        },
        {
          title: "Release notes",
          url: "https://quiver.example.dev/releases",
          content: "Streaming, budgets, replay.",
        },
      ],
    }),
  );
});
await new Promise<void>((resolve) => searx.listen(0, "127.0.0.1", resolve));
const baseURL = `http://127.0.0.1:${(searx.address() as AddressInfo).port}`;

// A backend is one method; this one is an in-house index.
const handbook: WebSearch = {
  async search(query, { maxResults }): Promise<SearchResult[]> {
    const pages = [
      {
        title: "Handbook: on-call",
        url: "https://handbook.example/on-call",
        snippet: "Who to page, and when.",
      },
    ];
    return pages
      .filter((p) => p.title.toLowerCase().includes(query.toLowerCase().split(" ")[0] ?? ""))
      .slice(0, maxResults);
  },
};

const model = new ScriptedModel([
  {
    toolCalls: [
      { name: "web_search", args: { query: "quiver agent framework", max_results: 2, time_range: "y" } },
      { name: "handbook_search", args: { query: "handbook" } },
      { name: "now", args: { tz: "Asia/Tokyo" } },
    ],
  },
  { text: "Summarised." },
]);
const agent = new Agent({
  name: "researcher",
  model,
  instructions: ["You research questions and cite URLs.", currentDate("Europe/Berlin")],
  tools: [webSearch(searxngSearch({ baseURL })), webSearch(handbook, { name: "handbook_search" }), now],
});
const result = await Runner.run(agent, "What is Quiver?");

console.log(`System prompt:\n${model.requests[0]?.system}\n`);
for (const call of result.toolCalls) console.log(`${call.call.name} →\n${call.output}\n`);
searx.close();
