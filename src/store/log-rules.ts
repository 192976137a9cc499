/**
 * The rules every store enforces, written once: how events are encoded and decoded, how
 * `seq` must continue a log, who may write (leases), and how a run's summary follows from
 * its events. The stores only differ in where rows live and how they lock.
 */
import type { RunEvent } from "../contract/events.js";
import { serializeEvent } from "../contract/serialize-event.js";
import { BATCH_ROW_VERSION, unbatch } from "./batch-rows.js";
import { checkEventShape } from "./event-shapes.js";
import { ownerIsGone } from "./lease-owner.js";
import {
  BLOCK_ROW_VERSION,
  extractPayloads,
  MESSAGE_BLOCK,
  PAYLOAD_MIN_CHARS,
  PAYLOAD_ROW_VERSION,
  type Payload,
  payloadRefs,
  payloadsToFetch,
  restorePayloads,
} from "./payloads.js";
import {
  EVENT_SCHEMA_VERSION,
  type Lease,
  LeaseConflict,
  type RunFilter,
  type RunStatus,
  type RunSummary,
  StoreError,
} from "./types.js";

/**
 * A run's summary as the stores keep it. `parentRunId` marks a child run (an agent used as a
 * tool): it shares its parent's session, and whoever continues a session must skip it.
 * `RunSummary` does not declare the field yet; the stores already return it.
 */
export type StoredRunSummary = RunSummary & { parentRunId?: string };

/** One event as a store keeps it: its `seq`, the format version it was written in, and its JSON text. */
export type StoredEvent = { seq: number; version: number; body: string };

/** What an append stores: the rows, and the large payloads they refer to (each once; a store keeps one copy per key). */
export type EncodedBatch = { rows: StoredEvent[]; payloads: Payload[] };

export function checkRunId(runId: unknown): asserts runId is string {
  if (typeof runId !== "string" || runId === "") {
    throw new StoreError(`a run id must be a non-empty string (got ${JSON.stringify(runId)})`);
  }
}

export function checkArtifact(runId: string, key: unknown, text: unknown): void {
  checkRunId(runId);
  if (typeof key !== "string" || key === "") {
    throw new StoreError(`run ${runId}: an artifact key must be a non-empty string`, { runId });
  }
  if (typeof text !== "string") {
    throw new StoreError(`run ${runId}: artifact ${key} must be a string (got ${typeof text})`, { runId });
  }
}

/** `read`'s `afterSeq`: absent means from the start; otherwise a whole number of at least 0. */
export function checkAfterSeq(runId: string, afterSeq: unknown): number {
  checkRunId(runId);
  if (afterSeq === undefined) return 0;
  if (typeof afterSeq !== "number" || !Number.isSafeInteger(afterSeq) || afterSeq < 0) {
    throw new StoreError(
      `run ${runId}: afterSeq must be a whole number of at least 0 (got ${String(afterSeq)})`,
      {
        runId,
      },
    );
  }
  return afterSeq;
}

export function checkLeaseRequest(runId: string, owner: unknown, ttlMs: unknown): void {
  checkRunId(runId);
  if (typeof owner !== "string" || owner === "") {
    throw new StoreError(`run ${runId}: a lease owner must be a non-empty string, unique to its process`, {
      runId,
    });
  }
  if (typeof ttlMs !== "number" || !Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new StoreError(`run ${runId}: a lease needs a positive ttlMs (got ${String(ttlMs)})`, { runId });
  }
}

/**
 * Checks that `stored` (the lease the store holds for the run, if any) lets `owner` take it at
 * `now`: free, expired, held by a process on this machine that no longer exists, or already
 * `owner`'s. A live lease of another owner is a `LeaseConflict`.
 */
export function checkLeaseFree(runId: string, owner: string, stored: Lease | undefined, now: number): void {
  if (
    stored !== undefined &&
    stored.owner !== owner &&
    stored.expiresAt > now &&
    !ownerIsGone(stored.owner)
  ) {
    throw new LeaseConflict(runId, stored.owner, stored.expiresAt);
  }
}

/** The lease fields of a run's summary: who holds it and until when, if it is still live. */
export function leaseFields(
  lease: Lease | undefined,
  now: number,
): Pick<RunSummary, "leaseOwner" | "leaseExpiresAt"> {
  if (lease === undefined || lease.expiresAt <= now) return {};
  return { leaseOwner: lease.owner, leaseExpiresAt: lease.expiresAt };
}

/** The statuses a `RunFilter` asks for (undefined: any), checked. */
export function filterStatuses(filter: RunFilter): ReadonlySet<RunStatus> | undefined {
  const { status } = filter;
  if (status === undefined) return undefined;
  const list = typeof status === "string" ? [status] : status;
  for (const s of list) {
    if (!RUN_STATUSES.includes(s)) {
      throw new StoreError(
        `listRuns: unknown status ${JSON.stringify(s)}; use one of ${RUN_STATUSES.join(", ")}`,
      );
    }
  }
  return new Set(list);
}

const RUN_STATUSES: readonly RunStatus[] = ["running", "parked", "completed", "failed"];

/**
 * How many runs from each end a `RunFilter` asks for (undefined: all of them), checked. A side
 * not asked for is 0: `{ last: 2 }` is the last two.
 */
export function filterEnds(filter: RunFilter): { first: number; last: number } | undefined {
  const { first, last } = filter;
  if (first === undefined && last === undefined) return undefined;
  for (const [name, value] of [
    ["first", first],
    ["last", last],
  ] as const) {
    if (value !== undefined && !(Number.isSafeInteger(value) && value >= 0)) {
      throw new StoreError(`listRuns: ${name} must be a whole number ≥ 0 (got ${JSON.stringify(value)})`);
    }
  }
  return { first: first ?? 0, last: last ?? 0 };
}

/** The first `first` and last `last` of `runs` (in order, each once). */
export function endsOf<T>(runs: readonly T[], ends: { first: number; last: number }): T[] {
  if (ends.first + ends.last >= runs.length) return [...runs];
  return [...runs.slice(0, ends.first), ...runs.slice(runs.length - ends.last)];
}

/**
 * Checks that `lease` is still the run's current, unexpired lease, as writing and renewing
 * need. An expired lease is refused even when nobody took it over: the holder was stalled past
 * its ttl, so it must acquire again (and re-read the log) rather than assume nothing happened.
 */
export function checkLeaseHeld(lease: Lease, stored: Lease | undefined, now: number): void {
  const { runId, owner } = lease;
  if (stored === undefined) {
    throw new StoreError(
      `run ${runId}: ${owner} does not hold the run's lease (no lease is held); acquire it with acquireLease before writing`,
      { runId },
    );
  }
  if (stored.owner !== owner) {
    if (stored.expiresAt > now) throw new LeaseConflict(runId, stored.owner, stored.expiresAt);
    throw new StoreError(
      `run ${runId}: the lease of ${owner} was taken over by ${stored.owner}; acquire it again and re-read the log before writing`,
      { runId },
    );
  }
  if (stored.expiresAt <= now) {
    throw new StoreError(
      `run ${runId}: the lease of ${owner} expired at ${new Date(stored.expiresAt).toISOString()}; ` +
        "acquire it again (and renew it more often than its ttl) before writing",
      { runId },
    );
  }
}

/**
 * Checks that `events` belong to the run and continue its log (which ends at `lastSeq`; the
 * first event of a run is seq 1) with no gap or repeat, and encodes them. Raw tool results
 * (`tool_call_completed.result`) are dropped here: they are for live observers only, and the
 * store is the last place that can make sure they are never persisted.
 */
export function encodeEvents(runId: string, lastSeq: number, events: readonly RunEvent[]): EncodedBatch {
  const rows: StoredEvent[] = [];
  const payloads = new Map<string, Payload>();
  let expected = lastSeq + 1;
  for (const event of events) {
    if (event.runId !== runId) {
      throw new StoreError(
        `cannot append an event of run ${event.runId} (seq ${event.seq}) to run ${runId}`,
        {
          runId,
        },
      );
    }
    if (event.seq !== expected) {
      const problem =
        typeof event.seq === "number" && event.seq < expected
          ? `repeats seq ${event.seq}`
          : `would leave a gap (seq ${String(event.seq)})`;
      throw new StoreError(
        `run ${runId}: an appended event ${problem}; the log ends at seq ${expected - 1}, so the next event must be seq ${expected}`,
        { runId },
      );
    }
    // An event whose whole text is short holds no value long enough to be a payload: most
    // events are turned into JSON once, and nothing inside them is measured apart. One that
    // visibly carries a long text (a tool's output) goes straight to extraction instead of
    // being turned into JSON whole first, for nothing.
    const body = carriesLongText(event) ? undefined : serializeEvent(event);
    const extracted =
      body !== undefined && body.length < PAYLOAD_MIN_CHARS ? undefined : extractPayloads(event);
    if (extracted === undefined) {
      rows.push({ seq: event.seq, version: PLAIN_ROW_VERSION, body: body ?? serializeEvent(event) });
    } else {
      const version = extracted.blocks ? BLOCK_ROW_VERSION : PAYLOAD_ROW_VERSION;
      rows.push({ seq: event.seq, version, body: serializeEvent(extracted.stripped) });
      for (const payload of extracted.payloads) payloads.set(payload.key, payload);
    }
    expected++;
  }
  return { rows, payloads: [...payloads.values()] };
}

/**
 * A string at least a payload long where tool results travel (an event's `output` or its
 * message's `content`), or an input long enough for blocks or holding parts (a session's
 * history, its images).
 */
function carriesLongText(event: RunEvent): boolean {
  const { output, message, input } = event as {
    output?: unknown;
    message?: { content?: unknown };
    input?: unknown;
  };
  return (
    (typeof output === "string" && output.length >= PAYLOAD_MIN_CHARS) ||
    (typeof message?.content === "string" && message.content.length >= PAYLOAD_MIN_CHARS) ||
    (Array.isArray(input) &&
      (input.length >= MESSAGE_BLOCK ||
        input.some((m: { content?: unknown } | null) => Array.isArray(m?.content))))
  );
}

/** Rows without payload references keep version 1, so an older Quiver still reads them. */
const PLAIN_ROW_VERSION = 1;

/**
 * The payload keys decoded events refer to, each once: what a read must fetch beside the rows.
 * With `known`, the values already known (long strings read a moment ago: a chat's image) are
 * put there instead of being listed; pass it on to `withPayloads`.
 */
export function referencedPayloads(events: readonly RunEvent[], known?: Map<string, unknown>): string[] {
  const keys = new Set<string>();
  for (const event of events) for (const key of payloadRefs(event)) keys.add(key);
  return known ? payloadsToFetch(keys, known) : [...keys];
}

/**
 * Puts the payloads decoded events refer to back in place, from `texts` (key → JSON text);
 * afterwards every event equals the one the run emitted. A value referred to by several
 * events is decoded once and shared, as it was shared in the run. Then each event's shape is
 * checked (`checkEventShape`): the last step of every read, so that no store hands on a row
 * that is JSON but not an event of a type this Quiver knows.
 */
export function withPayloads(
  runId: string,
  events: RunEvent[],
  texts: ReadonlyMap<string, string>,
  known?: ReadonlyMap<string, unknown>,
): RunEvent[] {
  const parsed = new Map<string, unknown>(known);
  for (const event of events) {
    if ((event as { $payloads?: unknown }).$payloads !== undefined)
      restorePayloads(runId, event, texts, parsed);
    checkEventShape(runId, event);
  }
  return events;
}

/**
 * Decodes the rows a read returned. They must be exactly seq `afterSeq + 1` … `lastSeq` (the
 * end of the log as the run's summary records it): a missing row, a row of another schema
 * version or a row that is not an event of this run is a `StoreError` naming the run and seq,
 * never skipped, because a resumed run built on a partial log could repeat side effects.
 */
export function decodeEvents(
  runId: string,
  afterSeq: number,
  lastSeq: number,
  rows: readonly StoredEvent[],
): RunEvent[] {
  const events: RunEvent[] = [];
  let expected = afterSeq + 1;
  for (const row of rows) {
    if (row.version === BATCH_ROW_VERSION) {
      expected = decodeBatch(runId, row, expected, events);
      continue;
    }
    // A row of a version this Quiver does not know may hold other seqs than its own: say that.
    if (row.seq !== expected) throw unknownVersion(runId, row) ?? missingEvent(runId, expected);
    events.push(decodeEvent(runId, row));
    expected++;
  }
  if (expected <= lastSeq) throw missingEvent(runId, expected);
  return events;
}

/**
 * Pushes the events of a batch row from seq `expected` on (the first row a read returns may
 * also hold events before it) and returns the seq expected next. Its events are plain ones,
 * checked one by one as a plain row's event is.
 */
function decodeBatch(runId: string, row: StoredEvent, expected: number, events: RunEvent[]): number {
  const { first, values } = unbatch(runId, row, expected);
  if (first > expected) throw missingEvent(runId, expected);
  // Events before `expected` are only expected in the first row read (those the read skips),
  // beside events after them.
  if (first < expected && (events.length > 0 || row.seq < expected)) {
    throw new StoreError(`run ${runId}: event seq ${first} is stored twice; the run's log is damaged`, {
      runId,
    });
  }
  for (let seq = expected; seq <= row.seq; seq++) {
    const value = values[seq - first];
    const problem =
      eventShapeProblem(value, runId, seq) ??
      ((value as { $payloads?: unknown }).$payloads !== undefined
        ? "a row of several events cannot refer to payloads"
        : undefined);
    if (problem !== undefined) {
      throw new StoreError(`run ${runId}: event seq ${seq} is damaged: ${problem}`, { runId });
    }
    events.push(value as RunEvent);
  }
  return row.seq + 1;
}

function missingEvent(runId: string, seq: number): StoreError {
  return new StoreError(
    `run ${runId}: event seq ${seq} is missing from the store; the run's log is damaged`,
    {
      runId,
    },
  );
}

/** The error for a row of a version this Quiver cannot read, if it is one. */
function unknownVersion(runId: string, row: StoredEvent): StoreError | undefined {
  if (
    Number.isInteger(row.version) &&
    row.version >= PLAIN_ROW_VERSION &&
    row.version <= EVENT_SCHEMA_VERSION
  )
    return undefined;
  return new StoreError(
    `run ${runId}: event seq ${row.seq} is stored in event schema version ${row.version}, but this Quiver reads ` +
      `versions ${PLAIN_ROW_VERSION} to ${EVENT_SCHEMA_VERSION}; read it with the Quiver version that wrote it`,
    { runId },
  );
}

function decodeEvent(runId: string, row: StoredEvent): RunEvent {
  const unknown = unknownVersion(runId, row);
  if (unknown !== undefined) throw unknown;
  let value: unknown;
  try {
    value = JSON.parse(row.body);
  } catch (cause) {
    throw new StoreError(
      `run ${runId}: event seq ${row.seq} is damaged and cannot be decoded: ${(cause as Error).message}`,
      { runId, cause },
    );
  }
  const problem =
    eventShapeProblem(value, runId, row.seq) ??
    (row.version === PLAIN_ROW_VERSION && (value as { $payloads?: unknown }).$payloads !== undefined
      ? "a version 1 row cannot refer to payloads"
      : undefined);
  if (problem !== undefined) {
    throw new StoreError(`run ${runId}: event seq ${row.seq} is damaged: ${problem}`, { runId });
  }
  return value as RunEvent;
}

function eventShapeProblem(value: unknown, runId: string, seq: number): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "it is not an event object";
  const event = value as Record<string, unknown>;
  if (typeof event.type !== "string") return "it has no type";
  if (event.runId !== runId) return `it belongs to run ${String(event.runId)}`;
  if (event.seq !== seq) return `it carries seq ${String(event.seq)}`;
  if (typeof event.at !== "number" || typeof event.agent !== "string") return "it lacks `at` or `agent`";
  return undefined;
}

/**
 * The run's summary after `events` are appended to a log summarised by `previous`. The agent,
 * session and start time come from `run_started` (until it arrives, from the first event);
 * `parentRunId` is that of the events. The status follows the run's end events, so that it
 * always says what the log ends with: `run_parked` parks it, `run_resumed` makes it running
 * again, `run_completed` completes it, and `run_failed` of any kind makes it failed, with the
 * kind as `failureKind` (a `store_unavailable` failure is resumable: the store failed, not the
 * run). `failureKind` goes with the failed status it explains.
 */
export function summarize(
  runId: string,
  previous: StoredRunSummary | undefined,
  events: readonly RunEvent[],
): StoredRunSummary {
  const first = events[0];
  let summary: StoredRunSummary | undefined = previous && { ...previous };
  if (summary === undefined) {
    if (first === undefined) throw new StoreError(`run ${runId}: nothing to summarise`, { runId });
    summary = {
      runId,
      agent: first.agent,
      startedAt: first.at,
      updatedAt: first.at,
      lastSeq: 0,
      status: "running",
    };
    if (first.parentRunId !== undefined) summary.parentRunId = first.parentRunId;
  }
  for (const event of events) {
    summary.lastSeq = event.seq;
    summary.updatedAt = Math.max(summary.updatedAt, event.at);
    if (event.type === "run_started") {
      summary.agent = event.agent;
      summary.startedAt = event.at;
      if (event.sessionId !== undefined) summary.sessionId = event.sessionId;
      if (event.parentRunId !== undefined) summary.parentRunId = event.parentRunId;
    } else if (event.type === "run_completed") summary.status = "completed";
    else if (event.type === "run_failed") {
      summary.status = "failed";
      if (typeof event.kind === "string") summary.failureKind = event.kind;
      else delete summary.failureKind;
    } else if (event.type === "run_parked") summary.status = "parked";
    else if (event.type === "run_resumed") summary.status = "running";
  }
  if (summary.status !== "failed") delete summary.failureKind;
  return summary;
}

/**
 * True for a summary of a run stopped by its store, not by itself (`run_failed` of kind
 * `store_unavailable`): it is unfinished, and resuming continues it from its log.
 */
export function failedForStore(summary: Pick<RunSummary, "status" | "failureKind">): boolean {
  return summary.status === "failed" && summary.failureKind === STORE_UNAVAILABLE;
}

/**
 * The kind of a stored event's JSON text when it is a `run_failed`, else undefined (a damaged
 * text too: reading the log reports that). For summaries written before they kept the kind.
 */
export function failureKindOf(body: string): string | undefined {
  let event: { type?: unknown; kind?: unknown } | null;
  try {
    event = JSON.parse(body);
  } catch {
    return undefined;
  }
  // A row of several events (batch-rows.ts) ends with the last.
  if (Array.isArray(event)) event = event.at(-1);
  return event?.type === "run_failed" && typeof event.kind === "string" ? event.kind : undefined;
}

/** The `run_failed` kind of a run stopped by a store that could not be written for a while. */
export const STORE_UNAVAILABLE = "store_unavailable";

/** A failure of the database or driver, as a `StoreError` saying what the store was doing. */
export function storeFailure(action: string, runId: string | undefined, error: unknown): StoreError {
  if (error instanceof StoreError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const subject = runId === undefined ? "" : ` for run ${runId}`;
  return new StoreError(
    `${action}${subject} failed: ${message}`,
    runId === undefined ? { cause: error } : { runId, cause: error },
  );
}

export function closedStore(kind: string): StoreError {
  return new StoreError(`this ${kind} is closed; open a new one to keep using the store`);
}
