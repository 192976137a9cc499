import type { RunEvent } from "../contract/events.js";
import { type Colors, callLabel, duration, oneLine, plural } from "./terminal.js";
import { terminalText } from "./terminal-text.js";

const STATUS_INTERVAL_MS = 100;
const MAX_DIFF_LINES = 60;

export type RendererOptions = {
  /** Where the assistant's text goes (stdout). */
  out: NodeJS.WriteStream;
  /** Where everything else goes: calls, results, notes (stderr). */
  err: NodeJS.WriteStream;
  colors: Colors;
  showReasoning?: boolean;
};

/**
 * Renders a run's events as lines: the assistant's text streams to `out`; each call is
 * `● name(args…)` then `⎿ summary (lines · ms)` on `err`; partial results of a running call
 * (`tool_call_update`) share one throttled status line, shown only on a terminal. Whatever a
 * model, tool or peer wrote goes through `terminalText` before Quiver's colors are added.
 */
export class EventRenderer {
  readonly #out: NodeJS.WriteStream;
  readonly #err: NodeJS.WriteStream;
  readonly #c: Colors;
  readonly #showReasoning: boolean;
  /** The stream whose last line has no newline yet. */
  #open: "out" | "err" | undefined;
  /** The call whose `●` line is the last line printed (its result then needs no name). */
  #lastCallLine: string | undefined;
  /** Calls whose diff was shown with their approval prompt. */
  readonly #diffShown = new Set<string>();
  #status: { text: string; shown: boolean; timer: NodeJS.Timeout | undefined; lastAt: number } = {
    text: "",
    shown: false,
    timer: undefined,
    lastAt: 0,
  };

  constructor(options: RendererOptions) {
    this.#out = options.out;
    this.#err = options.err;
    this.#c = options.colors;
    this.#showReasoning = options.showReasoning ?? false;
  }

  get colors(): Colors {
    return this.#c;
  }

  /** Prints one line of commentary on `err` (ending any open line first). */
  note(line: string): void {
    this.#line(line);
  }

  /** Ends an open line and removes the status line: call before prompting. */
  settle(): void {
    this.#clearStatus();
    this.#endOpen();
  }

  render(ev: RunEvent): void {
    const c = this.#c;
    const depth = Math.max(0, (ev.path?.length ?? 1) - 1);
    const indent = "  ".repeat(depth);
    switch (ev.type) {
      case "text_delta":
        // A child run's words reach the parent as its tool result; streaming both would repeat them.
        if (depth === 0) this.#write("out", terminalText(ev.delta));
        break;
      case "reasoning_delta":
        if (this.#showReasoning && depth === 0) this.#write("err", c.dim(c.italic(terminalText(ev.delta))));
        break;
      case "message":
        if (ev.message.role === "assistant") this.#endOpen();
        break;
      case "tool_call_requested":
        this.#line(`${indent}${c.cyan("●")} ${c.bold(callLabel(ev.call.name, ev.call.args))}`);
        this.#lastCallLine = ev.call.id;
        break;
      case "approval_required": {
        this.#line(
          `${indent}  ${c.yellow("?")} ${terminalText(ev.call.name)} needs approval${ev.reason ? c.dim(` — ${oneLine(ev.reason, 300)}`) : ""}`,
        );
        // What the call will do, before anyone decides: the tool's description and its diff.
        if (ev.description) this.#line(`${indent}    ${oneLine(ev.description, 200)}`);
        const diff = diffOf(ev.details);
        if (diff) {
          this.#diff(diff, indent);
          this.#diffShown.add(ev.call.id);
        }
        break;
      }
      case "approval_resolved": {
        const by = ev.by === "stream" ? "" : c.dim(` (by ${terminalText(ev.by)})`);
        const why = ev.reason ? `: ${oneLine(ev.reason, 200)}` : "";
        this.#line(
          ev.decision === "approved"
            ? `${indent}  ${c.green("✓")} ${terminalText(ev.call.name)} approved${by}`
            : `${indent}  ${c.red("✗")} ${terminalText(ev.call.name)} denied${why}${by}`,
        );
        break;
      }
      case "state_updated":
        this.#line(`${indent}  ${c.dim(`◆ state ${oneLine(JSON.stringify(ev.state) ?? "undefined", 160)}`)}`);
        break;
      case "tool_call_retry":
        this.#line(
          `${indent}  ${c.yellow("↻")} ${terminalText(ev.call.name)} failed (${oneLine(ev.error.message, 120)}); retry ${ev.attempt} in ${duration(ev.delayMs)}`,
        );
        break;
      case "tool_call_update":
        if (this.#err.isTTY) {
          // One physical line, or clearing it would leave the wrapped part behind.
          const room = (this.#err.columns || 100) - indent.length - ev.call.name.length - 8;
          this.#statusUpdate(
            `${indent}  ${c.dim(`⋯ ${terminalText(ev.call.name)}: ${oneLine(partialText(ev.partial), Math.max(10, room))}`)}`,
          );
        }
        break;
      case "tool_call_completed":
        this.#completed(ev, indent);
        break;
      case "handoff":
        this.#line(
          `${indent}${c.magenta("→")} ${terminalText(ev.from)} handed the conversation to ${c.bold(terminalText(ev.to))}`,
        );
        break;
      case "warning":
        this.#line(`${indent}${c.yellow("!")} ${c.yellow(oneLine(ev.message, 400))}`);
        break;
      case "run_tainted":
        this.#line(
          `${indent}${c.yellow("!")} untrusted content entered the run (${terminalText(ev.source)}): destructive tools ask from now on`,
        );
        break;
      case "run_resumed":
        if (depth === 0) this.#line(c.dim(`resumed ${terminalText(ev.runId)} after event ${ev.fromSeq}`));
        break;
      case "run_failed":
        this.#line(
          `${indent}${c.red(`✗ ${depth ? `${terminalText(ev.agent)} failed` : "the run failed"}: ${terminalText(`${ev.name}: ${ev.message}`)}`)}`,
        );
        break;
      case "run_completed":
        if (depth > 0) break;
        this.settle();
        if (
          ev.stopReason !== "completed" &&
          ev.stopReason !== "ends_turn" &&
          ev.stopReason !== "awaiting_approval"
        )
          this.#line(c.dim(`■ stopped: ${stopText(ev.stopReason)}`));
        break;
      default:
        break;
    }
  }

  #completed(ev: Extract<RunEvent, { type: "tool_call_completed" }>, indent: string): void {
    const c = this.#c;
    const head =
      this.#lastCallLine === ev.call.id ? `${indent}  ⎿ ` : `${indent}  ⎿ ${terminalText(ev.call.name)}: `;
    if (ev.ok) {
      const lines = ev.output === "" ? 0 : ev.output.split("\n").length;
      const facts = [plural(lines, "line"), duration(ev.durationMs)];
      if (ev.truncated) facts.push(`cut from ${ev.truncated.originalChars.toLocaleString("en-US")} chars`);
      const first = oneLine(ev.output.split("\n").find((l) => l.trim()) ?? "", 80);
      this.#line(`${head}${first}${first ? " " : ""}${c.dim(`(${facts.join(" · ")})`)}`);
      const diff = diffOf(ev.details);
      // Shown already when it asked for approval.
      if (diff && !this.#diffShown.delete(ev.call.id)) this.#diff(diff, indent);
    } else {
      const kind = ev.error?.kind ?? "error";
      const message = ev.error?.message ?? ev.output;
      this.#line(
        `${head}${c.red(`✗ ${kind}: ${oneLine(message, 160)}`)} ${c.dim(`(${duration(ev.durationMs)})`)}`,
      );
    }
  }

  #diff(diff: string, indent: string): void {
    const c = this.#c;
    const lines = terminalText(diff.replace(/\n$/, "")).split("\n");
    for (const line of lines.slice(0, MAX_DIFF_LINES)) {
      const colored =
        line.startsWith("+++") || line.startsWith("---")
          ? c.bold(line)
          : line.startsWith("+")
            ? c.green(line)
            : line.startsWith("-")
              ? c.red(line)
              : line.startsWith("@@")
                ? c.cyan(line)
                : c.dim(line);
      this.#line(`${indent}    ${colored}`);
    }
    if (lines.length > MAX_DIFF_LINES)
      this.#line(c.dim(`${indent}    … ${plural(lines.length - MAX_DIFF_LINES, "more line")}`));
  }

  #write(stream: "out" | "err", text: string): void {
    if (text === "") return;
    this.#clearStatus();
    if (this.#open && this.#open !== stream) this.#endOpen();
    (stream === "out" ? this.#out : this.#err).write(text);
    this.#open = text.endsWith("\n") ? undefined : stream;
    this.#lastCallLine = undefined;
  }

  #line(text: string): void {
    this.#clearStatus();
    this.#endOpen();
    this.#err.write(`${text}\n`);
    this.#lastCallLine = undefined;
  }

  #endOpen(): void {
    if (!this.#open) return;
    (this.#open === "out" ? this.#out : this.#err).write("\n");
    this.#open = undefined;
  }

  #statusUpdate(text: string): void {
    if (!this.#err.isTTY) return;
    const status = this.#status;
    status.text = text;
    const wait = STATUS_INTERVAL_MS - (Date.now() - status.lastAt);
    if (wait <= 0) this.#drawStatus();
    else if (!status.timer) {
      status.timer = setTimeout(() => {
        status.timer = undefined;
        this.#drawStatus();
      }, wait);
      status.timer.unref?.();
    }
  }

  #drawStatus(): void {
    const status = this.#status;
    this.#endOpen();
    this.#err.write(`\r\x1b[2K${status.text}`);
    status.shown = true;
    status.lastAt = Date.now();
  }

  #clearStatus(): void {
    const status = this.#status;
    if (status.timer) {
      clearTimeout(status.timer);
      status.timer = undefined;
    }
    if (status.shown) {
      this.#err.write("\r\x1b[2K");
      status.shown = false;
    }
  }
}

/** The last line of a running call's partial output (a shell's tail), or its JSON. */
function partialText(partial: unknown): string {
  if (typeof partial === "string") return lastLine(partial);
  if (partial && typeof partial === "object") {
    const record = partial as Record<string, unknown>;
    for (const key of ["tail", "output", "stdout", "stderr", "chunk", "text", "line", "message", "status"]) {
      const value = record[key];
      if (typeof value === "string" && value.trim()) return lastLine(value);
    }
  }
  try {
    return JSON.stringify(partial) ?? "";
  } catch {
    return String(partial);
  }
}

function lastLine(text: string): string {
  const lines = text.split("\n").filter((l) => l.trim());
  return lines.at(-1) ?? "";
}

/** The unified diff an edit tool put in its result's details, if any. */
function diffOf(details: unknown): string | undefined {
  if (!details || typeof details !== "object") return undefined;
  const diff = (details as { diff?: unknown }).diff;
  return typeof diff === "string" && diff.trim() ? diff : undefined;
}

export function stopText(reason: string): string {
  switch (reason) {
    case "cancelled":
      return "cancelled";
    case "budget":
      return "the budget ran out";
    case "max_turns":
      return "the maximum number of turns was reached";
    case "awaiting_approval":
      return "parked, waiting for approval";
    default:
      return terminalText(reason);
  }
}
