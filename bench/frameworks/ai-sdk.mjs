/**
 * Vercel AI SDK 6: `generateText` with a Zod tool, stepping until the model stops, over a
 * `MockLanguageModelV3` that plays the same script as the other contenders (one `add` call
 * per turn, then a final answer), instantly.
 */
import { generateText, stepCountIs, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";

export const label = "Vercel AI SDK 6 (generateText)";

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/** @param {{ turns: number, addNumbers: (args: { a: number, b: number }) => Promise<number> }} options */
export async function setup({ turns, addNumbers }) {
  const add = tool({
    description: "Add two numbers.",
    inputSchema: z.object({ a: z.number(), b: z.number() }),
    execute: addNumbers,
  });
  return async function runOnce() {
    let turn = 0;
    const model = new MockLanguageModelV3({
      doGenerate: async () => {
        const t = turn++;
        if (t < turns) {
          return {
            content: [
              {
                type: "tool-call",
                toolCallId: `call_${t}`,
                toolName: "add",
                input: JSON.stringify({ a: t, b: 0 }),
              },
            ],
            finishReason: { unified: "tool-calls", raw: "tool_calls" },
            usage,
            warnings: [],
          };
        }
        return {
          content: [{ type: "text", text: "done" }],
          finishReason: { unified: "stop", raw: "stop" },
          usage,
          warnings: [],
        };
      },
    });
    const result = await generateText({
      model,
      tools: { add },
      prompt: "go",
      stopWhen: stepCountIs(turns + 1),
    });
    return result.steps.reduce((n, step) => n + step.toolResults.length, 0);
  };
}
