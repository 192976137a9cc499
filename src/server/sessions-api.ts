import type { Hono } from "hono";
import type { Message, RunEvent } from "../index.js";
import type { Caller } from "./auth.js";
import { HttpError, notFound, readJsonObject } from "./http.js";
import type { RunLog } from "./run-log.js";
import type { RunRegistry } from "./runs.js";

/** Where a chat's own title is kept: an artifact of the session's first run (cleared with it). */
export const TITLE_ARTIFACT = "quiver:session-title";
/** Titles are one line of at most this many characters. */
export const MAX_TITLE_LENGTH = 120;
/** Chats listed at most (the newest). */
const LISTED = 100;
/** Sessions whose first run this process remembers. */
const REMEMBERED = 10_000;

/** A chat as the page's list shows it. */
export type ChatSummary = {
  sessionId: string;
  /** The title given with `PATCH /api/sessions/:id`, else the start of the first message. */
  title: string;
  /** True when a person gave the title. */
  titled: boolean;
  startedAt: number;
  updatedAt: number;
};

type FirstRun = { runId: string; message: string };
type Found = { sessionId: string; startedAt: number; updatedAt: number };

/**
 * The caller's chats (sessions): listed newest first, opened as their runs in order, renamed.
 * Every answer goes through the session ownership check, so another user's chat is never listed
 * and is a 404 by id, on every store. With a store, the list is the store's sessions; without
 * one, the runs this process holds in memory (the last `retainFinishedRuns`, and every live one).
 *
 * A title a person gives is stored with the session (an artifact of its first run), so every
 * device sees it and clearing the session removes it; without a store it lasts as long as the
 * process.
 */
export class SessionDirectory {
  readonly #registry: RunRegistry;
  readonly #firstRuns = new Map<string, FirstRun>();
  /** Titles given without a store. */
  readonly #titles = new Map<string, string>();

  constructor(registry: RunRegistry) {
    this.#registry = registry;
  }

  /** The caller's chats, the most recently active first (at most 100). */
  async list(userId: string | undefined): Promise<ChatSummary[]> {
    const found = new Map<string, Found>();
    for (const { sessionId, startedAt, updatedAt } of (await this.#registry.store?.listSessions()) ?? [])
      found.set(sessionId, { sessionId, startedAt, updatedAt });
    for (const log of this.#registry.held()) {
      if (log.sessionId === undefined || log.userId !== userId) continue;
      const known = found.get(log.sessionId);
      const startedAt = startOf(log);
      if (!known) found.set(log.sessionId, { sessionId: log.sessionId, startedAt, updatedAt: log.touchedAt });
      else if (!this.#registry.store) {
        known.startedAt = Math.min(known.startedAt, startedAt);
        known.updatedAt = Math.max(known.updatedAt, log.touchedAt);
      }
    }
    const newestFirst = [...found.values()].sort((a, b) => b.updatedAt - a.updatedAt);
    const listed: ChatSummary[] = [];
    for (const session of newestFirst) {
      if (listed.length >= LISTED) break;
      if ((await this.#registry.sessions.access(session.sessionId, userId)) !== "yours") continue;
      const first = await this.#firstRun(session.sessionId, userId);
      if (!first) continue;
      listed.push({ ...session, ...(await this.#title(session.sessionId, first)) });
    }
    return listed;
  }

  /** A chat's title and its top-level runs, oldest first; 404 unless it is the caller's. */
  async open(
    sessionId: string,
    userId: string | undefined,
  ): Promise<{ sessionId: string; title: string; titled: boolean; runs: string[] }> {
    const first = await this.#mine(sessionId, userId);
    return { sessionId, ...(await this.#title(sessionId, first)), runs: await this.#runs(sessionId, userId) };
  }

  /** Gives the chat a title (one line, at most 120 characters); an empty one restores the default. */
  async rename(
    sessionId: string,
    userId: string | undefined,
    given: string,
  ): Promise<{ sessionId: string; title: string; titled: boolean }> {
    const first = await this.#mine(sessionId, userId);
    const title = oneLine(given).slice(0, MAX_TITLE_LENGTH);
    const store = this.#registry.store;
    if (store) await store.putArtifact(first.runId, TITLE_ARTIFACT, title);
    else {
      this.#titles.delete(sessionId);
      if (title) remember(this.#titles, sessionId, title);
    }
    return { sessionId, ...(await this.#title(sessionId, first)) };
  }

  async #mine(sessionId: string, userId: string | undefined): Promise<FirstRun> {
    const first =
      (await this.#registry.sessions.access(sessionId, userId)) === "yours"
        ? await this.#firstRun(sessionId, userId)
        : undefined;
    if (!first) throw notFound(`no chat ${sessionId}`);
    return first;
  }

  async #title(sessionId: string, first: FirstRun): Promise<{ title: string; titled: boolean }> {
    const store = this.#registry.store;
    const given = store ? await store.getArtifact(first.runId, TITLE_ARTIFACT) : this.#titles.get(sessionId);
    if (given) return { title: given, titled: true };
    const message = first.message;
    return {
      title: message === "" ? "Untitled chat" : message.length > 80 ? `${message.slice(0, 79)}…` : message,
      titled: false,
    };
  }

  /** The session's top-level runs in the order they started: the store's, then any only in memory. */
  async #runs(sessionId: string, userId: string | undefined): Promise<string[]> {
    const stored = ((await this.#registry.store?.listRuns({ sessionId })) ?? [])
      .filter((run) => run.parentRunId === undefined)
      .map((run) => run.runId);
    const seen = new Set(stored);
    const held = [...this.#registry.held()]
      .filter((log) => log.sessionId === sessionId && log.userId === userId && !seen.has(log.runId))
      .sort((a, b) => startOf(a) - startOf(b))
      .map((log) => log.runId);
    return [...stored, ...held];
  }

  /** The session's first run and the message that started it (remembered: neither changes). */
  async #firstRun(sessionId: string, userId: string | undefined): Promise<FirstRun | undefined> {
    const known = this.#firstRuns.get(sessionId);
    if (known) return known;
    const [runId] = await this.#runs(sessionId, userId);
    if (runId === undefined) return undefined;
    const held = [...this.#registry.held()].find((log) => log.runId === runId);
    // A run started a moment ago reports its start at once: wait for it (briefly).
    if (held && held.all.length === 0) await held.changed(1_000);
    const started = held?.all[0] ?? (await this.#registry.store?.read(runId))?.[0];
    // A run that has not reported its start yet: its message is not known, so nothing is kept.
    if (started?.type !== "run_started") return { runId, message: "" };
    const first = { runId, message: firstMessage(started) };
    remember(this.#firstRuns, sessionId, first);
    return first;
  }
}

/**
 * The routes of the page's chat list: `GET /api/sessions` (the caller's chats),
 * `GET /api/sessions/:sessionId` (one chat's title and run ids), `PATCH /api/sessions/:sessionId
 * {title}` (rename). Another user's chat is never listed and is a 404.
 */
export function mountSessions(
  app: Hono,
  registry: RunRegistry,
  caller: (request: Request, env: unknown) => Promise<Caller>,
): void {
  const directory = new SessionDirectory(registry);
  app.get("/api/sessions", async (c) => {
    const { userId } = await caller(c.req.raw, c.env);
    return c.json({ sessions: await directory.list(userId) }, 200, { "cache-control": "no-store" });
  });
  app.get("/api/sessions/:sessionId", async (c) => {
    const { userId } = await caller(c.req.raw, c.env);
    return c.json(await directory.open(c.req.param("sessionId"), userId), 200, {
      "cache-control": "no-store",
    });
  });
  app.patch("/api/sessions/:sessionId", async (c) => {
    const { userId } = await caller(c.req.raw, c.env);
    const body = await readJsonObject(c.req.raw);
    if (typeof body.title !== "string") throw new HttpError(400, "bad_request", '"title" must be a string');
    return c.json(await directory.rename(c.req.param("sessionId"), userId, body.title));
  });
}

function startOf(log: RunLog): number {
  return log.all[0]?.at ?? log.touchedAt;
}

function firstMessage(started: Extract<RunEvent, { type: "run_started" }>): string {
  const last = (started.input ?? []).filter((m: Message) => m.role === "user").at(-1);
  if (!last) return "";
  const content: unknown = last.content;
  const text =
    typeof content === "string"
      ? content
      : Array.isArray(content)
        ? content
            .filter((part: { type?: string }) => part.type === "text")
            .map((part: { text?: string }) => part.text ?? "")
            .join(" ")
        : "";
  return oneLine(text);
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > REMEMBERED) map.delete(map.keys().next().value!);
}
