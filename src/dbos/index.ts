/**
 * `quiver-agents/dbos`: runs across processes and machines on DBOS Transact
 * (`npm install @dbos-inc/dbos-sdk@5 pg@8`), over the same PostgreSQL as `PostgresStore`.
 * See docs/scale-out.md.
 */
export { durableAskHuman, type QuestionDetails } from "./ask-human.js";
export {
  DurableRuns,
  type DurableRunsOptions,
  durableRuns,
  QUEUE_NAME,
  type RunQueueOptions,
  type Worker,
} from "./durable-runs.js";
export type { DurableRunsPool, ListeningClient, PostgresNotification } from "./pool.js";
export type { Reaper, ReaperOptions } from "./reaper.js";
export type { TailOptions } from "./tail.js";
export {
  ANSWER_TOPIC,
  type AnswerMessage,
  DECISION_TOPIC,
  type DecisionMessage,
  type DurableRunRequest,
  type DurableRunResult,
  WORKFLOW_NAME,
} from "./workflow.js";
