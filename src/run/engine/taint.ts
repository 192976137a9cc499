import type { ToolCall } from "../../model/types.js";
import type { ActiveRun } from "../state/active-run.js";

/** Records that untrusted output entered the run (and every run above it). */
export function markTainted(run: ActiveRun, source: string, call?: ToolCall): void {
  for (let r: ActiveRun | undefined = run; r && !r.tainted; r = r.parent?.run) {
    r.tainted = source;
    r.events.emit({ type: "run_tainted", source, ...(call && { call }) });
  }
}
