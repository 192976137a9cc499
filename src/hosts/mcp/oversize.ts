// A message larger than `maxResultBytes` is never parsed: the transports skip it as it
// streams in, and answer the request it belonged to with an error of their own making, so
// the call fails at once, clearly, and the connection stays up (nothing is resent).
import { randomUUID } from "node:crypto";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/** Default for `maxResultBytes`: 16 MiB, room for a few large images. */
export const DEFAULT_MAX_RESULT_BYTES = 16 * 1024 * 1024;

/**
 * Marks the errors the transports make up. Random per process: a server cannot forge one
 * (and if it sent something like it, the worst outcome is a call not being repeated).
 */
const MARK = randomUUID();

/** JSON-RPC's range for implementation-defined errors; the mark, not the code, identifies ours. */
const CODE = -32_099;

export type Oversize = { bytes: number; limit: number };

/** The response a transport delivers in place of an oversized one for request `id`. */
export function oversizeResponse(id: string | number, bytes: number, limit: number): JSONRPCMessage {
  return {
    jsonrpc: "2.0",
    id,
    error: {
      code: CODE,
      message: `the answer is larger than ${limit} bytes`,
      data: { oversize: MARK, bytes, limit },
    },
  };
}

/** The sizes, when `error` is the SDK's rejection for a response a transport dropped as too large. */
export function oversizeOf(error: unknown): Oversize | undefined {
  const data = (error as { data?: { oversize?: unknown; bytes?: unknown; limit?: unknown } } | null)?.data;
  if (data?.oversize !== MARK) return undefined;
  return { bytes: Number(data.bytes), limit: Number(data.limit) };
}

/** `"id": 12` or `"id": "abc"` as the first key after `"jsonrpc"`, or as the last key of the message. */
const HEAD_ID = /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")/;
const TAIL_ID = /"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")\s*\}\s*$/;
const HEAD_METHOD = /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"method"\s*:/;

/**
 * Which awaited request an oversized message answered, from the only parts of it that were
 * kept: its first and last bytes. The id is found where serialisers put it (first, or last,
 * at the top level, where a nested `"id"` cannot be); failing that, it answers the one
 * request awaited, if there is exactly one.
 * Undefined when it cannot be told: the request then fails at its timeout.
 */
export function oversizeTarget(
  head: string,
  tail: string,
  awaiting: ReadonlySet<string | number>,
): string | number | undefined {
  // A request or notification from the server (they lead with their method) answers nothing.
  if (HEAD_METHOD.test(head)) return undefined;
  const match = HEAD_ID.exec(head) ?? TAIL_ID.exec(tail);
  if (match) {
    const raw = match[1]!;
    let id: string | number;
    try {
      id = raw.startsWith('"') ? (JSON.parse(raw) as string) : Number(raw);
    } catch {
      return undefined;
    }
    return awaiting.has(id) ? id : undefined;
  }
  return awaiting.size === 1 ? [...awaiting][0] : undefined;
}
