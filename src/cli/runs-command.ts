import { UserError } from "../errors.js";
import { Runner } from "../run/runner.js";
import { failedForStore } from "../store/log-rules.js";
import { LeaseConflict, type RunStatus, type RunSummary } from "../store/types.js";
import { loadAgentFile, withModel } from "./agent-file.js";
import { agentForCli } from "./agent-setup.js";
import { cancelStoredRun } from "./cancel-run.js";
import { relayDecision } from "./decision-relay.js";
import { drive } from "./drive.js";
import { AGENT_OPTIONS, flag, modeOption, type Parsed, parseCommand, text } from "./options.js";
import { EventRenderer } from "./render.js";
import { showRun } from "./show-run.js";
import { type OpenedStore, openExistingStore, storeArgument } from "./store-option.js";
import { tailRun } from "./tail-run.js";
import { colorsFor, isInteractive } from "./terminal.js";
import { terminalJson, terminalText } from "./terminal-text.js";
import { EXIT, RUNS_HELP, UsageError } from "./usage.js";

const RUNS_OPTIONS = {
  ...AGENT_OPTIONS,
  status: { type: "string" },
  approve: { type: "boolean" },
  deny: { type: "boolean" },
  reason: { type: "string" },
} as const;

const STATUSES: readonly RunStatus[] = ["running", "parked", "completed", "failed"];

/** `quiver runs list | show | tail | decide | resume | cancel` over a store. */
export async function runsCommand(args: string[]): Promise<number> {
  const parsed = parseCommand(args, RUNS_OPTIONS, RUNS_HELP);
  const [sub, ...rest] = parsed.positionals;
  if (flag(parsed, "help") || sub === "help") {
    process.stdout.write(`${RUNS_HELP}\n`);
    return EXIT.completed;
  }
  if (!sub) throw new UsageError("quiver runs needs a command", RUNS_HELP);
  const action = ACTIONS[sub];
  if (!action) throw new UsageError(`unknown runs command "${sub}"`, RUNS_HELP);
  const wanted = ARITY[sub]!;
  if (rest.length !== wanted.length)
    throw new UsageError(
      `quiver runs ${sub} takes ${wanted.map((w) => `<${w}>`).join(" ") || "no arguments"}`,
      RUNS_HELP,
    );
  if (sub === "list") listStatus(parsed); // checks the option before a store is opened
  if (sub === "decide") decision(parsed);
  const opened = await openExistingStore(text(parsed, "store"));
  try {
    return await action(opened, rest, parsed);
  } finally {
    await opened.store.close();
  }
}

type Action = (opened: OpenedStore, args: string[], parsed: Parsed) => Promise<number>;

const ARITY: Record<string, string[]> = {
  list: [],
  show: ["runId"],
  tail: ["runId"],
  decide: ["runId", "callId"],
  resume: ["runId", "agent-file"],
  cancel: ["runId"],
};

const ACTIONS: Record<string, Action> = {
  list: async ({ store }, _args, parsed) => {
    const status = listStatus(parsed);
    const runs = await store.listRuns(status ? { status } : {});
    if (flag(parsed, "json")) {
      process.stdout.write(`${terminalJson(JSON.stringify(runs))}\n`);
      return EXIT.completed;
    }
    if (runs.length === 0) {
      process.stdout.write(status ? `no ${status} runs\n` : "no runs stored\n");
      return EXIT.completed;
    }
    printTable(runs);
    return EXIT.completed;
  },

  show: async ({ store }, [runId], parsed) => {
    await showRun(store, runId!, { json: flag(parsed, "json"), colors: colorsFor(process.stdout) });
    return EXIT.completed;
  },

  tail: async ({ store }, [runId], parsed) =>
    tailRun(store, runId!, {
      json: flag(parsed, "json"),
      renderer: new EventRenderer({
        out: process.stdout,
        err: process.stdout,
        colors: colorsFor(process.stdout),
        showReasoning: flag(parsed, "show-reasoning"),
      }),
    }),

  decide: async (opened, [runId, callId], parsed) => {
    const { approved, reason } = decision(parsed);
    const given = { approved, ...(reason !== undefined && { reason }) };
    try {
      await Runner.decide(opened.store, runId!, callId!, given);
    } catch (error) {
      if (!(error instanceof LeaseConflict)) throw error;
      // Live in another process (its lease is held): that process's prompt takes the decision.
      const resolved = await relayDecision(opened.store, runId!, callId!, given);
      const by =
        resolved.by === "channel" ? "" : ` (by ${terminalText(resolved.by)}, before this decision arrived)`;
      process.stdout.write(
        `${resolved.decision} ${callId} of ${runId}${by}: the process running it took the decision\n`,
      );
      return EXIT.completed;
    }
    process.stdout.write(
      `${approved ? "approved" : "denied"} ${callId} of ${runId}\n` +
        `continue the run with: quiver runs resume ${runId} <agent-file>${storeArgument(opened)}\n`,
    );
    return EXIT.completed;
  },

  resume: async (opened, [runId, agentSpec], parsed) => {
    const mode = modeOption(parsed, RUNS_HELP);
    const agent = await withModel(await loadAgentFile(agentSpec!), text(parsed, "model"));
    const approvals = { dismissed: new Set<string>(), stored: true };
    const before = await opened.store.getRun(runId!);
    if (!before) throw new UserError(`the store has no run ${runId}`);
    const handle = Runner.resume(agentForCli(agent, { mode, approvals }), runId!, { store: opened.store });
    const renderer = new EventRenderer({
      out: process.stdout,
      err: process.stderr,
      colors: colorsFor(process.stderr),
      showReasoning: flag(parsed, "show-reasoning"),
    });
    if (before.status === "completed" || (before.status === "failed" && !failedForStore(before)))
      renderer.note(`run ${runId} had already ${before.status}; nothing to resume`);
    const outcome = await drive(handle, {
      json: flag(parsed, "json"),
      renderer,
      interactive: isInteractive(),
      approvals,
      sessionAllowed: new Set(),
      agentDecides: agent.config.approvalHandler !== undefined,
      store: opened,
      agentSpec: agentSpec!,
      footer: true,
    });
    if (outcome.error) process.stderr.write(`error: ${terminalText(outcome.error.message)}\n`);
    return outcome.code;
  },

  cancel: async (opened, [runId]) => {
    const ended = await cancelStoredRun(opened.store, runId!);
    process.stdout.write(
      ended.pending
        ? `cancelled ${runId}: ${ended.pending} waiting call${ended.pending === 1 ? "" : "s"} got a cancelled result\n`
        : `cancelled ${runId}\n`,
    );
    return EXIT.completed;
  },
};

function listStatus(parsed: Parsed): RunStatus | undefined {
  const status = text(parsed, "status");
  if (status === undefined) return undefined;
  if (!(STATUSES as readonly string[]).includes(status))
    throw new UsageError(`--status must be one of ${STATUSES.join(", ")}, got "${status}"`, RUNS_HELP);
  return status as RunStatus;
}

function decision(parsed: Parsed): { approved: boolean; reason: string | undefined } {
  const approve = flag(parsed, "approve");
  const deny = flag(parsed, "deny");
  if (approve === deny)
    throw new UsageError("quiver runs decide needs exactly one of --approve or --deny", RUNS_HELP);
  const reason = text(parsed, "reason");
  if (approve && reason !== undefined) throw new UsageError("--reason goes with --deny", RUNS_HELP);
  return { approved: approve, reason };
}

function printTable(runs: RunSummary[]): void {
  const c = colorsFor(process.stdout);
  const rows = runs.map((run) => [
    terminalText(run.parentRunId ? `↳ ${run.runId}` : run.runId),
    failedForStore(run) ? RESUMABLE : run.status,
    terminalText(run.agent),
    terminalText(run.sessionId ?? "-"),
    new Date(run.startedAt).toISOString().replace("T", " ").slice(0, 19),
    String(run.lastSeq),
  ]);
  const header = ["RUN", "STATUS", "AGENT", "SESSION", "STARTED (UTC)", "EVENTS"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  process.stdout.write(`${c.dim(line(header))}\n`);
  for (const row of rows) {
    const status = row[1]!;
    const painted = line(row).replace(
      ` ${status.padEnd(widths[1]!)} `,
      ` ${paint(c, status)(status.padEnd(widths[1]!))} `,
    );
    process.stdout.write(`${painted}\n`);
  }
  const parked = runs.filter((r) => r.status === "parked").length;
  if (parked) process.stdout.write(c.dim(`${parked} parked: see one with quiver runs show <runId>\n`));
  const stopped = runs.filter(failedForStore).length;
  if (stopped)
    process.stdout.write(
      c.dim(
        `${stopped} stopped by the store, unfinished: continue with quiver runs resume <runId> <agent-file>, or end with quiver runs cancel <runId>\n`,
      ),
    );
}

/** A run the store stopped (`failureKind` store_unavailable): failed, but not finished. */
const RESUMABLE = "failed (store unavailable, resumable)";

function paint(c: ReturnType<typeof colorsFor>, status: string): (s: string) => string {
  if (status === "completed") return c.green;
  if (status === "failed") return c.red;
  if (status === "parked" || status === RESUMABLE) return c.yellow;
  return c.cyan;
}
