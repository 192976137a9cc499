import { randomUUID } from "node:crypto";
import type {
  Message as A2aMessage,
  AgentCard,
  ListTaskPushNotificationConfigsResponse,
  ListTasksResponse,
  Part,
  StreamResponse,
  Task,
  TaskPushNotificationConfig,
  TaskState,
} from "@a2a-js/sdk";
import type { A2ARequestHandler } from "@a2a-js/sdk/server";
import { type ContentBlock, type Message, replay, UserError } from "../index.js";
import {
  artifact,
  breaksText,
  contentOf,
  dataOf,
  hasFiles,
  idOf,
  plain,
  segments,
  settled,
  stopReason,
  textOf,
  textPart,
} from "./a2a-parts.js";
import type { PushNotifications, TaskSource } from "./a2a-push.js";
import type { A2aSdk } from "./a2a-sdk.js";
import { listTasks } from "./a2a-task-list.js";
import { HttpError, KEEPALIVE_MS } from "./http.js";
import { callKey, type RunLog } from "./run-log.js";
import type { RunRegistry } from "./runs.js";
import { startInSession } from "./session-claim.js";

type Request<Method extends keyof A2ARequestHandler> = Parameters<A2ARequestHandler[Method]>[0];

/** Replies that approve a waiting call; anything else denies it (never approve on a guess). */
const YES = new Set(["yes", "y", "approve", "approved", "allow", "ok", "okay"]);

/**
 * The A2A request handler over the server's runs, for one caller: a task is a run (task id =
 * run id, context id = session id), so tasks come from the same store, belong to the same user
 * (another user's task is "not found") and are cancelled and decided the same way as through the
 * other endpoints. A run waiting for an approval or an `ask_human` answer is `input-required`;
 * the next message to the task answers it.
 */
export class A2aTasks implements A2ARequestHandler {
  readonly #sdk: A2aSdk;
  readonly #registry: RunRegistry;
  readonly #userId: string | undefined;
  readonly #agentKey: string;
  readonly #card: AgentCard;
  readonly #state: typeof TaskState;
  readonly #push: PushNotifications | undefined;

  constructor(
    sdk: A2aSdk,
    registry: RunRegistry,
    userId: string | undefined,
    agentKey: string,
    card: AgentCard,
    push?: PushNotifications,
  ) {
    this.#push = push;
    this.#sdk = sdk;
    this.#registry = registry;
    this.#userId = userId;
    this.#agentKey = agentKey;
    this.#card = card;
    this.#state = sdk.core.TaskState;
  }

  async getAgentCard(): Promise<AgentCard> {
    return this.#card;
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new this.#sdk.errors.ExtendedAgentCardNotConfiguredError("this agent has no extended card");
  }

  async sendMessage(params: Request<"sendMessage">): Promise<Task> {
    const log = await this.#accept(params);
    if (!params.configuration?.returnImmediately) await settled(log);
    return this.#task(log, params.configuration?.historyLength);
  }

  async *sendMessageStream(params: Request<"sendMessageStream">): AsyncGenerator<StreamResponse> {
    // A message to a task streams what follows it; a new task streams from its start.
    const taskId = params.message?.taskId;
    const from = taskId ? (await this.#find(taskId)).all.length : 0;
    const log = await this.#accept(params);
    yield* this.#follow(log, from);
  }

  async getTask(params: Request<"getTask">): Promise<Task> {
    return this.#task(await this.#find(params.id), params.historyLength);
  }

  async cancelTask(params: Request<"cancelTask">): Promise<Task> {
    const log = await this.#find(params.id);
    if (log.finished)
      throw new this.#sdk.errors.TaskNotCancelableError(`task ${params.id} has already ended`);
    try {
      await this.#registry.cancel(log);
    } catch (error) {
      if (error instanceof HttpError)
        throw new this.#sdk.errors.TaskNotCancelableError(`task ${params.id}: ${error.message}`);
      throw error;
    }
    const until = Date.now() + 5_000;
    while (!log.finished && Date.now() < until) await log.changed(until - Date.now());
    return this.#task(log);
  }

  async *resubscribe(params: Request<"resubscribe">): AsyncGenerator<StreamResponse> {
    const log = await this.#find(params.id);
    yield* this.#follow(log, log.all.length);
  }

  /** The caller's tasks, newest first (see `listTasks` for filters and paging). */
  listTasks(params: Request<"listTasks">): Promise<ListTasksResponse> {
    return listTasks(
      {
        registry: this.#registry,
        userId: this.#userId,
        taskOf: (log, historyLength) => this.#task(log, historyLength),
        malformed: (message) => new this.#sdk.errors.RequestMalformedError(message),
      },
      params,
    );
  }

  /** Registers a webhook the task's changes of state are POSTed to (see `PushNotifications`). */
  async createTaskPushNotificationConfig(
    params: Request<"createTaskPushNotificationConfig">,
  ): Promise<TaskPushNotificationConfig> {
    const push = this.#pushes();
    const log = await this.#find(params.taskId);
    try {
      return push.set(log, this.#source, params);
    } catch (error) {
      throw new this.#sdk.errors.RequestMalformedError((error as Error).message);
    }
  }

  async getTaskPushNotificationConfig(
    params: Request<"getTaskPushNotificationConfig">,
  ): Promise<TaskPushNotificationConfig> {
    const push = this.#pushes();
    const log = await this.#find(params.taskId);
    const config = push.get(log.runId, params.id);
    if (!config)
      throw new this.#sdk.errors.RequestMalformedError(`task ${log.runId} has no webhook ${params.id}`);
    return config;
  }

  async listTaskPushNotificationConfigs(
    params: Request<"listTaskPushNotificationConfigs">,
  ): Promise<ListTaskPushNotificationConfigsResponse> {
    const push = this.#pushes();
    const log = await this.#find(params.taskId);
    return { configs: push.list(log.runId), nextPageToken: "" };
  }

  async deleteTaskPushNotificationConfig(params: Request<"deleteTaskPushNotificationConfig">): Promise<void> {
    const push = this.#pushes();
    const log = await this.#find(params.taskId);
    if (!push.delete(log.runId, params.id))
      throw new this.#sdk.errors.RequestMalformedError(`task ${log.runId} has no webhook ${params.id}`);
  }

  #pushes(): PushNotifications {
    if (this.#push) return this.#push;
    throw new this.#sdk.errors.PushNotificationNotSupportedError(
      "push notifications are off: the server enables them with createServer({ a2a: { push: true } })",
    );
  }

  /** What a webhook's deliveries read: the task as `tasks/get` returns it, as the wire carries it. */
  get #source(): TaskSource {
    const S = this.#state;
    return {
      taskOf: (log) => this.#task(log),
      stateOf: (log) => this.#stateOf(log),
      toJson: (task) => this.#sdk.core.StreamResponse.toJSON({ payload: { $case: "task", value: task } }),
      terminal: new Set([
        S.TASK_STATE_COMPLETED,
        S.TASK_STATE_FAILED,
        S.TASK_STATE_CANCELED,
        S.TASK_STATE_REJECTED,
      ]),
    };
  }

  async #find(taskId: string): Promise<RunLog> {
    const log = taskId ? await this.#registry.get(taskId, this.#userId) : undefined;
    if (!log) throw new this.#sdk.errors.TaskNotFoundError(`no task ${taskId}`);
    return log;
  }

  /** A message to a task answers what it waits for (or steers it); without a task it starts one. */
  async #accept(params: Request<"sendMessage">): Promise<RunLog> {
    const message = params.message;
    if (!message) throw new this.#sdk.errors.RequestMalformedError("the request has no message");
    const text = textOf(message.parts);
    if (message.taskId) {
      const log = await this.#find(message.taskId);
      await this.#answer(log, message, text);
      return log;
    }
    const content = this.#malformedIfRefused(() => contentOf(message.parts));
    if (content === "" || content.length === 0)
      throw new this.#sdk.errors.RequestMalformedError("the message has no text or file part");
    const contextId = message.contextId || `ctx_${randomUUID()}`;
    const sessions = this.#registry.sessions;
    if ((await sessions.access(contextId, this.#userId)) === "theirs")
      throw new this.#sdk.errors.TaskNotFoundError(`no context ${contextId}`);
    const previous = await this.#registry.latestOfSession(contextId, this.#userId);
    if (previous && !previous.finished && previous.status !== "detached") {
      // A new task in a context supersedes the one still going there.
      await this.#registry.cancel(previous, "superseded by a new message").catch(() => {});
      const until = Date.now() + 5_000;
      while (!previous.finished && Date.now() < until) await previous.changed(until - Date.now());
    }
    let input: string | ContentBlock[] | Message[] = content;
    if (!this.#registry.store) input = [...(previous?.messages ?? []), { role: "user", content }];
    const started = input;
    // As `POST /api/runs`: the task is handed out once its start is stored. A store that did not
    // take it is a failure of the server (-32603, told to onError); a refusal is the caller's.
    // The context becomes the caller's with this task, not with a message refused before it.
    return startInSession(
      this.#registry,
      contextId,
      this.#userId,
      () => new this.#sdk.errors.TaskNotFoundError(`no context ${contextId}`),
      () =>
        this.#malformedIfRefused(() =>
          this.#registry.start(this.#agentKey, started, { userId: this.#userId, sessionId: contextId }),
        ),
    ).catch((error: unknown) => {
      if (error instanceof HttpError && error.status === 409)
        throw new this.#sdk.errors.UnsupportedOperationError(error.message);
      throw error;
    });
  }

  /**
   * What `make` refuses — a file that is no attachment (a 400), an input the run refuses (a
   * `UserError`: over `maxAttachmentBytes`, a malformed part) — as A2A's malformed request.
   */
  #malformedIfRefused<T>(make: () => T): T {
    try {
      return make();
    } catch (error) {
      if ((error instanceof HttpError && error.status === 400) || error instanceof UserError)
        throw new this.#sdk.errors.RequestMalformedError(error.message);
      throw error;
    }
  }

  async #answer(log: RunLog, message: A2aMessage, text: string): Promise<void> {
    if (log.finished)
      throw new this.#sdk.errors.UnsupportedOperationError(
        `task ${log.runId} has ended; send a new message in its context instead`,
      );
    if (hasFiles(message.parts))
      throw new this.#sdk.errors.UnsupportedOperationError(
        `task ${log.runId} takes text while it runs or waits; send files in a new message in its context`,
      );
    const data = dataOf(message.parts);
    const question = [...log.questions.values()][0];
    const waiting = log.status === "parked" ? log.parked : [...log.asking.values()];
    if (log.blocked && question) {
      const id = question.runId === log.runId ? question.call.id : callKey(question.runId, question.call.id);
      const answer = typeof data?.answer === "string" ? data.answer : text;
      this.#registry.answer(log, id, answer);
      return;
    }
    if (log.blocked && waiting.length > 0) {
      const wanted = typeof data?.callId === "string" ? data.callId : undefined;
      const entry = waiting.find((w) => wanted === undefined || idOf(log, w) === wanted);
      if (!entry)
        throw new this.#sdk.errors.RequestMalformedError(`task ${log.runId} has no call ${wanted} waiting`);
      const approved =
        typeof data?.approved === "boolean"
          ? data.approved
          : YES.has(text.toLowerCase().replace(/[.!]+$/, ""));
      const reason =
        typeof data?.reason === "string" ? data.reason : approved || text === "" ? undefined : text;
      await this.#registry.decide(log, idOf(log, entry), approved, reason);
      return;
    }
    if (text === "") throw new this.#sdk.errors.RequestMalformedError("the message has no text part");
    try {
      this.#registry.inject(log, text);
    } catch (error) {
      if (error instanceof HttpError) throw new this.#sdk.errors.UnsupportedOperationError(error.message);
      throw error;
    }
  }

  /** The task's events from `from` (an index into the run's events), until it ends or waits for input. */
  async *#follow(log: RunLog, from: number): AsyncGenerator<StreamResponse> {
    const { taskId, contextId } = { taskId: log.runId, contextId: log.sessionId ?? "" };
    yield { payload: { $case: "task", value: this.#task(log, 0, this.#state.TASK_STATE_WORKING) } };
    let cursor = from;
    let segment: { id: string; started: boolean } | undefined;
    for (;;) {
      if (cursor < log.all.length) {
        const event = log.all[cursor++]!;
        if (event.runId !== log.runId) continue;
        if (event.type === "text_delta" && event.delta !== "") {
          const append = segment !== undefined;
          segment ??= { id: `${log.runId}-${event.seq}`, started: true };
          yield {
            payload: {
              $case: "artifactUpdate",
              value: {
                taskId,
                contextId,
                artifact: artifact(segment.id, event.delta),
                append,
                lastChunk: false,
                metadata: undefined,
              },
            },
          };
        } else if (breaksText(event.type)) segment = undefined;
        continue;
      }
      if (log.blocked || log.finished || log.status === "detached") {
        const status = this.#task(log, 0).status;
        yield {
          payload: {
            $case: "statusUpdate",
            value: { taskId, contextId, status, metadata: undefined },
          },
        };
        return;
      }
      await log.changed(KEEPALIVE_MS);
    }
  }

  /** A run as an A2A task: its state, what it waits for, its text as artifacts, its conversation. */
  #task(log: RunLog, historyLength?: number, state?: TaskState): Task {
    const transcript = log.messages ?? replay(log.own).messages;
    const history = transcript.flatMap((m, i) => this.#message(m, `${log.runId}-m${i}`, log)).filter(Boolean);
    return {
      id: log.runId,
      contextId: log.sessionId ?? "",
      status: {
        state: state ?? this.#stateOf(log),
        message: this.#statusMessage(log),
        timestamp: new Date(log.touchedAt).toISOString(),
      },
      artifacts: segments(log).map((s) => artifact(s.id, s.text)),
      history:
        historyLength === undefined ? history : historyLength === 0 ? [] : history.slice(-historyLength),
      metadata: { quiver: { status: log.status } },
    };
  }

  #stateOf(log: RunLog): TaskState {
    const S = this.#state;
    if (log.blocked) return S.TASK_STATE_INPUT_REQUIRED;
    if (log.status === "failed") return S.TASK_STATE_FAILED;
    if (log.status === "completed")
      return stopReason(log) === "cancelled" ? S.TASK_STATE_CANCELED : S.TASK_STATE_COMPLETED;
    return S.TASK_STATE_WORKING;
  }

  /** What the agent says with its state: what it waits for, or why it failed. */
  #statusMessage(log: RunLog): A2aMessage | undefined {
    let text: string | undefined;
    let data: unknown;
    const question = [...log.questions.values()][0];
    const waiting = log.status === "parked" ? log.parked : [...log.asking.values()];
    if (log.blocked && question) {
      const { options } = question.question;
      text =
        question.question.question +
        (options.length ? `\nOptions: ${options.map((o) => o.label).join(", ")}` : "");
      data = { kind: "question", callId: idOf(log, question), question: question.question.question, options };
    } else if (log.blocked && waiting[0]) {
      const entry = waiting[0];
      text = `Approve ${entry.call.name} ${JSON.stringify(entry.call.args ?? {})}? Reply "yes" to approve; any other reply denies it and is given to the agent as the reason.`;
      data = {
        kind: "approval",
        callId: idOf(log, entry),
        name: entry.call.name,
        args: entry.call.args ?? {},
      };
    } else if (log.status === "failed") {
      const failed = log.own.findLast((e) => e.type === "run_failed");
      text = failed?.type === "run_failed" ? `${failed.name}: ${failed.message}` : "the run failed";
    }
    if (text === undefined) return undefined;
    const parts: Part[] = [textPart(text)];
    if (data !== undefined)
      parts.push({
        content: { $case: "data", value: { quiver: data } },
        metadata: undefined,
        filename: "",
        mediaType: "application/json",
      });
    return {
      messageId: `${log.runId}-status-${log.lastSeq}`,
      contextId: log.sessionId ?? "",
      taskId: log.runId,
      role: this.#sdk.core.Role.ROLE_AGENT,
      parts,
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    };
  }

  #message(message: Message, id: string, log: RunLog): A2aMessage[] {
    if (message.role !== "user" && message.role !== "assistant") return [];
    const text = plain(message.content);
    if (text === "") return [];
    return [
      {
        messageId: id,
        contextId: log.sessionId ?? "",
        taskId: log.runId,
        role: message.role === "user" ? this.#sdk.core.Role.ROLE_USER : this.#sdk.core.Role.ROLE_AGENT,
        parts: [textPart(text)],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
    ];
  }
}
