/**
 * Per-call overhead of Quiver's loop against a hand-written minimal loop, over 20 and 500
 * sequential turns (one tool call per turn), both driven by the same ScriptedModel script.
 * The number that matters is the cost per call as the conversation grows: it must stay flat
 * (every per-turn step O(new items)), not grow with the transcript.
 */

import { Agent, type Message, type Model, Runner, ScriptedModel, tool } from "quiver";
import { z } from "zod";

const add = tool({
  name: "add",
  description: "Add two numbers.",
  parameters: z.object({ a: z.number(), b: z.number() }),
  execute: async ({ a, b }) => a + b,
});

function script(turns: number): ScriptedModel {
  const steps = Array.from({ length: turns }, (_, i) => ({
    toolCalls: [{ name: "add", args: { a: i, b: 1 } }],
  }));
  return new ScriptedModel([...steps, { text: "done" }], { record: false });
}

/** The least a loop can do: stream, parse, call, append. No validation, events or safety. */
async function baselineLoop(model: Model, input: string): Promise<Message[]> {
  const messages: Message[] = [{ role: "user", content: input }];
  const fn = add.execute.bind(add) as (args: unknown, ctx: unknown) => Promise<unknown>;
  while (true) {
    const calls: Array<{ id: string; name: string; args: string }> = [];
    let text = "";
    for await (const ev of model.stream({ messages, tools: [], settings: {} })) {
      if (ev.type === "text_delta") text += ev.delta;
      if (ev.type === "tool_call") calls.push(ev);
    }
    messages.push({
      role: "assistant",
      content: text,
      toolCalls: calls.map((c) => ({ ...c, args: JSON.parse(c.args) })),
    });
    if (calls.length === 0) return messages;
    for (const call of calls) {
      const value = await fn(JSON.parse(call.args), {});
      messages.push({
        role: "tool",
        toolCallId: call.id,
        name: call.name,
        content: JSON.stringify(value),
        isError: false,
      });
    }
  }
}

async function time(fn: () => Promise<unknown>, repeats: number): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const start = performance.now();
    await fn();
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!;
}

export async function main(): Promise<void> {
  const agent = (model: Model) => new Agent({ name: "bench", model, tools: [add] });
  // Warm both paths so JIT and zod's compiled validators are not measured.
  await Runner.run(agent(script(50)), "warm", { maxTurns: 100 });
  await baselineLoop(script(50), "warm");
  const rows: string[][] = [];
  for (const turns of [20, 500]) {
    const repeats = turns === 20 ? 50 : 7;
    const quiverMs = await time(
      () => Runner.run(agent(script(turns)), "go", { maxTurns: turns + 1 }),
      repeats,
    );
    const baselineMs = await time(() => baselineLoop(script(turns), "go"), repeats);
    rows.push([
      String(turns),
      `${((quiverMs / turns) * 1000).toFixed(1)} µs`,
      `${((baselineMs / turns) * 1000).toFixed(1)} µs`,
      `${(((quiverMs - baselineMs) / turns) * 1000).toFixed(1)} µs`,
      `${(quiverMs / baselineMs).toFixed(2)}×`,
    ]);
  }
  console.log("\nLoop overhead (one call per turn, median of repeated runs)");
  console.log("| turns | quiver per call | baseline per call | overhead per call | ratio |");
  console.log("|---|---|---|---|---|");
  for (const row of rows) console.log(`| ${row.join(" | ")} |`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
