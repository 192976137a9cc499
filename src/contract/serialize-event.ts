import { toPlainJson } from "../plain-json.js";
import type { RunEvent } from "./events.js";

/**
 * The JSON text a wire or a file gets for an event: live-only fields (`result` on
 * `tool_call_completed`; `approve` / `reject`, which are non-enumerable anyway) are dropped,
 * and values JSON cannot hold (bigints, cycles, Maps, throwing getters or `toJSON`s inside a
 * tool's `details` or arguments) are turned into plain JSON the way tool results are.
 * It never throws: an event that defeats even that becomes its base fields plus `unserializable`.
 *
 * @example
 * for await (const ev of handle) socket.send(serializeEvent(ev));
 */
export function serializeEvent(event: RunEvent): string {
  try {
    // The common case: plain data. A shallow copy drops the live value (JSON skips an
    // undefined field); a replacer would do the same at twice the cost, paid on every event
    // a store writes.
    return "result" in event ? JSON.stringify({ ...event, result: undefined }) : JSON.stringify(event);
  } catch {
    // A bigint, a cycle or a throwing getter somewhere: take the slow, total path.
  }
  try {
    const plain = toPlainJson(event) as Record<string, unknown>;
    if (plain && typeof plain === "object") {
      delete plain.result;
      return JSON.stringify(plain);
    }
  } catch {
    // Even the total walk failed (a hostile Proxy): fall back to what is certainly plain.
  }
  return JSON.stringify({
    type: String(safeRead(event, "type")),
    runId: String(safeRead(event, "runId")),
    seq: Number(safeRead(event, "seq")) || 0,
    at: Number(safeRead(event, "at")) || 0,
    agent: String(safeRead(event, "agent")),
    unserializable: true,
  });
}

function safeRead(value: object, key: string): unknown {
  try {
    return (value as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}
