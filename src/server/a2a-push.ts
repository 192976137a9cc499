/**
 * A2A push notifications: a client registers a webhook for a task, and each time the task's
 * state changes (working, input-required, completed, failed, canceled) the server POSTs the task
 * to it, as A2A's `StreamResponse` JSON. The webhook URL comes from a caller, so every delivery
 * goes through the same address guard as `web_fetch`: loopback, private, link-local (cloud
 * metadata) and other internal addresses are refused, at connect time, unless allowed.
 */
import { randomUUID } from "node:crypto";
import type { Task, TaskPushNotificationConfig, TaskState } from "@a2a-js/sdk";
import { AddressPolicy } from "../builtin-tools/address-policy.js";
import { createGuardedAgents } from "../builtin-tools/guarded-agent.js";
import { openRequest } from "../builtin-tools/http-transport.js";
import type { A2aPushOptions } from "./a2a-push-options.js";
import { KEEPALIVE_MS } from "./http.js";
import type { RunLog } from "./run-log.js";

/** Webhooks one task may have at once. */
const MAX_CONFIGS_PER_TASK = 10;
/** Tasks whose webhooks are kept (an ended task's are forgotten first once there are more). */
const MAX_TASKS = 10_000;

/** What delivering needs from the A2A handler that registered a webhook. */
export type TaskSource = {
  /** The task as `tasks/get` would return it. */
  taskOf(log: RunLog): Task;
  /** The task's state now. */
  stateOf(log: RunLog): TaskState;
  /** The task as the wire carries it in a push (`StreamResponse` JSON). */
  toJson(task: Task): unknown;
  /** States after which nothing more happens. */
  terminal: ReadonlySet<TaskState>;
};

/**
 * The webhooks of one server's tasks, and the deliveries to them. Configurations live in this
 * process (a restart forgets them: clients register again); an ended task keeps its list until
 * 10,000 tasks have webhooks.
 *
 * @example
 * const push = new PushNotifications({ allowHosts: ["hooks.internal"] });
 * push.set(log, source, { tenant: "", id: "", taskId: log.runId, url, token: "t", authentication: undefined });
 */
export class PushNotifications {
  readonly #policy: AddressPolicy;
  readonly #timeoutMs: number;
  readonly #attempts: number;
  readonly #configs = new Map<string, Map<string, TaskPushNotificationConfig>>();
  readonly #watching = new Set<string>();

  constructor(options: A2aPushOptions = {}) {
    this.#policy = new AddressPolicy(options);
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#attempts = Math.max(1, options.attempts ?? 3);
  }

  /**
   * Registers (or replaces, by id) a webhook for the task of `log`; throws an `Error` whose
   * message says why a URL is refused.
   */
  set(log: RunLog, source: TaskSource, config: TaskPushNotificationConfig): TaskPushNotificationConfig {
    const url = checkedUrl(config.url);
    // An IP literal or a localhost name can be refused now; a name is checked when it resolves.
    this.#policy.checkHostname(url.hostname);
    const configs = this.#configs.get(log.runId) ?? new Map<string, TaskPushNotificationConfig>();
    const id = config.id || randomUUID();
    if (!configs.has(id) && configs.size >= MAX_CONFIGS_PER_TASK)
      throw new Error(`task ${log.runId} has ${MAX_CONFIGS_PER_TASK} webhooks already; delete one first`);
    const stored: TaskPushNotificationConfig = { ...config, id, taskId: log.runId, url: url.href };
    configs.set(id, stored);
    this.#configs.set(log.runId, configs);
    this.#trim();
    if (!this.#watching.has(log.runId)) {
      this.#watching.add(log.runId);
      void this.#watch(log, source).finally(() => this.#watching.delete(log.runId));
    }
    return stored;
  }

  get(taskId: string, id: string): TaskPushNotificationConfig | undefined {
    return this.#configs.get(taskId)?.get(id);
  }

  list(taskId: string): TaskPushNotificationConfig[] {
    return [...(this.#configs.get(taskId)?.values() ?? [])];
  }

  delete(taskId: string, id: string): boolean {
    const configs = this.#configs.get(taskId);
    const deleted = configs?.delete(id) ?? false;
    if (configs?.size === 0) this.#configs.delete(taskId);
    return deleted;
  }

  /** Follows the task and notifies its webhooks at each change of state, until it ends or has none. */
  async #watch(log: RunLog, source: TaskSource): Promise<void> {
    let last = source.stateOf(log);
    while (this.#configs.has(log.runId)) {
      const state = source.stateOf(log);
      if (state === last) {
        // Read and subscribed in one tick: a change in between cannot be missed.
        await log.changed(KEEPALIVE_MS);
        continue;
      }
      last = state;
      const body = JSON.stringify(source.toJson(source.taskOf(log)));
      await Promise.all(this.list(log.runId).map((config) => this.#deliver(config, body)));
      if (source.terminal.has(state)) break;
    }
  }

  /** Forgets the webhooks of the oldest tasks nobody follows any more, past `MAX_TASKS`. */
  #trim(): void {
    for (const taskId of this.#configs.keys()) {
      if (this.#configs.size <= MAX_TASKS) return;
      if (!this.#watching.has(taskId)) this.#configs.delete(taskId);
    }
  }

  /** POSTs `body` to one webhook, trying again after a failure; gives up quietly after the last attempt. */
  async #deliver(config: TaskPushNotificationConfig, body: string): Promise<void> {
    const headers: Record<string, string> = { "content-type": "application/a2a+json" };
    if (config.token) headers["x-a2a-notification-token"] = config.token;
    if (config.authentication?.scheme)
      headers.authorization = `${config.authentication.scheme} ${config.authentication.credentials}`;
    for (let attempt = 1; attempt <= this.#attempts; attempt++) {
      try {
        const status = await this.#post(new URL(config.url), headers, body);
        if (status >= 200 && status < 300) return;
      } catch {}
      if (attempt < this.#attempts) await new Promise((resolve) => setTimeout(resolve, 1_000 * attempt));
    }
  }

  /** One POST through the address guard; resolves with the status once the answer's head arrives. */
  #post(url: URL, headers: Record<string, string>, body: string): Promise<number> {
    const agents = createGuardedAgents({ policy: this.#policy, connectTimeoutMs: this.#timeoutMs });
    return new Promise<number>((resolve, reject) => {
      const request = openRequest(
        url,
        agents,
        "POST",
        { ...headers, "content-length": String(Buffer.byteLength(body)) },
        this.#timeoutMs,
      );
      request.once("timeout", () => request.destroy(new Error(`no answer in ${this.#timeoutMs} ms`)));
      request.once("error", reject);
      request.once("response", (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      request.end(body);
    }).finally(() => agents.destroy());
  }
}

function checkedUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`the webhook url ${JSON.stringify(text)} is not a URL`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw new Error(`the webhook url must be http(s) (got ${url.protocol})`);
  if (url.username || url.password)
    throw new Error("the webhook url must not carry credentials: use authentication instead");
  return url;
}
