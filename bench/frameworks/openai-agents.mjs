/**
 * OpenAI Agents SDK (`@openai/agents-core` 0.20): `Runner.run` of an `Agent` with a Zod `tool`,
 * tracing disabled, over a hand-written `Model` that plays the same script as the other
 * contenders (one `add` call per turn, then a final answer), instantly.
 */
import { Agent, Runner, tool, Usage } from "@openai/agents-core";
import { z } from "zod";

export const label = "OpenAI Agents SDK 0.20 (Runner.run)";

/** A `Model` answering turn t < turns with one `add` call, then with the text "done"; `reset()` rewinds it. */
function scriptedModel(turns) {
  let turn = 0;
  const respond = () => {
    const t = turn++;
    const item =
      t < turns
        ? {
            type: "function_call",
            callId: `call_${t}`,
            name: "add",
            status: "completed",
            arguments: JSON.stringify({ a: t, b: 0 }),
          }
        : {
            type: "message",
            role: "assistant",
            status: "completed",
            content: [{ type: "output_text", text: "done" }],
          };
    return {
      responseId: `resp_${t}`,
      output: [item],
      usage: new Usage({ requests: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2 }),
    };
  };
  return {
    reset() {
      turn = 0;
    },
    async getResponse() {
      return respond();
    },
    async *getStreamedResponse() {
      const { responseId, output, usage } = respond();
      yield { type: "response_started" };
      if (output[0].type === "message") yield { type: "output_text_delta", delta: "done" };
      const { requests, inputTokens, outputTokens, totalTokens } = usage;
      yield {
        type: "response_done",
        response: { id: responseId, usage: { requests, inputTokens, outputTokens, totalTokens }, output },
      };
    },
  };
}

/** Tool calls that ran and returned a number (a failing tool would yield an error string). */
const countToolResults = (items) =>
  items.filter((item) => item.type === "tool_call_output_item" && typeof item.output === "number").length;

/** @param {{ turns: number, addNumbers: (args: { a: number, b: number }) => Promise<number> }} options */
function build({ turns, addNumbers }) {
  const add = tool({
    name: "add",
    description: "Add two numbers.",
    parameters: z.object({ a: z.number(), b: z.number() }),
    execute: addNumbers,
  });
  const model = scriptedModel(turns);
  const agent = new Agent({ name: "bench", instructions: "Add numbers.", model, tools: [add] });
  const runner = new Runner({ tracingDisabled: true });
  return { model, agent, runner, maxTurns: turns + 5 };
}

/** @param {{ turns: number, addNumbers: (args: { a: number, b: number }) => Promise<number> }} options */
export async function setup(options) {
  const { model, agent, runner, maxTurns } = build(options);
  return async function runOnce() {
    model.reset();
    const result = await runner.run(agent, "go", { maxTurns });
    if (result.finalOutput !== "done") throw new Error(`unexpected final output ${result.finalOutput}`);
    return countToolResults(result.newItems);
  };
}
