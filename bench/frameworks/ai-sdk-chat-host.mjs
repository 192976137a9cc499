/**
 * The AI SDK side of bench/chat-load.ts: a Hono app (the same hono and @hono/node-server Quiver's
 * server runs on) whose `POST /api/chat` returns `streamText(...).toUIMessageStreamResponse()`,
 * the AI SDK's own chat route. Its model (made once, instant) is a LanguageModelV3 that streams
 * what Quiver's host's model does: one `add` call, then CHAT_DELTAS text deltas. Written by hand
 * rather than `MockLanguageModelV3`, which keeps every call it receives (a server would grow).
 */
import { serve } from "@hono/node-server";
import { convertToModelMessages, stepCountIs, streamText, tool } from "ai";
import { Hono } from "hono";
import { z } from "zod";

const DELTAS = Number(process.env.CHAT_DELTAS ?? 200);
const words = Array.from({ length: DELTAS }, (_, i) => `word${i} `);
const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: DELTAS, text: DELTAS, reasoning: 0 },
};

const add = tool({
  description: "Add two numbers.",
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: async ({ a, b }) => a + b,
});

/** Turn 1: one `add` call; turn 2 (after the tool's result): DELTAS text deltas. */
const model = {
  specificationVersion: "v3",
  provider: "scripted",
  modelId: "scripted",
  supportedUrls: {},
  async doGenerate() {
    throw new Error("streaming only");
  },
  async doStream({ prompt }) {
    const called = prompt.at(-1)?.role === "tool";
    const stream = new ReadableStream({
      start(controller) {
        controller.enqueue({ type: "stream-start", warnings: [] });
        if (!called) {
          controller.enqueue({
            type: "tool-call",
            toolCallId: "call_1",
            toolName: "add",
            input: '{"a":1,"b":2}',
          });
          controller.enqueue({
            type: "finish",
            finishReason: { unified: "tool-calls", raw: "tool_calls" },
            usage,
          });
        } else {
          controller.enqueue({ type: "text-start", id: "text_1" });
          for (const delta of words) controller.enqueue({ type: "text-delta", id: "text_1", delta });
          controller.enqueue({ type: "text-end", id: "text_1" });
          controller.enqueue({ type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage });
        }
        controller.close();
      },
    });
    return { stream };
  },
};

const app = new Hono();
app.post("/api/chat", async (c) => {
  const { messages } = await c.req.json();
  const result = streamText({
    model,
    messages: await convertToModelMessages(messages),
    tools: { add },
    stopWhen: stepCountIs(5),
  });
  return result.toUIMessageStreamResponse();
});
serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) => {
  process.stdout.write(`${JSON.stringify({ port: info.port })}\n`);
});
