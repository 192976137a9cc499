/**
 * Large payloads stored once. A call's arguments ride on every event of the call (the
 * assistant `message`, `tool_call_requested`, `approval_required`, `tool_call_started` per
 * attempt, `tool_call_completed`…) and a result's text and details on both
 * `tool_call_completed` and the tool `message`: stored whole in each event, 15 MB of
 * arguments became 40 MB. Here every large value (by its JSON text) is stored once per run,
 * under the digest of that text, beside the log (as an artifact), and the events refer to it.
 * Reading puts the values back, so a read event equals the event the run emitted.
 *
 * A row that refers to payloads is written in event schema version 2 and names what it took
 * out in a top-level `$payloads` field — `{ "call.args": "<key>", "message.toolCalls.0.args":
 * "<key>" }` — with `null` left in each place. A long message list (a session's run starts
 * with the whole conversation) is stored in blocks of `MESSAGE_BLOCK` messages, each a payload
 * at a path ending in its index range — `"input.0:32"` — whose messages leave the list (the
 * others keep their order); such a row is version 3. Paths only ever name event fields Quiver
 * defines, so no value a tool or model produced can be mistaken for a reference.
 *
 * Images, documents and recordings are stored by their bytes: in content that holds one, each
 * part's base64 `data` (and each long text) is its own payload — `input.0.content.1.data` —
 * so the event keeps the part's type, media type and name, and the same image under other text
 * (a tool's result, the message that carries it, a handoff's transcript) is one artifact.
 */
import { createHash } from "node:crypto";
import type { RunEvent } from "../contract/events.js";
import { StoreError } from "./types.js";

/** Values whose JSON text is at least this long are stored once and referred to. */
export const PAYLOAD_MIN_CHARS = 1_024;

/** The artifact key prefix of stored payloads: the rest is the sha256 of the payload's JSON text. */
export const PAYLOAD_KEY_PREFIX = "quiver:payload:";

/** The format version of a row that refers to payloads; plain rows stay version 1. */
export const PAYLOAD_ROW_VERSION = 2;

/**
 * The format version of a row that refers to blocks of messages (`MESSAGE_BLOCK`): a Quiver
 * that reads only versions 1 and 2 refuses it instead of misreading it.
 */
export const BLOCK_ROW_VERSION = 3;

export type Payload = { key: string; text: string };

/**
 * The artifact owner under which a run's payloads are kept. A run in a session keeps them with
 * the session, so the history every later run of the session starts with (its images and
 * documents, large call arguments) is stored once, not once per run; a session is deleted as a
 * whole (`clearSession`), so no run can lose a payload another refers to. A payload's key is
 * the digest of its text, so a lookup under either owner can only find that same text.
 *
 * @example
 * payloadOwner("run_1", "chat-42"); // → "\u001fsession\u001fchat-42"
 * payloadOwner("run_1", undefined); // → "run_1"
 */
export function payloadOwner(runId: string, sessionId: string | undefined): string {
  return sessionId === undefined ? runId : sessionPayloads(sessionId);
}

/** The artifact owner of a session's payloads (unit separators: no run id a caller picks looks like it by accident). */
export function sessionPayloads(sessionId: string): string {
  return `\u001fsession\u001f${sessionId}`;
}

/** The owners a run's payloads may be found under: its session's, and its own (stored before sessions kept them). */
export function payloadOwners(runId: string, sessionId: string | undefined): string[] {
  return sessionId === undefined ? [runId] : [payloadOwner(runId, sessionId), runId];
}

/**
 * Objects already measured: one call's `args` object rides on many events, and is turned into
 * JSON once. The WeakMap keeps only the size verdict (null: small) and the key; the texts of the
 * most recent payloads are kept in a bounded cache (the events of one call come close together),
 * so remembering them never doubles what a long run holds in memory.
 */
const seen = new WeakMap<object, string | null>();
/** Parts whose `data` was measured: the part → its data's payload key. */
const seenData = new WeakMap<object, string>();

/** Strings by payload key, the least recently used dropped first, within `maxChars` and `maxEntries`. */
class BoundedTexts {
  readonly #texts = new Map<string, string>();
  #chars = 0;
  constructor(
    readonly maxChars: number,
    readonly maxEntries = Number.POSITIVE_INFINITY,
  ) {}

  /** The text under `key`, now the most recently used. */
  get(key: string): string | undefined {
    const text = this.#texts.get(key);
    if (text !== undefined) {
      this.#texts.delete(key);
      this.#texts.set(key, text);
    }
    return text;
  }

  set(key: string, text: string): void {
    if (this.#texts.has(key) || text.length > this.maxChars) return;
    this.#texts.set(key, text);
    this.#chars += text.length;
    for (const [old, dropped] of this.#texts) {
      if (this.#chars <= this.maxChars && this.#texts.size <= this.maxEntries) break;
      this.#texts.delete(old);
      this.#chars -= dropped.length;
    }
  }
}

const recentTexts = new BoundedTexts(16 * 1024 * 1024, 64);

function remember(payload: Payload): void {
  recentTexts.set(payload.key, payload.text);
}

/**
 * The event with every large value taken out (`null` in its place, its path and key in
 * `$payloads`), and the payloads taken out; `undefined` when nothing is large enough.
 */
export function extractPayloads(
  event: RunEvent,
): { stripped: RunEvent; payloads: Payload[]; blocks: boolean } | undefined {
  // Most events hold nothing large: no path is built (nor anything else allocated) until a
  // payload is found.
  let found: Found[] | undefined;
  const visit = (
    value: unknown,
    p0: string,
    p1?: string | number,
    p2?: string | number,
    p3?: string | number,
    p4?: string,
    payload = payloadOf(value),
  ) => {
    if (payload === undefined) return;
    const path: Array<string | number> = [p0];
    for (const segment of [p1, p2, p3, p4]) if (segment !== undefined) path.push(segment);
    found ??= [];
    found.push({ path, payload });
  };
  const visitMessage = (message: unknown, p0: string, p1?: number) => {
    if (!isRecord(message)) return;
    // Paths are [p0, p1?, field, …]: a message at `message` or at `input.3`.
    const content = message.content;
    if (hasLargeMedia(content)) {
      for (let i = 0; i < content.length; i++) {
        const part = partPayload(content[i]);
        if (part === undefined) continue;
        if (p1 === undefined) visit(undefined, p0, "content", i, part.field, undefined, part.payload);
        else visit(undefined, p0, p1, "content", i, part.field, part.payload);
      }
    } else if (p1 === undefined) visit(content, p0, "content");
    else visit(content, p0, p1, "content");
    if (message.details !== undefined) {
      if (p1 === undefined) visit(message.details, p0, "details");
      else visit(message.details, p0, p1, "details");
    }
    const calls = message.toolCalls;
    if (!Array.isArray(calls)) return;
    for (let i = 0; i < calls.length; i++) {
      const call = calls[i];
      if (!isRecord(call)) continue;
      if (p1 === undefined) visit(call.args, p0, "toolCalls", String(i), undefined, "args");
      else visit(call.args, p0, p1, "toolCalls", i, "args");
    }
  };
  const source = event as unknown as Record<string, unknown>;
  if (isRecord(source.call)) visit(source.call.args, "call", "args");
  if (source.message !== undefined) visitMessage(source.message, "message");
  for (const list of ["input", "transcript"] as const) {
    const messages = source[list];
    if (!Array.isArray(messages)) continue;
    const before = found?.length ?? 0;
    for (let i = 0; i < messages.length; i++) visitMessage(messages[i], list, i);
    if (messages.length < MESSAGE_BLOCK) continue;
    const blocks = messageBlocks(list, messages, found?.slice(before));
    if (blocks.length) found = [...(found ?? []), ...blocks];
  }
  if (Array.isArray(source.pending)) {
    for (let i = 0; i < source.pending.length; i++) {
      const call = source.pending[i];
      if (isRecord(call)) visit(call.args, "pending", i, "args");
    }
  }
  for (const field of PAYLOAD_FIELDS) {
    const value = source[field];
    if (value === undefined) continue;
    // A tool result's `content` keeps its media apart, as a message's does.
    if (field === "content" && hasLargeMedia(value)) {
      for (let i = 0; i < value.length; i++) {
        const part = partPayload(value[i]);
        if (part !== undefined) visit(undefined, field, i, part.field, undefined, undefined, part.payload);
      }
    } else visit(value, field);
  }
  if (found === undefined) return undefined;
  if (found.length === 0) return undefined;

  // Copy-on-write along each path: the event the run emitted is never touched.
  const stripped = { ...source } as Record<string, unknown>;
  const refs: Record<string, string> = {};
  const payloads = new Map<string, Payload>();
  // Blocks of messages leave their list (put back by index range), rather than a null each.
  let blocked: Map<string, Set<number>> | undefined;
  for (const { path, payload } of found) {
    const range = path.length === 2 ? blockRange(path[1] as string) : undefined;
    if (range) {
      const list = path[0] as string;
      blocked ??= new Map();
      const starts = blocked.get(list) ?? new Set<number>();
      starts.add(range.from);
      blocked.set(list, starts);
      refs[path.join(".")] = payload.key;
      payloads.set(payload.key, payload);
      continue;
    }
    let node = stripped as Record<string | number, unknown>;
    for (let i = 0; i < path.length - 1; i++) {
      const segment = path[i]!;
      const child = node[segment];
      const copy = (Array.isArray(child) ? [...child] : { ...(child as object) }) as Record<
        string | number,
        unknown
      >;
      node[segment] = copy;
      node = copy;
    }
    node[path.at(-1)!] = null;
    refs[path.join(".")] = payload.key;
    payloads.set(payload.key, payload);
  }
  for (const [list, starts] of blocked ?? []) {
    const messages = stripped[list] as unknown[];
    stripped[list] = messages.filter((_, i) => !starts.has(i - (i % MESSAGE_BLOCK)));
  }
  stripped.$payloads = refs;
  return {
    stripped: stripped as unknown as RunEvent,
    payloads: [...payloads.values()],
    blocks: blocked !== undefined,
  };
}

type Found = { path: Array<string | number>; payload: Payload };

/**
 * Messages per block of a long message list. A session's run starts with the whole
 * conversation so far as its input: stored whole, a chat of 800 messages kept 42 MB of copies
 * of itself (every run repeating every message before it). Stored in aligned blocks, each
 * block is one payload of the session, and a later run refers to the blocks it shares with the
 * runs before it: it stores its new messages and about 8 bytes per earlier one.
 */
export const MESSAGE_BLOCK = 32;

/**
 * The full blocks of `messages` (`MESSAGE_BLOCK` of them from index 0, 32, 64…) that hold no
 * large value of their own (those are payloads already, by themselves): each becomes one
 * payload, found at the path `[list, "from:to"]`.
 */
function messageBlocks(list: string, messages: unknown[], inner: readonly Found[] | undefined): Found[] {
  const taken = new Set<number>();
  for (const { path } of inner ?? []) taken.add(path[1] as number);
  const blocks: Found[] = [];
  for (let from = 0; from + MESSAGE_BLOCK <= messages.length; from += MESSAGE_BLOCK) {
    let free = true;
    for (let i = from; i < from + MESSAGE_BLOCK && free; i++) free = !taken.has(i);
    if (!free) continue;
    let text: string;
    try {
      text = JSON.stringify(messages.slice(from, from + MESSAGE_BLOCK));
    } catch {
      continue; // not plain JSON: left in the event, whose encoding makes it plain
    }
    blocks.push({ path: [list, `${from}:${from + MESSAGE_BLOCK}`], payload: toPayload(text) });
  }
  return blocks;
}

/** The index range a block's last path segment (`"32:64"`) names; undefined for any other segment. */
function blockRange(segment: string): { from: number; to: number } | undefined {
  const colon = segment.indexOf(":");
  if (colon < 0) return undefined;
  const from = Number(segment.slice(0, colon));
  const to = Number(segment.slice(colon + 1));
  return Number.isInteger(from) && Number.isInteger(to) && from >= 0 && to > from ? { from, to } : undefined;
}

/** Top-level event fields that may hold a large value. */
const PAYLOAD_FIELDS = ["output", "details", "content", "partial", "state"] as const;

/** Content holding an image, document or recording whose inline bytes are worth a payload of their own. */
function hasLargeMedia(content: unknown): content is unknown[] {
  if (!Array.isArray(content)) return false;
  for (const block of content) {
    if (
      isRecord(block) &&
      (block.type === "image" || block.type === "file" || block.type === "audio") &&
      typeof block.data === "string" &&
      block.data.length >= PAYLOAD_MIN_CHARS - 2
    )
      return true;
  }
  return false;
}

/** One content part's large field: a media part's `data`, a text part's `text`. */
function partPayload(block: unknown): { field: "data" | "text"; payload: Payload } | undefined {
  if (!isRecord(block)) return undefined;
  if (typeof block.data === "string") {
    const payload = dataPayloadOf(block);
    return payload && { field: "data", payload };
  }
  if (typeof block.text === "string") {
    const payload = payloadOf(block.text);
    return payload && { field: "text", payload };
  }
  return undefined;
}

/**
 * The payload of a part's base64 `data`, remembered per part object: the same part rides on
 * several events (the tool result, its message), and hashing megabytes once is enough.
 */
function dataPayloadOf(block: Record<string, unknown>): Payload | undefined {
  const known = seenData.get(block);
  if (known !== undefined) {
    const text = recentTexts.get(known);
    if (text !== undefined) return { key: known, text };
    // Read back from a store: its text is the JSON of the value, without hashing it again.
    if (readValues.get(known) === block.data) return { key: known, text: JSON.stringify(block.data) };
  }
  const payload = payloadOf(block.data);
  if (payload === undefined) return undefined;
  seenData.set(block, payload.key);
  remember(payload);
  return payload;
}

/** The payload of `value` if its JSON text is large enough to store once; undefined otherwise. */
function payloadOf(value: unknown): Payload | undefined {
  if (typeof value === "string") {
    // A JSON string is at least as long as the string: short ones are never worth a reference.
    if (value.length < PAYLOAD_MIN_CHARS - 2) return undefined;
    return toPayload(JSON.stringify(value));
  }
  if (value === null || typeof value !== "object") return undefined;
  const known = seen.get(value);
  if (known === null) return undefined;
  if (known !== undefined) {
    const text = recentTexts.get(known);
    if (text !== undefined) return { key: known, text };
  }
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    // Not plain JSON (a bigint, a cycle): left in the event, whose encoding makes it plain.
  }
  if (text === undefined || text.length < PAYLOAD_MIN_CHARS) {
    seen.set(value, null);
    return undefined;
  }
  const payload = toPayload(text);
  seen.set(value, payload.key);
  remember(payload);
  return payload;
}

function toPayload(text: string): Payload {
  return { key: PAYLOAD_KEY_PREFIX + createHash("sha256").update(text).digest("hex"), text };
}

/** The payload keys a decoded event refers to. */
export function payloadRefs(event: RunEvent): string[] {
  const refs = (event as { $payloads?: unknown }).$payloads;
  return isRecord(refs) ? Object.values(refs).filter((k): k is string => typeof k === "string") : [];
}

/**
 * Puts the payloads an event refers to back in their places (in place: the event was just
 * decoded). A missing, damaged or mismatching payload is a `StoreError` naming the run and
 * seq: a log that cannot be rebuilt exactly must not be resumed.
 */
export function restorePayloads(
  runId: string,
  event: RunEvent,
  texts: ReadonlyMap<string, string>,
  parsed: Map<string, unknown>,
): void {
  const target = event as unknown as Record<string, unknown>;
  const refs = target.$payloads;
  delete target.$payloads;
  if (!isRecord(refs)) throw damaged(runId, event.seq, "its payload references are not an object");
  // Blocks of messages first, in index order, each back into the place it left: the paths of
  // the other references count positions in the whole list.
  const entries = Object.entries(refs);
  const blocks = entries
    .map(([path, key]) => ({ path, key, range: blockRange(path.slice(path.indexOf(".") + 1)) }))
    .filter((b) => b.range !== undefined && b.path.indexOf(".") > 0)
    .sort((a, b) => a.range!.from - b.range!.from);
  const blockPaths = new Set(blocks.map((b) => b.path));
  for (const { path, key, range } of blocks) {
    const value = payloadValue(runId, event.seq, path, key, texts, parsed);
    const list = target[path.slice(0, path.indexOf("."))];
    if (!Array.isArray(list) || !Array.isArray(value) || value.length !== range!.to - range!.from) {
      throw damaged(runId, event.seq, `its message block ${key} (at ${path}) does not fit its place`);
    }
    if (list.length < range!.from)
      throw damaged(runId, event.seq, `the place of its message block ${path} does not exist`);
    list.splice(range!.from, 0, ...value);
  }
  for (const [path, key] of entries) {
    if (typeof key !== "string") throw damaged(runId, event.seq, `the reference at ${path} is not a key`);
    if (blockPaths.has(path)) continue;
    const value = payloadValue(runId, event.seq, path, key, texts, parsed);
    const segments = path.split(".");
    let node: unknown = target;
    for (const segment of segments.slice(0, -1)) {
      node = isRecord(node) || Array.isArray(node) ? (node as Record<string, unknown>)[segment] : undefined;
    }
    if (!(isRecord(node) || Array.isArray(node))) {
      throw damaged(runId, event.seq, `the place of its payload ${path} does not exist`);
    }
    const last = segments.at(-1)!;
    (node as Record<string, unknown>)[last] = value;
    if (last === "data" && typeof value === "string" && isRecord(node)) knownData(node, key);
  }
}

/** The value of the payload `key` (decoded once per read, checked against its digest). */
function payloadValue(
  runId: string,
  seq: number,
  path: string,
  key: unknown,
  texts: ReadonlyMap<string, string>,
  parsed: Map<string, unknown>,
): unknown {
  if (typeof key !== "string") throw damaged(runId, seq, `the reference at ${path} is not a key`);
  let value = parsed.get(key);
  if (value !== undefined) return value;
  const text = texts.get(key);
  if (text === undefined) throw damaged(runId, seq, `its payload ${key} (at ${path}) is missing`);
  if (PAYLOAD_KEY_PREFIX + createHash("sha256").update(text).digest("hex") !== key) {
    throw damaged(runId, seq, `its payload ${key} (at ${path}) does not match its digest`);
  }
  try {
    value = JSON.parse(text);
  } catch {
    throw damaged(runId, seq, `its payload ${key} (at ${path}) cannot be decoded`);
  }
  parsed.set(key, value);
  if (typeof value === "string") readValues.set(key, value);
  return value;
}

/**
 * A media part read back from a store is remembered with its key (and its text, while the
 * cache has room): a session's next run starts with it in its input, and storing that input
 * would otherwise hash the same megabytes again for every later message of the chat.
 */
function knownData(part: Record<string, unknown>, key: string): void {
  seenData.set(part, key);
}

/**
 * Long strings read back from a store (images', documents' and recordings' base64, long texts),
 * by payload key, the least recently used dropped first, up to 64 MB in all. A key is the
 * digest of the value's JSON text, so a value found here is the one any store holds under it:
 * a chat's image is fetched, checked and decoded once, not again for every later message of
 * the chat (each of which reads the conversation back).
 */
const readValues = new BoundedTexts(64 * 1024 * 1024);

/**
 * The payload keys a read must fetch: those of `keys` whose value is not known already. The
 * known ones go into `known` (key → value), for `restorePayloads`: taken now, so a value that
 * leaves the cache while the read fetches the rest is still there.
 */
export function payloadsToFetch(keys: Iterable<string>, known: Map<string, unknown>): string[] {
  const fetch: string[] = [];
  for (const key of keys) {
    const value = readValues.get(key);
    if (value === undefined) fetch.push(key);
    else known.set(key, value);
  }
  return fetch;
}

function damaged(runId: string, seq: number, problem: string): StoreError {
  return new StoreError(`run ${runId}: event seq ${seq} is damaged: ${problem}`, { runId, retryable: false });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
