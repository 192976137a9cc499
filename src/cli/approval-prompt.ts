import type { EventOf } from "../contract/events.js";
import type { RunHandle } from "../run/handle.js";
import { PromptOutput } from "./prompt-output.js";
import { type Colors, callLabel } from "./terminal.js";
import { terminalText } from "./terminal-text.js";

/** What the person at the terminal answered. */
export type PromptAnswer =
  | { kind: "approve"; always: boolean }
  | { kind: "deny"; reason: string | undefined }
  /** Decided elsewhere (another channel, the approval timeout) or the run was cancelled. */
  | { kind: "gone" }
  /** Ctrl+C on the prompt: the call stays undecided. */
  | { kind: "dismissed" };

const POLL_MS = 100;

/**
 * Asks at the terminal whether a call may run: yes once, yes for this tool for the rest of the
 * session, or no with a reason. The prompt is tied to the run: when the call stops waiting — a
 * decision from another channel, the approval timeout, a cancel — the prompt goes away.
 *
 * @example
 * const answer = await askApproval(ev, handle, colors);
 */
export async function askApproval(
  ev: EventOf<"approval_required">,
  handle: RunHandle<any>,
  colors: Colors,
): Promise<PromptAnswer> {
  const clack = await import("@clack/prompts");
  const gone = new AbortController();
  // The channel has no event for "decided": the call leaving `pending` is the sign.
  const stillPending = () =>
    !handle.cancelled && handle.approvals.pending.some((c) => c === ev.call || c.id === ev.call.id);
  const watch = setInterval(() => {
    if (!stillPending()) gone.abort();
  }, POLL_MS);
  // One per prompt: when the call stops waiting, the prompt on screen is taken away.
  const selectOutput = new PromptOutput(process.stderr);
  let reasonOutput: PromptOutput | undefined;
  const question = `Allow ${colors.bold(callLabel(ev.call.name, ev.call.args, 80))}?`;
  // What stays on screen of a prompt the call left: the question, marked as no longer asked
  // (the reason prompt comes after the question's own answered frame).
  const goneFrom = (output: PromptOutput, question?: string): PromptAnswer => {
    output.clear();
    if (question) process.stderr.write(`${colors.gray("│")}\n${colors.gray("◇")}  ${question}\n`);
    return { kind: "gone" };
  };
  // A dismissed prompt's last frame shows the option under the cursor, struck through: on a
  // terminal without strikethrough (or with NO_COLOR) it read as if "Yes" had been chosen. The
  // keys that dismiss it are seen here before the prompt draws that frame, so the option says so.
  let dismissed = false;
  const onKey = (_text: string | undefined, key: { name?: string; ctrl?: boolean } | undefined) => {
    if (key?.name === "escape" || (key?.ctrl && key.name === "c")) dismissed = true;
  };
  const notAnswered = `${colors.isColorSupported ? "\u001b[29m" : ""}not answered (dismissed)`;
  const option = (value: string, label: string) => ({
    value,
    get label() {
      return dismissed ? notAnswered : label;
    },
  });
  process.stdin.prependListener("keypress", onKey);
  try {
    const choice = await clack.select({
      message: question,
      options: [
        option("once", "Yes"),
        option("always", `Yes, and don't ask again for ${terminalText(ev.call.name)} in this session`),
        option("no", "No, and tell the agent why"),
      ],
      signal: gone.signal,
      output: selectOutput,
    });
    if (gone.signal.aborted) return goneFrom(selectOutput, question);
    if (clack.isCancel(choice)) return { kind: "dismissed" };
    if (choice === "once" || choice === "always") return { kind: "approve", always: choice === "always" };
    reasonOutput = new PromptOutput(process.stderr);
    const reason = await clack.text({
      message: "Why not? (Enter to skip)",
      placeholder: "the agent sees this",
      signal: gone.signal,
      output: reasonOutput,
    });
    if (gone.signal.aborted) return goneFrom(reasonOutput);
    // Ctrl+C on the reason still means no: the person already said so.
    if (clack.isCancel(reason)) return { kind: "deny", reason: undefined };
    return { kind: "deny", reason: reason.trim() || undefined };
  } finally {
    process.stdin.off("keypress", onKey);
    clearInterval(watch);
    selectOutput.destroy();
    reasonOutput?.destroy();
  }
}
