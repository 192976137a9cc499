/**
 * Vercel AI SDK 6 through its OpenAI provider (`@ai-sdk/openai`, Chat Completions), against a
 * local server replaying a recorded stream: `streamText` read part by part (`fullStream`), as a
 * handler that forwards every delta reads it.
 */
import { createOpenAI } from "@ai-sdk/openai";
import { streamText } from "ai";

export const label = "Vercel AI SDK 6 (streamText, @ai-sdk/openai 3)";

/** @param {{ baseURL: string, model: string }} options */
export async function setup({ baseURL, model }) {
  const provider = createOpenAI({ baseURL, apiKey: "bench" });
  const chat = provider.chat(model);
  return async function runOnce() {
    const result = streamText({ model: chat, prompt: "hi" });
    let deltas = 0;
    let text = "";
    for await (const part of result.fullStream) {
      if (part.type === "text-delta") {
        deltas++;
        text += part.text;
      } else if (part.type === "error") throw part.error;
    }
    return { deltas, text };
  };
}
