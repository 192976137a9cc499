/**
 * The shape every stored event must have to be read back: a type this Quiver knows, and that
 * type's fields of the right JSON types. A row can be valid JSON and still not be an event (a
 * hand edit, a stray program, a bug in a store of one's own): `tool_call_requested` with
 * `"call": 42` was read as it was, and resume, `decide` and `quiver runs show` went wrong with it
 * in silence. A read reports such a row as a `StoreError` naming the run and seq instead.
 *
 * The table is written by hand, per type, and checks only what readers rely on: required
 * fields present with their JSON type, optional ones of their type when present; values the
 * run only carries (a call's `args`, a tool's `details`, a run's `output`) are not looked into.
 * About 0.1 µs per event.
 */
import type { RunEventType } from "../contract/events.js";
import { StoreError } from "./types.js";

/** One field's check, and what the field must be, in words for the error. */
type Check = { test: (value: unknown) => boolean; what: string };

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const STRING: Check = { test: (v) => typeof v === "string", what: "a string" };
const NUMBER: Check = { test: (v) => typeof v === "number", what: "a number" };
const BOOLEAN: Check = { test: (v) => typeof v === "boolean", what: "true or false" };
const OBJECT: Check = { test: isRecord, what: "an object" };
const STRINGS: Check = {
  test: (v) => Array.isArray(v) && v.every((item) => typeof item === "string"),
  what: "an array of strings",
};

const isCall = (v: unknown): boolean => isRecord(v) && typeof v.id === "string" && typeof v.name === "string";
const CALL: Check = { test: isCall, what: "a tool call ({ id, name, args })" };
const CALLS: Check = { test: (v) => Array.isArray(v) && v.every(isCall), what: "an array of tool calls" };

const isContent = (v: unknown): boolean =>
  typeof v === "string" ||
  (Array.isArray(v) && v.every((block) => isRecord(block) && typeof block.type === "string"));
const CONTENT: Check = { test: isContent, what: "an array of content blocks ({ type, … })" };

const ROLES = new Set(["system", "user", "assistant", "tool"]);
const isMessage = (v: unknown): boolean =>
  isRecord(v) &&
  typeof v.role === "string" &&
  ROLES.has(v.role) &&
  isContent(v.content) &&
  (v.role !== "assistant" || v.toolCalls === undefined || CALLS.test(v.toolCalls)) &&
  (v.role !== "tool" || typeof v.toolCallId === "string");
const MESSAGE: Check = { test: isMessage, what: "a message ({ role, content })" };
const MESSAGES: Check = { test: (v) => Array.isArray(v) && v.every(isMessage), what: "an array of messages" };

const CALL_ERROR: Check = {
  test: (v) => isRecord(v) && typeof v.kind === "string" && typeof v.message === "string",
  what: "a call error ({ kind, message })",
};
const ARRAY: Check = { test: Array.isArray, what: "an array" };
const SUMMARY: Check = {
  test: (v) => isRecord(v) && typeof v.text === "string" && typeof v.messages === "number",
  what: "a summary ({ text, messages })",
};

function oneOf(...values: string[]): Check {
  return {
    test: (v) => values.includes(v as string),
    what: values.map((v) => JSON.stringify(v)).join(" or "),
  };
}

/** A type's fields: `name` is required, `name?` checked only when present. */
type Fields = Record<string, Check>;

/**
 * Every event type's fields (beside the base fields every event has). Keyed by the union's
 * types, so an event type added to src/contract/events.ts does not compile until it is here.
 */
const SHAPES: Record<RunEventType, Fields> = {
  run_started: {
    input: MESSAGES,
    "sessionId?": STRING,
    "userId?": STRING,
    "parentCallId?": STRING,
    "traceparent?": STRING,
    "history?": NUMBER,
  },
  turn_started: { turn: NUMBER, "model?": STRING },
  text_delta: { delta: STRING },
  reasoning_delta: { delta: STRING },
  message: { message: MESSAGE, "queuedSeq?": NUMBER },
  message_queued: { message: MESSAGE, delivery: oneOf("inject", "followUp") },
  tool_call_requested: { call: CALL, index: NUMBER, "repairs?": STRINGS },
  tool_call_input_delta: { index: NUMBER, callId: STRING, "name?": STRING, delta: STRING },
  approval_required: { call: CALL, "reason?": STRING, "description?": STRING },
  approval_resolved: { call: CALL, decision: oneOf("approved", "denied"), by: STRING, "reason?": STRING },
  run_tainted: { source: STRING, "call?": CALL },
  tool_call_started: { call: CALL, attempt: NUMBER },
  tool_call_update: { call: CALL },
  state_updated: { "call?": CALL },
  tool_call_retry: { call: CALL, attempt: NUMBER, delayMs: NUMBER, error: CALL_ERROR },
  tool_call_completed: {
    call: CALL,
    ok: BOOLEAN,
    output: STRING,
    durationMs: NUMBER,
    "error?": CALL_ERROR,
    "truncated?": OBJECT,
    "content?": CONTENT,
  },
  handoff: { from: STRING, to: STRING, "call?": CALL, "transcript?": MESSAGES },
  usage: { usage: OBJECT, total: OBJECT, "model?": STRING, "source?": STRING },
  warning: { message: STRING, "code?": STRING },
  compaction: {
    elided: ARRAY,
    tokensBefore: NUMBER,
    tokensAfter: NUMBER,
    maxInputTokens: NUMBER,
    "summary?": SUMMARY,
  },
  turn_completed: { turn: NUMBER, "finish?": STRING, "usage?": OBJECT, "model?": STRING },
  model_fallback: { from: STRING, to: STRING, reason: STRING, turn: NUMBER },
  guardrail_passed: { guardrail: STRING, stage: STRING, durationMs: NUMBER, "callId?": STRING },
  guardrail_tripped: {
    guardrail: STRING,
    stage: STRING,
    reason: STRING,
    durationMs: NUMBER,
    "callId?": STRING,
  },
  run_completed: { stopReason: STRING, usage: OBJECT },
  run_parked: { pending: CALLS },
  run_resumed: { fromSeq: NUMBER, "traceparent?": STRING },
  run_failed: { name: STRING, message: STRING, kind: STRING },
};

/** The base fields beside `type`, `runId`, `seq`, `at` and `agent` (checked as a row is decoded). */
const BASE: Fields = { "path?": STRINGS, "parentRunId?": STRING, "parentCallId?": STRING };

type Field = { name: string; required: boolean; check: Check };

/** The table as flat lists, made once: a read checks every event. */
const FIELDS = new Map<string, Field[]>(
  Object.entries(SHAPES).map(([type, fields]) => [type, toFields({ ...BASE, ...fields })]),
);

function toFields(fields: Fields): Field[] {
  return Object.entries(fields).map(([key, check]) => {
    const required = !key.endsWith("?");
    return { name: required ? key : key.slice(0, -1), required, check };
  });
}

/**
 * Throws a `StoreError` naming the run and seq when `event` (decoded, its payloads back in
 * place) is not of a type this Quiver knows or lacks a field of that type's shape.
 *
 * An unknown type is refused too, not passed on: an event type comes with a meaning for the
 * reader (a `message_queued` must be delivered on resume), and a log read without it would be
 * rebuilt wrong, repeating or dropping what the run did. Such a log was written by a newer
 * Quiver; the error says so, and a process of that version reads it.
 *
 * @example
 * checkEventShape("run_1", { type: "tool_call_requested", runId: "run_1", seq: 4, at: 1, agent: "a", call: 42, index: 0 });
 * // StoreError: run run_1: event seq 4 (tool_call_requested) is damaged: its `call` is 42, not a tool call ({ id, name, args })
 */
export function checkEventShape(runId: string, event: { type: string; seq: number }): void {
  const fields = FIELDS.get(event.type);
  if (fields === undefined) {
    throw new StoreError(
      `run ${runId}: event seq ${event.seq} has type ${JSON.stringify(event.type)}, which this Quiver does not know: ` +
        "it was written by a newer Quiver; read and resume the run with that version (or a later one)",
      { runId, retryable: false },
    );
  }
  const record = event as unknown as Record<string, unknown>;
  for (const field of fields) {
    const value = record[field.name];
    if (value === undefined ? !field.required : field.check.test(value)) continue;
    const found = value === undefined ? "missing" : `${describe(value)}, not ${field.check.what}`;
    throw new StoreError(
      `run ${runId}: event seq ${event.seq} (${event.type}) is damaged: its \`${field.name}\` is ${found}`,
      { runId, retryable: false },
    );
  }
}

/** A value as an error shows it: short, whatever it is. */
function describe(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    // A value JSON.parse made is always JSON.
  }
  if (text === undefined) return typeof value;
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}
