/**
 * The way a user writes a server handler (issue 36): a new `Agent` per request, its tools and
 * model defined once at module level, the model a plain async generator (not `ScriptedModel`'s
 * hand-written iterator), beside pi-agent-core doing the same (a new `Agent` per run, its tools
 * and `streamFn` made once), interleaved in one child process. W0 (one call, then the answer),
 * per run, and W1s (20 turns), per call.
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Model, ModelStreamEvent } from "quiver-agents";
import { compare, fmt, inChild, loadQuiver, type Row, ratio, root } from "../harness.js";
import { addNumbers, quiverAdd } from "./baseline.js";
import { install, runsPerSample } from "./frameworks.js";

type UserShapeArgs = { turns: number; samples: number };
/** Child processes per row. */
const CHILDREN = 3;
type UserShapeResult = { quiverUs: number; piUs: number };

const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };

/**
 * What a user writes: an async generator that answers with one `add` call while the turn is
 * below `turns`, then "done". Made once and shared by every run, as a provider's model is (a new
 * async-generator closure per run costs V8 ~0.7 µs at its first call, and gives each stream a
 * prototype, so a hidden class, of its own); it keeps no state, reading the turn from the
 * request: the user message, then an assistant and a tool message per turn.
 */
export function generatorModel(turns: number): Model {
  return {
    name: "user",
    async *stream(request): AsyncGenerator<ModelStreamEvent> {
      const t = (request.messages.length - 1) / 2;
      if (t < turns) {
        yield {
          type: "tool_call",
          index: 0,
          id: `call_${t}`,
          name: "add",
          args: JSON.stringify({ a: t, b: 0 }),
        };
        yield { type: "usage", usage };
        yield { type: "finish", reason: "tool_calls" };
      } else {
        yield { type: "text_delta", delta: "done" };
        yield { type: "usage", usage };
        yield { type: "finish", reason: "stop" };
      }
    },
  };
}

/** Child side: µs per call (per run at one turn) of Quiver and of pi-agent-core, interleaved. */
export async function userShape({ turns, samples }: UserShapeArgs): Promise<UserShapeResult> {
  const { Agent, Runner, tool } = await loadQuiver();
  const add = quiverAdd(tool);
  const model = generatorModel(turns);
  const quiver = async () => {
    const agent = new Agent({ name: "bench", model, tools: [add] });
    const result = await Runner.run(agent, "go", { maxTurns: turns + 1 });
    return result.toolCalls.length;
  };
  const pi = (await import(pathToFileURL(join(root, "bench/frameworks/pi-agent-core.mjs")).href)) as {
    setupPerRun(options: { turns: number; addNumbers: typeof addNumbers }): Promise<() => Promise<number>>;
  };
  const piOnce = await pi.setupPerRun({ turns, addNumbers });
  for (const [name, once] of [
    ["quiver", quiver],
    ["pi-agent-core", piOnce],
  ] as const) {
    const calls = await once();
    if (calls !== turns) throw new Error(`${name} made ${calls} tool calls in a run of ${turns} turns`);
  }
  const contenders = { quiver, pi: piOnce };
  const runs: Record<string, number> = {};
  for (const [name, once] of Object.entries(contenders)) runs[name] = await runsPerSample(once);
  const ms = await compare(
    {
      quiver: async () => {
        for (let i = 0; i < runs.quiver!; i++) await quiver();
      },
      pi: async () => {
        for (let i = 0; i < runs.pi!; i++) await piOnce();
      },
    },
    { samples, warmups: 1 },
  );
  return {
    quiverUs: (ms.quiver * 1000) / (runs.quiver! * turns),
    piUs: (ms.pi * 1000) / (runs.pi! * turns),
  };
}

/** Parent side: W0 and W1s in the user's shape, each in its own child. */
export async function rows(): Promise<Row[]> {
  if (!install()) return [];
  const out: Row[] = [];
  for (const [turns, name, unit] of [
    [1, "W0u new Agent per run, async-generator Model: one chat request", "µs per run"],
    [20, "W1su new Agent per run, async-generator Model: 20 turns", "µs per call"],
  ] as const) {
    // Three children, the median by ratio: one child's JIT and heap luck is not the row.
    const children: UserShapeResult[] = [];
    for (let i = 0; i < CHILDREN; i++)
      children.push(
        await inChild<UserShapeResult>("workloads/user-shape.ts", "userShape", { turns, samples: 11 }),
      );
    children.sort((a, b) => a.quiverUs / a.piUs - b.quiverUs / b.piUs);
    const r = children[Math.floor(children.length / 2)]!;
    out.push({
      workload: name,
      measure: `${unit} (baseline column: pi-agent-core, a new Agent per run too, interleaved; the median of ${CHILDREN} child processes by ratio: ${children.map((c) => ratio(c.quiverUs / c.piUs)).join(", ")})`,
      quiver: fmt(r.quiverUs),
      baseline: fmt(r.piUs),
      ratio: ratio(r.quiverUs / r.piUs),
      target: "≤ 0.33× — a third of it",
      met: r.quiverUs <= r.piUs / 3,
    });
  }
  return out;
}
