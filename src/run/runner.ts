import { ProviderError, UserError } from "../errors.js";
import { ActiveRun, type RunOptions } from "./active-run.js";
import type { Agent } from "./agent.js";
import { EventQueue } from "./event-queue.js";
import { RunHandle } from "./handle.js";
import { type RunInput, runLoop } from "./loop.js";
import type { RunResult } from "./result.js";

/**
 * Starts runs. `stream()` returns a handle at once; `run()` is `stream()` drained.
 *
 * @example
 * const result = await Runner.run(agent, "What is 2 + 2?", { deps: { db } });
 * console.log(result.output, result.stopReason);
 */
export const Runner = {
  /**
   * Runs an agent to the end and returns its result. Rejects on `UserError`, on a
   * `ProviderError` after retries, or an internal fault; every other stop resolves.
   * Nobody can answer an approval here: calls that would ask are denied unless the agent's
   * `approvalHandler` decides them.
   */
  async run<Deps, Output>(
    agent: Agent<Deps, Output>,
    input: RunInput,
    options: RunOptions<Deps> = {},
  ): Promise<RunResult<Output>> {
    const handle = startRun(agent, input, options, false);
    const events = handle[Symbol.asyncIterator]();
    try {
      while (!(await events.next()).done) {
        // Drained as they come: nothing is buffered.
      }
    } catch {
      // The same error rejects result() below.
    }
    return handle.result();
  },

  /**
   * Starts a run and returns its handle before any event is emitted; the run begins on the
   * next tick and the handle buffers events until they are read.
   */
  stream<Deps, Output>(
    agent: Agent<Deps, Output>,
    input: RunInput,
    options: RunOptions<Deps> = {},
  ): RunHandle<Output> {
    return startRun(agent, input, options, true);
  },
};

function startRun<Deps, Output>(
  agent: Agent<Deps, Output>,
  input: RunInput,
  options: RunOptions<Deps>,
  hasChannel: boolean,
): RunHandle<Output> {
  const queue = new EventQueue();
  const run = new ActiveRun(agent, options, queue);
  run.hasChannel = hasChannel;
  const result = new Promise<RunResult<Output>>((resolve, reject) => {
    setImmediate(() => {
      runLoop(run, input).then(
        (value) => {
          queue.end();
          resolve(value as RunResult<Output>);
        },
        (error: unknown) => {
          const failure = error instanceof Error ? error : new Error(String(error));
          run.emit({
            type: "run_failed",
            name: failure.name,
            message: failure.message,
            kind: failureKind(failure),
          });
          queue.end(failure, true);
          reject(failure);
        },
      );
    });
  });
  return new RunHandle<Output>(run, queue, result);
}

function failureKind(error: Error): string {
  if (error instanceof UserError) return "user_error";
  if (error instanceof ProviderError) return "provider_error";
  if (error.name === "OutputValidationError") return "output_invalid";
  return "internal";
}
