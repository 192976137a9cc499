import type { RunStore } from "../store/types.js";

/** The owner of a session whose first run names no readable `run_started` (a damaged log): nobody. */
const NOBODY: unique symbol = Symbol("nobody");
type Owner = string | undefined | typeof NOBODY;

/** Sessions whose owner this process remembers; the least recently used are forgotten. */
const REMEMBERED = 10_000;

/**
 * What a caller may do with a session id: `yours` (continue it, or it is new and now yours),
 * `theirs` (another caller's: answer as for a session that does not exist) or `none` (nobody's yet).
 */
export type SessionAccess = "yours" | "theirs" | "none";

/** What the registry knows of runs in memory, without asking the store. */
export type KnownRuns = {
  /** The user of a run held in memory. */
  userOfRun(runId: string): { userId: string | undefined } | undefined;
  /** The user of the earliest run in memory of a session (used without a store). */
  userOfSession(sessionId: string): { userId: string | undefined } | undefined;
};

/**
 * Who a session belongs to: the user whose run started it (the `userId` of its first top-level
 * run). `undefined` is a user too — the single user of a server without per-user auth, or runs
 * started without one — so a session started that way is no named user's, and a named user's
 * session is not the single user's.
 *
 * A session this process has not seen is looked up in the store (its first run); one it started
 * runs in, or looked up before, is answered from memory (the last `REMEMBERED` sessions), which
 * also covers the moment before a new session's first run is stored. A session cleared from the
 * store and started again by another user elsewhere keeps its old owner here: that owner's next
 * run is then refused by `Runner` itself, which never gives one user's history to another's run.
 *
 * @example
 * const owners = new SessionOwners(store, known);
 * if ((await owners.access("chat-42", "alice", true)) === "theirs") throw notFound("no session chat-42");
 */
export class SessionOwners {
  readonly #store: RunStore | undefined;
  readonly #known: KnownRuns;
  /** Sessions whose owner this process knows, least recently used first. */
  readonly #owners = new Map<string, Owner>();

  constructor(store: RunStore | undefined, known: KnownRuns) {
    this.#store = store;
    this.#known = known;
  }

  /**
   * What `userId` may do with `sessionId`. With `claim`, a session nobody has becomes theirs
   * (call it right before starting the run that creates it).
   */
  async access(sessionId: string, userId: string | undefined, claim = false): Promise<SessionAccess> {
    if (!claim) {
      const found = await this.#owner(sessionId);
      if (found === undefined) return "none";
      return found.owner === userId ? "yours" : "theirs";
    }
    const access = await this.claimFor(sessionId, userId);
    return access === "claimed" ? "yours" : access;
  }

  /**
   * Like `access(…, true)`, but says `claimed` when this call made a session nobody had the
   * caller's: the claim to forget (`unclaim`) when the run it was made for does not start.
   */
  async claimFor(sessionId: string, userId: string | undefined): Promise<"yours" | "theirs" | "claimed"> {
    const found = await this.#owner(sessionId);
    if (found !== undefined) return found.owner === userId ? "yours" : "theirs";
    // Another request may have claimed it since it was looked up.
    if (this.#owners.has(sessionId)) return this.#owners.get(sessionId) === userId ? "yours" : "theirs";
    this.claim(sessionId, userId);
    return "claimed";
  }

  /**
   * Forgets `userId`'s claim whose run did not start (the request was refused after the claim):
   * the id is nobody's again. A session that has runs keeps its owner (the next lookup finds them).
   */
  unclaim(sessionId: string, userId: string | undefined): void {
    if (this.#owners.has(sessionId) && this.#owners.get(sessionId) === userId) this.#owners.delete(sessionId);
  }

  /** Records that `userId` starts a new session (an id the server made up, or one nobody had). */
  claim(sessionId: string, userId: string | undefined): void {
    remember(this.#owners, sessionId, userId);
  }

  async #owner(sessionId: string): Promise<{ owner: Owner } | undefined> {
    if (!this.#owners.has(sessionId)) {
      const found = await this.#lookUp(sessionId);
      // Another request may have claimed it or looked it up meanwhile: the first answer stands.
      if (found !== undefined && !this.#owners.has(sessionId)) remember(this.#owners, sessionId, found.owner);
      if (!this.#owners.has(sessionId)) return undefined;
    }
    const owner = this.#owners.get(sessionId);
    remember(this.#owners, sessionId, owner);
    return { owner };
  }

  async #lookUp(sessionId: string): Promise<{ owner: Owner } | undefined> {
    if (!this.#store) {
      const known = this.#known.userOfSession(sessionId);
      return known && { owner: known.userId };
    }
    // The first top-level run names the owner (a store that lists more is read the same way).
    const runs = await this.#store.listRuns({ sessionId, topLevel: true, first: 1 });
    const first = runs.find((run) => run.parentRunId === undefined);
    if (first === undefined) return undefined;
    const known = this.#known.userOfRun(first.runId);
    if (known) return { owner: known.userId };
    const [started] = await this.#store.read(first.runId);
    return { owner: started?.type === "run_started" ? started.userId : NOBODY };
  }
}

function remember(map: Map<string, Owner>, key: string, owner: Owner): void {
  map.delete(key);
  map.set(key, owner);
  if (map.size > REMEMBERED) map.delete(map.keys().next().value!);
}
