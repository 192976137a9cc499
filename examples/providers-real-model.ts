/**
 * A real model through `quiver-agents/providers`: pick one with QUIVER_MODEL (and its key) and
 * this agent answers with a tool call to `now`.
 *
 *   QUIVER_MODEL=openai:gpt-4.1-mini OPENAI_API_KEY=… npx tsx examples/providers-real-model.ts
 *   QUIVER_MODEL=anthropic:claude-sonnet-4-5 ANTHROPIC_API_KEY=… npx tsx examples/providers-real-model.ts
 *   QUIVER_MODEL=ollama:qwen3 npx tsx examples/providers-real-model.ts          # local Ollama
 *   QUIVER_MODEL=llamacpp:any npx tsx examples/providers-real-model.ts         # llama-server on :8080
 *
 * Without QUIVER_MODEL it says how to run it and exits: there is no stand-in here.
 */
import { Agent, Runner } from "quiver-agents";
import { anthropic, openai, openaiCompatible, resolveModel } from "quiver-agents/providers";
import { now } from "quiver-agents/tools";

const modelId = process.env.QUIVER_MODEL;
if (!modelId) {
  console.log(
    "Set QUIVER_MODEL (e.g. openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5, ollama:qwen3) and its API key.",
  );
  process.exit(0);
}

// A model string resolves through the registry, reading the usual environment variables…
const model = resolveModel(modelId);

// …and the same models can be built explicitly, with every option in view:
export const explicit = {
  openai: () => openai({ model: "gpt-4.1-mini", maxRetries: 3, timeoutMs: 120_000 }),
  claude: () => anthropic({ model: "claude-sonnet-4-5", maxTokens: 8192, promptCaching: true }),
  vllm: () => openaiCompatible({ name: "vllm", baseURL: "http://127.0.0.1:8000/v1", model: "Qwen/Qwen3-8B" }),
};

const agent = new Agent({
  name: "clock",
  model,
  instructions: "Answer in one sentence. Use the now tool for anything about the current time.",
  tools: [now],
  modelSettings: { temperature: 0, maxTokens: 400 },
});

const handle = Runner.stream(agent, "What time is it in Tokyo right now?");
for await (const event of handle) {
  if (event.type === "text_delta") process.stdout.write(event.delta);
  if (event.type === "tool_call_requested")
    console.log(`\n→ ${event.call.name}(${JSON.stringify(event.call.args)})`);
  if (event.type === "warning") console.log(`\n[warning] ${event.message}`);
}
const result = await handle.result();
console.log(
  `\n\n${model.name}: ${result.usage.inputTokens} input / ${result.usage.outputTokens} output tokens`,
);
