import type { RunEvent } from "../contract/events.js";
import { serializeEvent } from "../contract/serialize-event.js";
import type { RunHandle } from "../run/handle.js";
import type { RunResult } from "../run/state/result.js";
import { type ApprovalState, callKey } from "./agent-setup.js";
import { askApproval } from "./approval-prompt.js";
import { takeRelayedDecisions } from "./decision-relay.js";
import { exitProcess, noteInterrupt } from "./interrupt.js";
import type { EventRenderer } from "./render.js";
import { type OpenedStore, shellQuote, storeArgument } from "./store-option.js";
import { callLabel, duration } from "./terminal.js";
import { terminalJson, terminalText } from "./terminal-text.js";
import { EXIT } from "./usage.js";

export type DriveOptions = {
  /** One `serializeEvent` line per event on stdout instead of the rendering. */
  json: boolean;
  /** Renders events (human mode) and prints notes on stderr (both modes). */
  renderer: EventRenderer;
  /** A person can answer prompts. */
  interactive: boolean;
  approvals: ApprovalState;
  /** Tools the person allowed for the rest of the session ("yes, don't ask again"). */
  sessionAllowed: Set<string>;
  /** The agent has an approval handler of its own (it answers when there is no terminal). */
  agentDecides: boolean;
  store: OpenedStore | undefined;
  /** How the agent file was named on the command line, for the `runs resume` line. */
  agentSpec: string;
  /** Print a usage line at the end (human mode). */
  footer?: boolean;
};

export type DriveOutcome = { code: number; result?: RunResult<any>; error?: Error };

/**
 * Reads a run's events to the end: renders them (or prints them as JSON lines), answers
 * approvals at the terminal, turns Ctrl+C or SIGTERM into a cancel (a second signal exits at
 * once), and maps the outcome to an exit code. A parked run prints the commands that decide and
 * resume it.
 */
export async function drive(handle: RunHandle<any>, options: DriveOptions): Promise<DriveOutcome> {
  const { renderer } = options;
  const c = renderer.colors;
  const started = Date.now();
  // SIGTERM is how a process manager, `timeout` or `docker stop` ask a program to end: like
  // Ctrl+C, the run is cancelled and its end stored before the process exits (with 143), so a
  // stored run is never left looking as if it were still going.
  let stoppedBy: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    const terminated = signal === "SIGTERM";
    if (!terminated) noteInterrupt();
    if (stoppedBy) {
      renderer.settle();
      exitProcess(terminated ? EXIT.terminated : EXIT.cancelled);
    }
    stoppedBy = signal;
    renderer.note(
      c.yellow(
        terminated
          ? "SIGTERM: cancelling the run… (SIGTERM again to quit at once)"
          : "cancelling… (Ctrl+C again to quit at once)",
      ),
    );
    handle.cancel(
      terminated ? "cancelled: the quiver process got SIGTERM" : "cancelled at the terminal (Ctrl+C)",
    );
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    for await (const ev of handle) {
      if (options.json) process.stdout.write(`${terminalJson(serializeEvent(ev))}\n`);
      else renderer.render(ev);
      if (ev.type === "approval_required") await decide(ev, handle, options);
    }
  } catch {
    // The iterator throws the run's error after run_failed; result() reports it below.
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
  let result: RunResult<any>;
  try {
    result = await handle.result();
  } catch (error) {
    const failure = error instanceof Error ? error : new Error(String(error));
    return { code: EXIT.failed, error: failure };
  }
  renderer.settle();
  if (result.stopReason === "awaiting_approval") {
    printParked(result, options);
    return { code: EXIT.parked, result };
  }
  if (options.footer && !options.json) {
    const u = result.usage;
    const parts = [`${duration(Date.now() - started)}`];
    if (u.totalTokens)
      parts.push(
        `${u.inputTokens.toLocaleString("en-US")} in · ${u.outputTokens.toLocaleString("en-US")} out tokens`,
      );
    if (u.costUsd) parts.push(`$${u.costUsd.toFixed(4)}`);
    renderer.note(c.dim(parts.join(" · ")));
  }
  if (result.stopReason !== "cancelled") return { code: EXIT.completed, result };
  return { code: stoppedBy === "SIGTERM" ? EXIT.terminated : EXIT.cancelled, result };
}

async function decide(
  ev: Extract<RunEvent, { type: "approval_required" }>,
  handle: RunHandle<any>,
  options: DriveOptions,
): Promise<void> {
  const { renderer, approvals } = options;
  const c = renderer.colors;
  if (options.sessionAllowed.has(ev.call.name)) {
    ev.approve();
    renderer.note(c.dim(`    (${terminalText(ev.call.name)} is allowed for this session)`));
    return;
  }
  if (options.interactive) {
    renderer.settle();
    // `quiver runs decide` from another terminal answers this prompt too (see decision-relay.ts).
    let relayed = false;
    const stopRelay = options.store
      ? takeRelayedDecisions(options.store.store, ev, handle, () => {
          relayed = true;
        })
      : undefined;
    let answer: Awaited<ReturnType<typeof askApproval>>;
    try {
      answer = await askApproval(ev, handle, c);
    } finally {
      stopRelay?.();
    }
    if (relayed) renderer.note(c.dim("    (decided in another process: quiver runs decide)"));
    switch (answer.kind) {
      case "approve":
        if (answer.always) options.sessionAllowed.add(ev.call.name);
        ev.approve();
        return;
      case "deny":
        ev.reject(answer.reason ?? "the user said no");
        return;
      case "gone":
        return;
      case "dismissed":
        // Undecided, never allowed: with a store the run parks; without one nothing can wait.
        approvals.dismissed.add(callKey(ev.runId, ev.call.id));
        if (!approvals.stored) ev.reject("the approval prompt was dismissed, so the call was not run");
        return;
    }
  }
  // No terminal: the agent's own handler may answer; else a stored run parks.
  if (!options.agentDecides && !approvals.stored) {
    ev.reject("there was no terminal to ask and no store to park the run in, so the call was denied");
  }
}

function printParked(result: RunResult<any>, options: DriveOptions): void {
  const { renderer } = options;
  const c = renderer.colors;
  const pending = result.pending ?? [];
  const store = storeArgument(options.store);
  renderer.note(
    c.yellow(
      `⏸ run ${result.runId} is parked: ${pending.length === 1 ? "1 call waits" : `${pending.length} calls wait`} for approval`,
    ),
  );
  for (const call of pending)
    renderer.note(`    ${callLabel(call.name, call.args, 80)}  ${c.dim(`call ${terminalText(call.id)}`)}`);
  // Commands for another process would find nothing in a store that ends with this one.
  if (options.store?.spec === "memory") {
    renderer.note(
      c.dim(
        "  it is not stored (a memory store ends with this process): run it with --store sqlite:PATH to decide and resume it later",
      ),
    );
    return;
  }
  const first = pending[0]?.id ?? "<callId>";
  renderer.note(
    `  decide:  quiver runs decide ${result.runId} ${terminalText(shellQuote(first))} --approve${store}   (or --deny --reason "…")`,
  );
  renderer.note(`  resume:  quiver runs resume ${result.runId} ${shellQuote(options.agentSpec)}${store}`);
}
