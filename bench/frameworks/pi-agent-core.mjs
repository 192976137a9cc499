/**
 * pi-agent-core 0.73: the `Agent` class (`agent.prompt("go")`, its Quick Start path) with a TypeBox
 * tool, over a custom `streamFn` that plays the same script as the other contenders (one `add`
 * call per turn, then a final answer), instantly: each call returns a pi-ai
 * `AssistantMessageEventStream` already filled with the events a real provider emits
 * (start, toolcall_start/delta/end or text_start/delta/end, done).
 */
import { Agent } from "@mariozechner/pi-agent-core";
import { createAssistantMessageEventStream, Type } from "@mariozechner/pi-ai";

export const label = "pi-agent-core 0.73 (Agent.prompt)";

const model = {
  id: "scripted",
  name: "scripted",
  api: "scripted",
  provider: "scripted",
  baseUrl: "",
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 1_000_000,
  maxTokens: 1_000,
};

const usage = () => ({
  input: 1,
  output: 1,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 2,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
});

/** A `streamFn` whose t-th call streams one `add({ a: t, b: 0 })` call, and whose call `turns` answers "done". */
function scriptedStreamFn(turns) {
  let turn = 0;
  return (model) => streamTurn(model, turn++, turns);
}

/**
 * The same script with no state of its own, as a real `streamFn` has: the turn is read from the
 * context (the user message, then an assistant message and a tool result per turn).
 */
function statelessStreamFn(turns) {
  return (model, context) => streamTurn(model, (context.messages.length - 1) / 2, turns);
}

/** Turn t of the script: one `add` call while t < turns, then the answer "done". */
function streamTurn(model, t, turns) {
  const stream = createAssistantMessageEventStream();
  const output = {
    role: "assistant",
    content: [],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: usage(),
    stopReason: "stop",
    timestamp: Date.now(),
  };
  stream.push({ type: "start", partial: output });
  if (t < turns) {
    const args = { a: t, b: 0 };
    const block = { type: "toolCall", id: `call_${t}`, name: "add", arguments: {} };
    output.content.push(block);
    stream.push({ type: "toolcall_start", contentIndex: 0, partial: output });
    stream.push({ type: "toolcall_delta", contentIndex: 0, delta: JSON.stringify(args), partial: output });
    block.arguments = args;
    stream.push({ type: "toolcall_end", contentIndex: 0, toolCall: block, partial: output });
    output.stopReason = "toolUse";
  } else {
    const block = { type: "text", text: "" };
    output.content.push(block);
    stream.push({ type: "text_start", contentIndex: 0, partial: output });
    block.text = "done";
    stream.push({ type: "text_delta", contentIndex: 0, delta: "done", partial: output });
    stream.push({ type: "text_end", contentIndex: 0, content: "done", partial: output });
  }
  stream.push({ type: "done", reason: output.stopReason, message: output });
  stream.end();
  return stream;
}

/** The `add` tool: TypeBox-validated `{ a, b }`, running the given function. */
function addTool(addNumbers) {
  return {
    name: "add",
    label: "Add",
    description: "Add two numbers.",
    parameters: Type.Object({ a: Type.Number(), b: Type.Number() }),
    execute: async (_toolCallId, params) => ({
      content: [{ type: "text", text: String(await addNumbers(params)) }],
      details: {},
    }),
  };
}

/** Tool calls that ran and succeeded, counted from the transcript's tool results. */
const countToolResults = (messages) => messages.filter((m) => m.role === "toolResult" && !m.isError).length;

/** @param {{ turns: number, addNumbers: (args: { a: number, b: number }) => Promise<number> }} options */
export async function setup({ turns, addNumbers }) {
  const agent = new Agent({ initialState: { systemPrompt: "", model, tools: [addTool(addNumbers)] } });
  return async function runOnce() {
    agent.reset();
    agent.streamFn = scriptedStreamFn(turns);
    await agent.prompt("go");
    const { messages, errorMessage } = agent.state;
    if (errorMessage) throw new Error(errorMessage);
    return countToolResults(messages);
  };
}

/**
 * The shape a server handler has: a new `Agent` per request, its tools and its `streamFn`
 * defined once (module level), the `streamFn` reading the turn from the context it is given.
 * @param {{ turns: number, addNumbers: (args: { a: number, b: number }) => Promise<number> }} options
 */
export async function setupPerRun({ turns, addNumbers }) {
  const tools = [addTool(addNumbers)];
  const streamFn = statelessStreamFn(turns);
  return async function runOnce() {
    const agent = new Agent({ initialState: { systemPrompt: "", model, tools }, streamFn });
    await agent.prompt("go");
    const { messages, errorMessage } = agent.state;
    if (errorMessage) throw new Error(errorMessage);
    return countToolResults(messages);
  };
}
