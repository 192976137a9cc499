/**
 * `ask_human` for durable runs. The in-process `askHuman(channel)` waits inside the process that
 * drives the run, which under DBOS is one step of one worker: nobody elsewhere could answer, and
 * the wait would hold the worker. This version parks the run instead, like an approval: the
 * question is stored in the log (`approval_required` with the question in its details), the
 * workflow waits durably for `durableRuns.answer()`, and the answer becomes the call's result.
 */

import { askHuman, HumanChannel, type QuestionOption } from "../builtin-tools/ask-human.js";
import type { RunEvent } from "../contract/events.js";
import { InvalidToolArguments, ToolError } from "../errors.js";
import { jsonSchema } from "../tool/json-schema.js";
import { type Tool, tool } from "../tool/tool.js";

type AskArgs = { question: string; options?: QuestionOption[]; multi_select?: boolean };

/** What a parked question carries in its `approval_required` event's `details`. */
export type QuestionDetails = {
  kind: "ask_human";
  question: string;
  options: QuestionOption[];
  multiSelect: boolean;
};

/**
 * Answers given to runs this process drives, by run id then call id. The `drive` step puts the
 * run's answers here (they come from its workflow's checkpointed messages) for as long as it
 * drives the run; the tool reads them.
 */
const ANSWERS = new Map<string, ReadonlyMap<string, string>>();

/** While `drive` runs: the answers the tool may return for `runId`'s questions. */
export function provideAnswers(runId: string, answers: ReadonlyMap<string, string>): () => void {
  ANSWERS.set(runId, answers);
  return () => {
    if (ANSWERS.get(runId) === answers) ANSWERS.delete(runId);
  };
}

/**
 * The `ask_human` tool for agents driven by `durableRuns`: the run parks on the question and
 * goes on, on any worker, once `runs.answer(runId, callId, text)` is called from any process.
 * Same arguments as `askHuman(channel)`; the answer is the call's result.
 *
 * @example
 * const planner = new Agent({ name: "planner", model, tools: [durableAskHuman()] });
 * const runs = durableRuns({ store, agents: { planner }, databaseUrl: url });
 * // elsewhere, on a run_parked event whose call is a question:
 * await runs.answer(runId, call.id, "Kyoto");
 */
export function durableAskHuman(options: { name?: string } = {}): Tool<AskArgs> {
  // The in-process tool's name, description and argument schema, so the model sees the same tool.
  const base = askHuman(new HumanChannel(), options.name !== undefined ? { name: options.name } : {});
  const asker = tool({
    name: base.name,
    description: base.description,
    parameters: jsonSchema<AskArgs>(base.parameters),
    parallel: false,
    readOnly: true,
    describeCall: (args) => {
      const options = args.options ?? [];
      const details: QuestionDetails = {
        kind: "ask_human",
        question: args.question,
        options,
        multiSelect: options.length > 0 && args.multi_select === true,
      };
      return { description: args.question, details };
    },
    // Returning a stored answer again is harmless: a call cut off by a crash is simply re-run.
    idempotent: true,
    // Parks the run (with a store and no handler deciding): the park is the wait for the answer.
    needsApproval: true,
    execute: (args, ctx) => {
      const labels = (args.options ?? []).map((o) => o.label.trim());
      const duplicate = labels.find((label, i) => labels.indexOf(label) !== i);
      if (duplicate !== undefined) {
        throw new InvalidToolArguments(base.name, [
          { path: "options", message: `labels must be unique; "${duplicate}" repeats` },
        ]);
      }
      const answer = ANSWERS.get(ctx.runId)?.get(ctx.toolCallId);
      if (answer === undefined) {
        // Approved without an answer: an approval handler allowed it, or `Runner.decide` did.
        throw new ToolError(
          `nobody answered: ${base.name} runs only with an answer from durableRuns.answer()`,
          {
            hint: "Continue without the answer or ask differently.",
          },
        );
      }
      return answer;
    },
  });
  return asker;
}

/** The ids of the calls in `events` that asked a question of `durableAskHuman`. */
export function questionCallIds(events: readonly RunEvent[]): Set<string> {
  const ids = new Set<string>();
  for (const event of events) {
    if (event.type === "approval_required" && isQuestion(event.details)) ids.add(event.call.id);
  }
  return ids;
}

function isQuestion(details: unknown): details is QuestionDetails {
  return (
    typeof details === "object" && details !== null && (details as { kind?: unknown }).kind === "ask_human"
  );
}
