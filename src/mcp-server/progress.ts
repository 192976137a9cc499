/** What an MCP `notifications/progress` carries besides the token. */
export type Progress = { progress: number; total?: number; message?: string };

const INTERVAL_MS = 100;
const MAX_MESSAGE_CHARS = 500;

/**
 * Turns a call's partial results into MCP progress notifications for the client's
 * `progressToken`: at most one every 100 ms (the latest of each interval), `progress` always
 * increasing as the protocol requires. A partial shaped `{ progress, total?, message? }` (what
 * an MCP tool host reports) keeps its numbers when they increase; anything else counts up, with
 * the partial as the message. `end()` sends the last partial still held back (a client then sees
 * 5/5, not 4/5), and nothing after it; a send that fails is dropped: progress is advisory,
 * never a reason for a call to fail.
 */
export class ProgressReporter {
  readonly #send: (progress: Progress) => Promise<void>;
  #last = 0;
  #pending: Progress | undefined;
  #timer: NodeJS.Timeout | undefined;
  #lastSentAt = 0;
  #ended = false;

  constructor(send: (progress: Progress) => Promise<void>) {
    this.#send = send;
  }

  report(partial: unknown): void {
    if (this.#ended) return;
    this.#pending = this.#next(partial);
    const wait = this.#lastSentAt + INTERVAL_MS - Date.now();
    if (wait <= 0) this.#flush();
    else this.#timer ??= setTimeout(() => this.#flush(), wait);
  }

  end(): void {
    if (this.#ended) return;
    clearTimeout(this.#timer);
    // Sent before the call's result, on the same connection: the client sees it first.
    if (this.#pending) this.#flush();
    this.#ended = true;
    this.#pending = undefined;
  }

  #next(partial: unknown): Progress {
    const given = partial as { progress?: unknown; total?: unknown; message?: unknown } | null;
    if (
      typeof given?.progress === "number" &&
      Number.isFinite(given.progress) &&
      given.progress > this.#last
    ) {
      const progress: Progress = { progress: given.progress };
      if (typeof given.total === "number" && Number.isFinite(given.total)) progress.total = given.total;
      if (typeof given.message === "string") progress.message = cut(given.message);
      return progress;
    }
    const message = textOf(partial);
    return { progress: this.#last + 1, ...(message !== undefined && { message }) };
  }

  #flush(): void {
    this.#timer = undefined;
    const progress = this.#pending;
    this.#pending = undefined;
    if (!progress || this.#ended) return;
    // A later partial may have been numbered from an older #last: keep the sequence increasing.
    if (progress.progress <= this.#last) progress.progress = this.#last + 1;
    this.#last = progress.progress;
    this.#lastSentAt = Date.now();
    this.#send(progress).catch(() => {});
  }
}

function textOf(partial: unknown): string | undefined {
  if (partial === undefined || partial === null) return undefined;
  if (typeof partial === "string") return cut(partial);
  // The words a tool streams (the workspace shell's `{ output }`), rather than their JSON.
  const { message, output } = partial as { message?: unknown; output?: unknown };
  if (typeof message === "string") return cut(message);
  if (typeof output === "string") return cut(output);
  try {
    const json = JSON.stringify(partial);
    return json === undefined ? undefined : cut(json);
  } catch {
    return undefined;
  }
}

/** The end of a long text (a shell's output so far ends with what is newest). */
function cut(text: string): string {
  return text.length > MAX_MESSAGE_CHARS ? `…${text.slice(-(MAX_MESSAGE_CHARS - 1))}` : text;
}
