/**
 * W7: what `isolate: "worker"` costs. One call per turn to the same small CPU-bound tool,
 * run inline and on a worker thread: the difference is the price of a thread that a timeout
 * can really stop (a fresh worker per call: start-up, structured clone both ways).
 */
import { z } from "zod";
import { compare, fmt, inChild, loadQuiver, type Row } from "../harness.js";
import { script } from "./baseline.js";

const TURNS = 20;
const args = z.object({ n: z.number() });
// Self-contained, as a worker tool must be: no closure over module scope.
const sumTo = ({ n }: { n: number }) => {
  let total = 0;
  for (let i = 0; i < n; i++) total += i;
  return total;
};

type IsolationResult = { inlineMs: number; workerMs: number };

export async function isolation({ samples }: { samples: number }): Promise<IsolationResult> {
  const { Agent, Runner, ScriptedModel, tool } = await loadQuiver();
  const make = (isolate: "inline" | "worker") =>
    tool({ name: "sum", description: "Sum.", parameters: args, isolate, execute: sumTo });
  const turns = script({ turns: TURNS, callsPerTurn: 1 }, () => ({ name: "sum", args: { n: 10_000 } }));
  const runWith = (isolate: "inline" | "worker") => async () => {
    const model = new ScriptedModel(turns, { record: false });
    const result = await Runner.run(new Agent({ name: "bench", model, tools: [make(isolate)] }), "go", {
      maxTurns: TURNS + 1,
    });
    if (result.toolCalls.some((c) => !c.ok)) throw new Error(`a ${isolate} call failed`);
  };
  const ms = await compare(
    { quiver: runWith("worker"), baseline: runWith("inline") },
    { samples, warmups: 1 },
  );
  return { inlineMs: ms.baseline / TURNS, workerMs: ms.quiver / TURNS };
}

export async function rows(): Promise<Row[]> {
  const r = await inChild<IsolationResult>("workloads/isolation.ts", "isolation", { samples: 5 });
  return [
    {
      workload: 'W7 isolate: "worker" (one call per turn)',
      measure: "ms per call: worker vs inline",
      quiver: fmt(r.workerMs, 2),
      baseline: fmt(r.inlineMs, 3),
      ratio: `+${fmt(r.workerMs - r.inlineMs, 2)} ms`,
    },
  ];
}
