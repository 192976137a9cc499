/**
 * What a provider does on the wire, offline. NOT a language model: a stand-in server on
 * 127.0.0.1 replays a recorded-shape Chat Completions stream, so you can watch the provider
 * handle a rate limit (429 + Retry-After, then a retry), assemble a streamed tool call, and
 * send the tool result back in the shape the API expects.
 *
 *   npx tsx examples/providers-wire.ts
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent, Runner, tool } from "quiver-agents";
import { openaiCompatible } from "quiver-agents/providers";
import { z } from "zod";

const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "chatcmpl-demo", object: "chat.completion.chunk", model: "stand-in", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const recorded = [
  // Turn 1: a tool call whose arguments arrive in fragments.
  [
    chunk({
      role: "assistant",
      tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "add", arguments: "" } }],
    }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a": 2,' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: ' "b": 40}' } }] }),
    chunk({}, "tool_calls"),
    `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 30, completion_tokens: 12, total_tokens: 42 } })}\n\n`,
    "data: [DONE]\n\n",
  ],
  // Turn 2: the answer.
  [
    chunk({ role: "assistant", content: "2 + 40 = " }),
    chunk({ content: "42." }),
    chunk({}, "stop"),
    "data: [DONE]\n\n",
  ],
];

let requests = 0;
let turn = 0;
const server = createServer((req, res) => {
  let body = "";
  req.on("data", (part) => (body += part));
  req.on("end", () => {
    requests++;
    const sent = JSON.parse(body) as { messages: { role: string }[] };
    console.log(`server ← request ${requests}: ${sent.messages.map((m) => m.role).join(" → ")}`);
    if (requests === 1) {
      res.writeHead(429, { "content-type": "application/json", "retry-after": "1" });
      res.end(JSON.stringify({ error: { message: "Rate limit reached", type: "requests" } }));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (const frame of recorded[turn++] ?? []) res.write(frame);
    res.end();
  });
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;

const add = tool({
  name: "add",
  description: "Add two numbers.",
  parameters: z.object({ a: z.number(), b: z.number() }),
  execute: async ({ a, b }) => a + b,
});
const standIn = openaiCompatible({
  name: "stand-in",
  baseURL,
  model: "recorded",
  retryBackoff: { initialMs: 100 },
});
const agent = new Agent({ name: "adder", model: standIn, tools: [add] });

const started = Date.now();
const handle = Runner.stream(agent, "What is 2 + 40?");
for await (const event of handle) {
  if (event.type === "tool_call_input_delta") console.log(`  args fragment: ${event.delta}`);
  if (event.type === "tool_call_completed") console.log(`  ${event.call.name} → ${event.output}`);
  if (event.type === "text_delta") console.log(`  text: ${event.delta}`);
}
const result = await handle.result();
console.log(
  `output: ${result.output} (after ${Date.now() - started} ms, one retry honouring Retry-After: 1)`,
);
server.close();
