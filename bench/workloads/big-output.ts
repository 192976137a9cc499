/**
 * W4: a tool that returns 1 MiB of text, 20 turns in a row. Step time = a run's wall time /
 * its 20 steps (the final answer turn included). What reaches the transcript must be the
 * truncated text only (`maxToolOutputChars`, 200,000 by default, plus the truncation marker);
 * the event log as a store would keep it is measured too. Peak RSS is the child's maxRSS.
 */
import { z } from "zod";
import { compare, fmt, inChild, loadQuiver, mb, peakRssBytes, type Row } from "../harness.js";
import { script } from "./baseline.js";

const STEPS = 20;
const OUTPUT_CHARS = 1024 * 1024;
/** The documented default of `maxToolOutputChars`, and room for the truncation marker line. */
const CAP_CHARS = 200_000;
const MARKER_ALLOWANCE = 1_000;

type BigOutputResult = {
  stepMs: number;
  toolMessageChars: number;
  transcriptChars: number;
  eventLogBytes: number;
  startRss: number;
  peakRss: number;
};

export async function bigOutput({ samples }: { samples: number }): Promise<BigOutputResult> {
  const startRss = process.memoryUsage().rss;
  const { Agent, Runner, ScriptedModel, tool } = await loadQuiver();
  // Varied ASCII lines, built once: the tool's own cost is not what is measured.
  let text = "";
  for (let line = 0; text.length < OUTPUT_CHARS; line++) {
    text += `line ${line}: the quick brown fox jumps over the lazy dog, ${line * 7919} times.\n`;
  }
  text = text.slice(0, OUTPUT_CHARS);
  const big = tool({
    name: "dump",
    description: "Dump a log.",
    parameters: z.object({}),
    execute: async () => text,
  });
  const turns = script({ turns: STEPS }, () => ({ name: "dump", args: {} }));
  const agentFor = () =>
    new Agent({ name: "bench", model: new ScriptedModel(turns, { record: false }), tools: [big] });

  // What reaches the transcript and the event log, checked once outside timing.
  const handle = Runner.stream(agentFor(), "go", { maxTurns: STEPS + 1 });
  let eventLogBytes = 0;
  for await (const ev of handle) {
    // As a store keeps it: `tool_call_completed.result` is the raw value, for live readers only.
    const stored = ev.type === "tool_call_completed" ? { ...ev, result: undefined } : ev;
    eventLogBytes += Buffer.byteLength(JSON.stringify(stored));
  }
  const result = await handle.result();
  const toolMessages = result.messages.filter((m) => m.role === "tool");
  if (toolMessages.length !== STEPS)
    throw new Error(`expected ${STEPS} tool messages, got ${toolMessages.length}`);
  const chars = (m: (typeof result.messages)[number]) =>
    typeof m.content === "string" ? m.content.length : JSON.stringify(m.content).length;

  const ms = await compare(
    { quiver: () => Runner.run(agentFor(), "go", { maxTurns: STEPS + 1 }) },
    { samples, warmups: 10 },
  );
  return {
    stepMs: ms.quiver / STEPS,
    toolMessageChars: Math.max(...toolMessages.map(chars)),
    transcriptChars: result.messages.reduce((sum, m) => sum + chars(m), 0),
    eventLogBytes,
    startRss,
    peakRss: peakRssBytes(),
  };
}

export async function rows(): Promise<Row[]> {
  const r = await inChild<BigOutputResult>("workloads/big-output.ts", "bigOutput", { samples: 9 });
  const truncatedOnly = r.toolMessageChars <= CAP_CHARS + MARKER_ALLOWANCE;
  return [
    {
      workload: "W4 1 MiB tool output",
      measure: "ms per step",
      quiver: fmt(r.stepMs, 3),
      target: "≤ 0.3 ms",
      met: r.stepMs <= 0.3,
    },
    {
      workload: "W4 1 MiB tool output",
      measure: "chars in the tool message (of 1,048,576)",
      quiver: r.toolMessageChars.toLocaleString("en-US"),
      target: `truncated only (≤ ${CAP_CHARS.toLocaleString("en-US")} + marker)`,
      met: truncatedOnly,
    },
    {
      workload: "W4 1 MiB tool output",
      measure: `transcript chars / event log bytes, ${STEPS} steps`,
      quiver: `${fmt(r.transcriptChars / 1e6, 2)} M / ${fmt(r.eventLogBytes / 1e6, 2)} MB`,
    },
    {
      workload: "W4 1 MiB tool output",
      measure: "peak RSS, MB (before loading quiver)",
      quiver: `${fmt(mb(r.peakRss))} (${fmt(mb(r.startRss))})`,
    },
  ];
}
