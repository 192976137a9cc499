import type { RunEvent } from "../contract/events.js";
import { UserError } from "../errors.js";
import { describeMedia, isMediaBlock } from "../model/media.js";
import type { ContentBlock, Message, ToolCall } from "../model/types.js";
import { type RunState, replay } from "../run/durability/replay.js";
import { STORE_UNAVAILABLE } from "../store/log-rules.js";
import type { RunStore } from "../store/types.js";
import { stopText } from "./render.js";
import { type Colors, callLabel, duration, oneLine } from "./terminal.js";
import { terminalJson, terminalText } from "./terminal-text.js";

/** What the log says about one call: how it ended, how long it took, who approved it. */
export type CallReport = {
  call: ToolCall;
  ok?: boolean;
  output?: string;
  error?: { kind: string; message: string };
  durationMs?: number;
  attempts: number;
  approval?: { asked: true; decision?: "approved" | "denied"; by?: string; reason?: string };
};

/** A stored run as `quiver runs show` reports it (`--json` prints exactly this). */
export type RunReport = {
  runId: string;
  agent: string | undefined;
  status: RunState["status"] | "parked";
  stopReason?: string;
  output?: unknown;
  error?: RunState["error"];
  sessionId?: string;
  startedAt?: number;
  endedAt?: number;
  usage: RunState["usage"];
  messages: Message[];
  calls: CallReport[];
  pending: ToolCall[];
};

/** Builds the report of a run from its events, through `replay()`. */
export function reportRun(events: RunEvent[]): RunReport {
  const state = replay(events);
  const runId = state.runId!;
  const calls = new Map<string, CallReport>();
  let sessionId: string | undefined;
  const entry = (call: ToolCall) => {
    let report = calls.get(call.id);
    if (!report) {
      report = { call, attempts: 0 };
      calls.set(call.id, report);
    }
    return report;
  };
  for (const ev of events) {
    if (ev.runId !== runId) continue; // a child run's event
    switch (ev.type) {
      case "run_started":
        sessionId = ev.sessionId;
        break;
      case "tool_call_requested":
        entry(ev.call);
        break;
      case "tool_call_started":
        entry(ev.call).attempts++;
        break;
      case "approval_required":
        entry(ev.call).approval = { asked: true };
        break;
      case "approval_resolved": {
        const report = entry(ev.call);
        report.approval = {
          asked: true,
          decision: ev.decision,
          by: ev.by,
          ...(ev.reason !== undefined && { reason: ev.reason }),
        };
        break;
      }
      case "tool_call_completed": {
        const report = entry(ev.call);
        report.ok = ev.ok;
        report.output = ev.output;
        report.durationMs = ev.durationMs;
        if (ev.error) report.error = ev.error;
        break;
      }
    }
  }
  const ended = events.findLast(
    (e) => e.runId === runId && (e.type === "run_completed" || e.type === "run_failed"),
  );
  return {
    runId,
    agent: state.agent,
    status: state.status === "running" && state.parked ? "parked" : state.status,
    ...(state.stopReason !== undefined && { stopReason: state.stopReason }),
    ...(state.output !== undefined && { output: state.output }),
    ...(state.error && { error: state.error }),
    ...(sessionId !== undefined && { sessionId }),
    ...(state.startedAt !== undefined && { startedAt: state.startedAt }),
    ...(ended && { endedAt: ended.at }),
    usage: state.usage,
    messages: state.messages,
    calls: [...calls.values()],
    pending: state.pendingCalls,
  };
}

/**
 * `quiver runs show <runId>`: the transcript, each call with its result, duration and approval
 * (who decided), then usage and cost — all rebuilt from the stored log.
 */
export async function showRun(
  store: RunStore,
  runId: string,
  options: { json: boolean; colors: Colors },
): Promise<void> {
  const events = await store.read(runId);
  if (events.length === 0) throw new UserError(`the store has no run ${runId}`);
  const report = reportRun(events);
  if (options.json) {
    process.stdout.write(`${terminalJson(JSON.stringify(report))}\n`);
    return;
  }
  const lines = renderReport(report, options.colors);
  process.stdout.write(`${lines.join("\n")}\n`);
}

export function renderReport(report: RunReport, c: Colors): string[] {
  const out: string[] = [];
  // Everything in the report was read from the store: a model, a tool or a peer wrote most of it.
  const runId = terminalText(report.runId);
  const took =
    report.startedAt !== undefined && report.endedAt !== undefined
      ? ` · took ${duration(report.endedAt - report.startedAt)}`
      : "";
  const status =
    report.status === "completed"
      ? c.green(
          `completed${report.stopReason && report.stopReason !== "completed" ? ` (${stopText(report.stopReason)})` : ""}`,
        )
      : report.status === "failed"
        ? report.error?.kind === STORE_UNAVAILABLE
          ? c.yellow("failed (store unavailable, resumable)")
          : c.red("failed")
        : report.status === "parked"
          ? c.yellow("parked, waiting for approval")
          : c.cyan("running (or interrupted)");
  out.push(`${c.bold(`Run ${runId}`)} · agent ${terminalText(report.agent ?? "?")} · ${status}${took}`);
  if (report.startedAt !== undefined)
    out.push(
      c.dim(
        `started ${new Date(report.startedAt).toISOString()}${report.sessionId ? ` · session ${terminalText(report.sessionId)}` : ""}`,
      ),
    );
  if (report.error)
    out.push(
      c.red(terminalText(`error: ${report.error.name}: ${report.error.message} (${report.error.kind})`)),
    );
  if (report.status === "failed" && report.error?.kind === STORE_UNAVAILABLE)
    out.push(
      c.dim(
        `the store stopped the run, not the run itself: continue it with quiver runs resume ${runId} <agent-file>, or end it with quiver runs cancel ${runId}`,
      ),
    );
  out.push("", c.dim("── transcript ──"));
  const byId = new Map(report.calls.map((r) => [r.call.id, r]));
  for (const message of report.messages) {
    if (message.role === "tool") continue; // shown under the call that produced it
    if (message.role === "system") {
      out.push(`${c.dim("system:")} ${oneLine(textOf(message.content), 200)}`);
    } else if (message.role === "user") {
      out.push(`${c.bold(c.blue("user:"))} ${terminalText(textOf(message.content))}`);
    } else {
      const said = textOf(message.content);
      if (said) out.push(`${c.bold(c.magenta("assistant:"))} ${terminalText(said)}`);
      for (const call of message.toolCalls ?? [])
        out.push(...renderCall(byId.get(call.id) ?? { call, attempts: 0 }, c));
    }
  }
  if (report.pending.length) {
    out.push(
      "",
      c.yellow(
        `waiting for a decision: ${terminalText(report.pending.map((call) => `${call.name} (${call.id})`).join(", "))}`,
      ),
    );
    out.push(c.dim(`  quiver runs decide ${runId} <callId> --approve | --deny [--reason …]`));
  }
  const u = report.usage;
  out.push("", c.dim("── usage ──"));
  const cost =
    u.costUsd !== undefined ? `$${u.costUsd.toFixed(4)}` : "cost unknown (no price for this model)";
  out.push(
    `${u.inputTokens.toLocaleString("en-US")} input · ${u.outputTokens.toLocaleString("en-US")} output · ${u.totalTokens.toLocaleString("en-US")} total tokens` +
      `${u.cachedInputTokens ? ` (${u.cachedInputTokens.toLocaleString("en-US")} cached)` : ""} · ${cost}`,
  );
  out.push(`${report.calls.length} call${report.calls.length === 1 ? "" : "s"}`);
  return out;
}

function renderCall(report: CallReport, c: Colors): string[] {
  const lines = [
    `  ${c.cyan("●")} ${callLabel(report.call.name, report.call.args)}  ${c.dim(terminalText(report.call.id))}`,
  ];
  const approval = report.approval;
  if (approval) {
    lines.push(
      approval.decision === undefined
        ? `    ${c.yellow("? approval asked, not decided")}`
        : `    ${approval.decision === "approved" ? c.green("✓ approved") : c.red("✗ denied")} by ${terminalText(String(approval.by))}${approval.reason ? `: ${oneLine(approval.reason, 300)}` : ""}`,
    );
  }
  if (report.ok === undefined) {
    lines.push(`    ${c.dim("⎿ no result yet")}`);
    return lines;
  }
  const facts = [
    report.durationMs !== undefined ? duration(report.durationMs) : undefined,
    report.attempts > 1 ? `${report.attempts} attempts` : undefined,
  ]
    .filter(Boolean)
    .join(" · ");
  const output = report.ok
    ? oneLine(report.output ?? "", 160)
    : c.red(
        `✗ ${report.error?.kind ?? "error"}: ${oneLine(report.error?.message ?? report.output ?? "", 160)}`,
      );
  lines.push(`    ⎿ ${output}${facts ? ` ${c.dim(`(${facts})`)}` : ""}`);
  return lines;
}

function textOf(content: string | ContentBlock[]): string {
  if (typeof content === "string") return content;
  return content
    .map((block) => (block.type === "text" ? block.text : isMediaBlock(block) ? describeMedia(block) : ""))
    .filter(Boolean)
    .join("\n");
}
