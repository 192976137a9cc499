import { setTimeout as sleep } from "node:timers/promises";
import { serializeEvent } from "../contract/serialize-event.js";
import { UserError } from "../errors.js";
import type { RunStore } from "../store/types.js";
import { noteInterrupt } from "./interrupt.js";
import type { EventRenderer } from "./render.js";
import { terminalJson, terminalText } from "./terminal-text.js";
import { EXIT } from "./usage.js";

const POLL_MS = 250;

/**
 * `quiver runs tail <runId>`: prints the events stored so far, then follows new ones (polling
 * the store) until the run completes or fails; Ctrl+C stops following. A parked run is followed
 * on: it continues when someone decides and resumes it.
 */
export async function tailRun(
  store: RunStore,
  runId: string,
  options: { json: boolean; renderer: EventRenderer },
): Promise<number> {
  const { renderer } = options;
  const c = renderer.colors;
  const stop = new AbortController();
  const onInterrupt = () => {
    noteInterrupt();
    stop.abort();
  };
  process.on("SIGINT", onInterrupt);
  let after = 0;
  try {
    for (;;) {
      const events = await store.read(runId, after);
      if (after === 0 && events.length === 0) throw new UserError(`the store has no run ${runId}`);
      for (const ev of events) {
        after = ev.seq;
        if (options.json) process.stdout.write(`${terminalJson(serializeEvent(ev))}\n`);
        else renderer.render(ev);
        if (ev.runId !== runId) continue;
        if (ev.type === "run_parked" && !options.json)
          renderer.note(
            c.yellow(
              `⏸ parked: waiting for a decision on ${terminalText(ev.pending.map((p) => p.id).join(", "))} (following on)`,
            ),
          );
        if (ev.type === "run_completed")
          return ev.stopReason === "cancelled" ? EXIT.cancelled : EXIT.completed;
        if (ev.type === "run_failed") return EXIT.failed;
      }
      try {
        await sleep(POLL_MS, undefined, { signal: stop.signal });
      } catch {
        renderer.settle();
        return EXIT.cancelled;
      }
    }
  } finally {
    process.off("SIGINT", onInterrupt);
  }
}
