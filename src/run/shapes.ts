import { Stopper } from "../abort.js";
import type { ToolCall } from "../model/types.js";
import { Tool } from "../tool/tool.js";
import type { Agent } from "./config/agent.js";
import { attemptShapes } from "./engine/attempts.js";
import { CallContext } from "./engine/call-context.js";
import { enterRunContext, leaveRunContext } from "./engine/call-scope.js";
import { turnShapes } from "./engine/executor.js";
import { turnRequest } from "./engine/model-request.js";
import { turnReaderShape } from "./engine/model-turn.js";
import { Toolset } from "./engine/toolset.js";
import { ActiveRun } from "./state/active-run.js";
import { EventQueue } from "./state/event-queue.js";
import { transcriptShapes } from "./state/transcript-objects.js";

/**
 * One idle object of each shape a run makes per run or per call, kept for the life of the
 * process. V8 holds the hidden class (map) of such objects only while one of them is alive, and
 * optimized code that relied on a map is thrown away when a full GC finds it dead: after a
 * quiet spell (every run over, then a major GC) the next runs would start in the interpreter
 * and re-learn every shape (measured: 3–5× slower per call for thousands of calls). These few
 * objects (a run with no agent, events or tools, a call context, a promise made while the
 * call context is tracked, a dispatched abort event) keep those maps alive.
 */
let kept: unknown[] | undefined;

/** Makes the objects once, on the first run. */
export function keepRunShapes(): void {
  if (kept) return;
  kept = [];
  const agent = { name: "shape", config: {} } as unknown as Agent<any, any>;
  const run = new ActiveRun(agent, { tracer: false }, { queue: new EventQueue() });
  const call: ToolCall = { id: "shape", name: "shape", args: {} };
  const context = new CallContext(run, run.control.stopper, call, 1, 1);
  // A promise made while the call context is tracked carries async-id fields (and the store):
  // its map is the one every promise of a run that made calls has.
  let tracked: Promise<void> | undefined;
  enterRunContext(
    context,
    () => {
      tracked = new Promise<void>(() => {});
      return Promise.resolve();
    },
    undefined,
  );
  leaveRunContext(false);
  // The objects of a turn's calls: the tool's own class and what it is called with do not matter.
  const sample = new Tool({ name: "shape", parameters: { type: "object", properties: {} } });
  const toolset = new Toolset([sample], run.control.stopper);
  kept.push(
    run,
    context,
    new Stopper(),
    tracked,
    ...turnShapes(run, toolset, sample),
    ...attemptShapes(run, sample, call),
    ...transcriptShapes(),
    turnRequest([], [], {}, run.control.stopper, undefined),
    turnRequest([], [], {}, run.control.stopper, ""),
    turnReaderShape(run, {
      name: "shape",
      stream: () => ({
        [Symbol.asyncIterator]: () => ({ next: () => Promise.resolve({ done: true, value: undefined }) }),
      }),
    }),
  );
  // The event an AbortSignal dispatches when it aborts (the toolset's lifetime does at every
  // run's end): Node's Event class has fields too, and its code deopts like ours.
  const controller = new AbortController();
  controller.signal.addEventListener("abort", (event) => kept?.push(event), { once: true });
  controller.abort();
}
