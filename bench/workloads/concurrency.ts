/**
 * W3: one turn of 8 calls to a tool that awaits a 50 ms timer. Calls of one turn run
 * concurrently, so a run should take about as long as its longest call. The baseline loop
 * (Promise.all over the same calls) shows how late timers fire on this machine.
 */
import { z } from "zod";
import { compare, fmt, inChild, loadQuiver, type Row, ratio } from "../harness.js";
import { baselineRun, script } from "./baseline.js";

const CALL_MS = 50;
const CALLS = 8;
const waitArgs = z.object({ ms: z.number() });
const wait = ({ ms }: z.infer<typeof waitArgs>) =>
  new Promise<string>((done) => setTimeout(done, ms, "waited"));

type ConcurrencyResult = { quiverMs: number; baselineMs: number };

export async function concurrency({ samples }: { samples: number }): Promise<ConcurrencyResult> {
  const { Agent, Runner, ScriptedModel, tool } = await loadQuiver();
  const waitTool = tool({ name: "wait", description: "Wait.", parameters: waitArgs, execute: wait });
  const turns = script({ turns: 1, callsPerTurn: CALLS }, () => ({ name: "wait", args: { ms: CALL_MS } }));
  const ms = await compare(
    {
      quiver: async () => {
        const model = new ScriptedModel(turns, { record: false });
        const result = await Runner.run(new Agent({ name: "bench", model, tools: [waitTool] }), "go");
        if (result.toolCalls.filter((c) => c.ok).length !== CALLS) throw new Error("a wait call failed");
      },
      baseline: () =>
        baselineRun(new ScriptedModel(turns, { record: false }), "go", [
          { name: "wait", schema: waitArgs, fn: wait },
        ]),
    },
    { samples, warmups: 2 },
  );
  return { quiverMs: ms.quiver, baselineMs: ms.baseline };
}

export async function rows(): Promise<Row[]> {
  const r = await inChild<ConcurrencyResult>("workloads/concurrency.ts", "concurrency", { samples: 9 });
  return [
    {
      workload: `W3 ${CALLS} × ${CALL_MS} ms calls, one turn`,
      measure: "wall ms per run",
      quiver: fmt(r.quiverMs),
      baseline: fmt(r.baselineMs),
      ratio: `${ratio(r.quiverMs / CALL_MS)} of ${CALL_MS} ms`,
      target: `≤ 1.05× (≤ ${fmt(CALL_MS * 1.05, 1)} ms)`,
      met: r.quiverMs <= CALL_MS * 1.05,
    },
  ];
}
