import type { Progress } from "@modelcontextprotocol/sdk/types.js";
import type { RunContext } from "../../contract/run-context.js";
import { cleanPeerText } from "./peer-text.js";

/** The least time between two progress updates of one call that reach the run's events. */
export const PROGRESS_INTERVAL_MS = 50;
/** Longest progress message kept (it is server-written text shown to observers). */
const MAX_PROGRESS_MESSAGE_CHARS = 500;

/**
 * A call's progress notifications as `tool_call_update` events, at most one per
 * `PROGRESS_INTERVAL_MS`: the first at once, then the latest of each interval. A server
 * reporting progress a thousand times a second fills the event log with twenty updates a
 * second, not a thousand. `flush()` delivers the last one held back, before the result;
 * `stop()` drops it (the call was cancelled).
 *
 * @example
 * const progress = progressReporter(ctx);
 * await client.callTool(params, undefined, { onprogress: progress.report });
 * progress.flush();
 */
export function progressReporter(ctx: RunContext): {
  report(progress: Progress): void;
  flush(): void;
  stop(): void;
} {
  let held: Progress | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const send = ({ progress, total, message }: Progress) => {
    ctx.update({
      progress,
      ...(total !== undefined ? { total } : {}),
      ...(message ? { message: cleanPeerText(message, MAX_PROGRESS_MESSAGE_CHARS) } : {}),
    });
  };
  const flush = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    const last = held;
    held = undefined;
    if (last) send(last);
  };
  return {
    report(progress) {
      if (timer !== undefined) {
        held = progress;
        return;
      }
      send(progress);
      timer = setTimeout(() => {
        timer = undefined;
        const last = held;
        held = undefined;
        if (last) send(last);
      }, PROGRESS_INTERVAL_MS);
      timer.unref?.();
    },
    flush,
    stop() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      held = undefined;
    },
  };
}
