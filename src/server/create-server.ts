import { randomUUID } from "node:crypto";
import { Hono } from "hono";
import type { HumanChannel } from "../builtin-tools/ask-human.js";
import { type Agent, type RunInput, type RunOptions, UserError } from "../index.js";
import type { RunStore } from "../store/types.js";
import { type A2aOptions, mountA2a } from "./a2a.js";
import { refusingBadInput } from "./attachments.js";
import { authenticate, type Caller, type ServerAuth } from "./auth.js";
import { postChat, resumeChat } from "./chat.js";
import { directTarget } from "./direct-stream.js";
import {
  errorResponse,
  HttpError,
  isJson,
  MAX_MESSAGE_BODY_BYTES,
  notFound,
  optionalString,
  readJsonBody,
  readJsonObject,
  refuseNonJson,
  stringField,
} from "./http.js";
import {
  eventStream,
  nativeInput,
  refuseOversizedText,
  resumePoint,
  runSummary,
  wantsChildren,
  wantsOwnInput,
} from "./native.js";
import { allowedOriginSet, checkOrigin } from "./origin.js";
import { mountedAt, mountPage, servePage } from "./page.js";
import { RunRegistry } from "./runs.js";
import { internalError, type ServerErrorHandler } from "./server-errors.js";
import { startInSession } from "./session-claim.js";
import { mountSessions } from "./sessions-api.js";

/** Options every run the server starts gets (besides its store, session and user). */
export type ServerRunOptions = Omit<RunOptions<any>, "store" | "sessionId" | "userId" | "runId" | "signal">;

export interface ServerOptions {
  /** The agent to serve. Give this or `agents`. */
  agent?: Agent<any, any>;
  /** Several agents by name; a request picks one with `agent` (default: the first). */
  agents?: Record<string, Agent<any, any>>;
  /**
   * Keep runs here: approvals park (and survive a restart), clients replay from the log, and a
   * chat's history is read back from its session. Without it runs live in memory.
   */
  store?: RunStore;
  /** A bearer token, or `(request) => userId | null`. Required unless the server only listens on loopback. */
  auth?: ServerAuth;
  /**
   * Origins besides the server's own whose pages may send it state-changing requests (POST,
   * PUT, PATCH, DELETE), e.g. `["https://app.example"]` when a proxy in front changes the Host.
   * A browser request from any other origin, or from `Origin: null`, is refused with 403.
   */
  allowedOrigins?: readonly string[];
  /** The channel of the agent's `askHuman(channel)` tool: its questions are answered through the server. */
  human?: HumanChannel;
  /** Run options for every run (dependencies, budgets…), or a function of who starts it. */
  runOptions?:
    | ServerRunOptions
    | ((ctx: { userId: string | undefined; sessionId: string | undefined }) => ServerRunOptions);
  /** Finished runs kept in memory for replay. Default 200 (with a store, evicted ones reload from it). */
  retainFinishedRuns?: number;
  /**
   * The most memory finished runs kept for replay may hold together, in bytes (their events,
   * attachments included, estimated). Default 64 MiB; the least recently used go first. With a
   * store, evicted ones reload from it; without one, the most recent run stays whatever its size.
   */
  retainFinishedBytes?: number;
  /**
   * The most runs one user (a user id from `auth`) may have running at once; starting another is
   * answered `429 too_many_runs`. Default 20. Without per-user auth there is one caller, not counted.
   */
  maxRunningRunsPerUser?: number;
  /**
   * Serve the default agent over A2A: its card at `/.well-known/agent-card.json`, JSON-RPC at
   * `POST /a2a`. Needs the optional package `@a2a-js/sdk`.
   */
  a2a?: boolean | A2aOptions;
  /**
   * Told of every request the server answers with a 5xx: a store or a route that threw (500), an
   * `auth` function that threw (503). The client gets a fixed message and `requestId`, never the
   * error's text; here is the error itself, for your logger. Default: one `console.error` line.
   */
  onError?: ServerErrorHandler;
}

/** How long a shutting-down server waits for its runs to end. */
export type CloseOptions = {
  /** Default 10,000 ms; `Infinity` waits as long as the runs take. */
  timeoutMs?: number;
};

/** What finished runs kept for replay may hold in memory together, unless told otherwise: 64 MiB. */
const DEFAULT_RETAIN_FINISHED_BYTES = 64 * 1024 * 1024;

/** How long `close()` waits for cancelled runs to store their end, unless told otherwise. */
export const CLOSE_TIMEOUT_MS = 10_000;

/** What `createServer` returns: a Web-standard handler plus what `serve()` needs. */
export interface QuiverServer {
  /** Handles one request (Node, Next.js route handlers, Bun, Deno, Workers). */
  fetch(request: Request, env?: unknown): Promise<Response>;
  /** The underlying Hono app, to mount under a prefix or add routes. */
  readonly app: Hono;
  /** True when requests are authenticated (required to listen beyond loopback). */
  readonly hasAuth: boolean;
  /**
   * Shuts down: new runs are refused (503), the runs this server drives are cancelled, and the
   * promise resolves once each has ended and stored its end (its stored log stays), or after
   * `timeoutMs` (default 10,000; `Infinity` waits as long as it takes). Clients following a run
   * get its last events (`run_completed`, stop reason `cancelled`) and then the end of their stream.
   */
  close(reason?: string, options?: CloseOptions): Promise<void>;
}

/**
 * The bundled server: the AI SDK UI message stream at `POST /api/chat` (stock `useChat` works),
 * the native event stream and control endpoints under `/api/runs/:runId`, and a chat page at `/`.
 *
 * @example
 * import { createServer, serve } from "quiver-agents/server";
 * const server = createServer({ agent });
 * const { url } = await serve(server, { port: 3000 });
 * console.log(`chat at ${url}`);
 */
export function createServer(options: ServerOptions): QuiverServer {
  const agents = new Map<string, Agent<any, any>>();
  if (options.agent) agents.set(options.agent.name, options.agent);
  for (const [name, agent] of Object.entries(options.agents ?? {})) agents.set(name, agent);
  if (agents.size === 0) throw new UserError("createServer needs { agent } or { agents: { name: agent } }");
  const defaultAgent = [...agents.keys()][0]!;
  const runOptions = options.runOptions;
  const registry = new RunRegistry({
    agents,
    retainFinishedRuns: options.retainFinishedRuns ?? 200,
    retainFinishedBytes: options.retainFinishedBytes ?? DEFAULT_RETAIN_FINISHED_BYTES,
    maxRunningRunsPerUser: options.maxRunningRunsPerUser ?? 20,
    ...(options.store && { store: options.store }),
    ...(options.human && { human: options.human }),
    ...(runOptions && {
      runOptions: (ctx) =>
        (typeof runOptions === "function" ? runOptions(ctx) : runOptions) as Record<string, unknown>,
    }),
  });
  const auth = options.auth;
  const allowedOrigins = allowedOriginSet(options.allowedOrigins);
  const app = new Hono();

  const caller = (request: Request, env: unknown): Promise<Caller> =>
    authenticate(request, auth, remoteAddressOf(env));
  // The page holds no secrets: behind auth it is public and asks for the token itself; without
  // auth it is loopback's only, but another site may link to it (it cannot be framed).
  const pageGuard = async (request: Request, env: unknown) => {
    if (auth === undefined) await authenticate(request, auth, remoteAddressOf(env), "page");
  };

  app.onError((error, c) => {
    if (error instanceof HttpError) {
      const response = errorResponse(error.status, error.code, error.message);
      if (error.status === 401) response.headers.set("www-authenticate", 'Bearer realm="quiver"');
      return response;
    }
    return internalError(error, c.req.raw, options.onError);
  });
  app.notFound(() => errorResponse(404, "not_found", "no such route"));

  // Mounted under a prefix (`parent.route("/agent", app)`), a path no route takes gets the
  // parent's 404, plain text: make it the documented JSON error. `/agent/` is the page too.
  app.use(async (c, next) => {
    await next();
    if (c.res.status !== 404 || isJson(c.res.headers.get("content-type") ?? "")) return;
    const prefix = mountedAt(c.req.routePath);
    if (prefix !== "" && c.req.method === "GET" && new URL(c.req.url).pathname === `${prefix}/`)
      c.res = await servePage(c.req.raw, c.env, pageGuard);
    else c.res = errorResponse(404, "not_found", "no such route");
  });

  // Before any route (and routes added to `app` later): whatever the auth, since a browser sends
  // cookies and other ambient credentials along with a request a page elsewhere makes it send.
  app.use(async (c, next) => {
    checkOrigin(c.req.raw, allowedOrigins);
    await next();
  });

  mountPage(app, pageGuard);
  mountSessions(app, registry, caller);

  // For a load balancer or an orchestrator's probe: no auth (it says nothing but "up"), and 503
  // once shutting down, so traffic moves elsewhere while the runs end.
  app.get("/api/health", () =>
    Response.json(registry.closing ? { status: "shutting_down" } : { status: "ok" }, {
      status: registry.closing ? 503 : 200,
      headers: { "cache-control": "no-store" },
    }),
  );

  app.get("/api/agents", async (c) => {
    await caller(c.req.raw, c.env);
    return c.json({ agents: registry.agentKeys, default: defaultAgent });
  });

  app.post("/api/chat", async (c) => {
    const { userId } = await caller(c.req.raw, c.env);
    return postChat(c.req.raw, registry, userId, defaultAgent);
  });

  app.post("/api/ag-ui", async (c) => {
    const { userId } = await caller(c.req.raw, c.env);
    return (await import("./ag-ui.js")).postAgUi(c.req.raw, registry, userId, defaultAgent);
  });

  app.get("/api/chat/:chatId/stream", async (c) => {
    const { userId } = await caller(c.req.raw, c.env);
    return resumeChat(c.req.param("chatId"), registry, userId);
  });

  app.post("/api/runs", async (c) => {
    const { userId } = await caller(c.req.raw, c.env);
    const { body, bytes } = await readJsonBody(c.req.raw, MAX_MESSAGE_BODY_BYTES);
    refuseOversizedText(body, bytes);
    const message = nativeInput(body);
    const given = optionalString(body, "sessionId");
    const sessionId = given ?? `session_${randomUUID()}`;
    const agentKey = optionalString(body, "agent") ?? defaultAgent;
    if (given !== undefined && (await registry.sessions.access(sessionId, userId)) === "theirs")
      throw notFound(`no session ${sessionId}`);
    let input: RunInput = message;
    if (!registry.store) {
      const previous = await registry.latestOfSession(sessionId, userId);
      if (previous && !previous.finished && previous.status !== "detached")
        throw new HttpError(
          409,
          "busy",
          `session ${sessionId} has a run in progress (${previous.runId}); cancel it or inject into it`,
        );
      input = [...(previous?.messages ?? []), { role: "user", content: message }];
    }
    // A session id made here is nobody's: the store need not be asked whose it is, so a store that
    // is restarting is waited for by the run's own start (storeWaitMs), not refused at once.
    const log = await startInSession(
      registry,
      sessionId,
      userId,
      () => notFound(`no session ${sessionId}`),
      () => refusingBadInput(() => registry.start(agentKey, input, { userId, sessionId })),
      given === undefined,
    );
    return c.json({ runId: log.runId, sessionId }, 201);
  });

  app.get("/api/runs/:runId", async (c) => {
    const { userId } = await caller(c.req.raw, c.env);
    return c.json(runSummary(await registry.require(c.req.param("runId"), userId)));
  });

  app.get("/api/runs/:runId/events", async (c) => {
    const { userId } = await caller(c.req.raw, c.env);
    const log = await registry.require(c.req.param("runId"), userId);
    const request = c.req.raw;
    return eventStream(
      log,
      resumePoint(request),
      wantsChildren(request),
      directTarget(c.env),
      wantsOwnInput(request),
    );
  });

  app.post("/api/runs/:runId/approve", async (c) => {
    const { userId } = await caller(c.req.raw, c.env);
    const log = await registry.require(c.req.param("runId"), userId);
    const body = await readJsonObject(c.req.raw);
    const callId = stringField(body, "callId");
    if (typeof body.approved !== "boolean")
      throw new HttpError(400, "bad_request", '"approved" must be true or false');
    await registry.decide(log, callId, body.approved, optionalString(body, "reason"));
    return c.json({ ok: true }, 202);
  });

  app.post("/api/runs/:runId/answer", async (c) => {
    const { userId } = await caller(c.req.raw, c.env);
    const log = await registry.require(c.req.param("runId"), userId);
    const body = await readJsonObject(c.req.raw);
    const callId = stringField(body, "callId");
    if (typeof body.answer !== "string") throw new HttpError(400, "bad_request", '"answer" must be a string');
    registry.answer(log, callId, body.answer);
    return c.json({ ok: true }, 202);
  });

  app.post("/api/runs/:runId/inject", async (c) => {
    const { userId } = await caller(c.req.raw, c.env);
    const log = await registry.require(c.req.param("runId"), userId);
    const body = await readJsonObject(c.req.raw);
    registry.inject(log, stringField(body, "message"));
    return c.json({ ok: true }, 202);
  });

  app.post("/api/runs/:runId/cancel", async (c) => {
    const { userId } = await caller(c.req.raw, c.env);
    refuseNonJson(c.req.raw);
    const log = await registry.require(c.req.param("runId"), userId);
    await registry.cancel(log);
    return c.json({ ok: true }, 202);
  });

  if (options.a2a)
    mountA2a(app, {
      registry,
      agent: agents.get(defaultAgent)!,
      agentKey: defaultAgent,
      caller,
      auth: auth === undefined ? "none" : typeof auth === "string" ? "token" : "function",
      options: options.a2a === true ? {} : options.a2a,
      onError: options.onError,
    });

  return {
    app,
    hasAuth: auth !== undefined,
    fetch: async (request, env) => app.fetch(request, env),
    close: async (reason = "the server is shutting down", closing = {}) =>
      registry.closeAll(reason, closeTimeout(closing.timeoutMs)),
  };
}

/** A valid wait for `close()`: a non-negative number of ms, or Infinity. */
export function closeTimeout(timeoutMs: number | undefined): number {
  if (timeoutMs === undefined) return CLOSE_TIMEOUT_MS;
  if (!(timeoutMs >= 0))
    throw new UserError(`timeoutMs must be a number of ms (0 or more), got ${timeoutMs}`);
  return timeoutMs;
}

/** The peer's address when the runtime tells it (@hono/node-server passes the Node request). */
function remoteAddressOf(env: unknown): string | undefined {
  const incoming = (env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming;
  return incoming?.socket?.remoteAddress;
}
